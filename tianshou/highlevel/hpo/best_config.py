"""The best configuration of a search as a JSON file that scripts and builders load.

The file holds the algorithm's name and the hyper-parameters named like the options of the
``*_hl.py`` scripts, e.g.::

    {"format": "tianshou-hpo-best-config/1", "algorithm": "PPO",
     "hyperparameters": {"lr": 0.0007, "gamma": 0.98, "hidden_sizes": [64, 64]}, ...}

so that ``python examples/mujoco/mujoco_ppo_hl.py --config-file best_config.json`` runs it
(options given on the command line win), and a program configures a builder with
``binding_of(config.algorithm).configure(builder, config.hyperparameters)`` or with
:meth:`BestConfiguration.configure`. It is plain JSON, never a pickle, so loading it runs no code.
"""

import json
import os
from dataclasses import dataclass, field
from typing import Any

from tianshou.highlevel.config import TrainingConfig
from tianshou.highlevel.hpo.binding import HIDDEN_SIZES, TBuilder, binding_of
from tianshou.highlevel.params.algorithm_params import Params

FORMAT = "tianshou-hpo-best-config/1"
"""The format tag of the file; a file with another tag is refused."""


@dataclass
class BestConfiguration:
    """The chosen configuration of a search.

    :param algorithm: the algorithm's name (its binding's
        :attr:`~tianshou.highlevel.hpo.binding.AlgorithmBinding.name`, e.g. ``"PPO"``).
    :param hyperparameters: the values, by script option name.
    :param trial_number: the trial that found it.
    :param chosen_by: ``"reevaluation"`` (best on fresh seeds) or ``"search"``.
    :param score: its score (IQM and interval) on the seeds it was chosen by.
    """

    algorithm: str
    hyperparameters: dict[str, Any]
    trial_number: int
    chosen_by: str
    score: dict[str, float] = field(default_factory=dict)

    def save(self, path: str) -> None:
        """Write the configuration as JSON to ``path`` (its directory is created)."""
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        content = {"format": FORMAT, **vars(self)}
        content["hyperparameters"] = {
            k: list(v) if isinstance(v, tuple) else v for k, v in self.hyperparameters.items()
        }
        with open(path, "w") as f:
            json.dump(content, f, indent=2)

    @classmethod
    def load(cls, path: str) -> "BestConfiguration":
        """Read a file written by :meth:`save`.

        :raises ValueError: if the file is not such a configuration.
        """
        with open(path) as f:
            content = json.load(f)
        if not isinstance(content, dict) or content.get("format") != FORMAT:
            raise ValueError(f"{path} is not a best-configuration file (format {FORMAT!r})")
        content.pop("format")
        config = cls(**content)
        if HIDDEN_SIZES in config.hyperparameters:
            config.hyperparameters[HIDDEN_SIZES] = tuple(config.hyperparameters[HIDDEN_SIZES])
        return config

    def configure(
        self,
        builder: TBuilder,
        params: Params | None = None,
        training_config: TrainingConfig | None = None,
    ) -> TBuilder:
        """Configure ``builder`` (of this configuration's algorithm) with the values.

        :param builder: the builder.
        :param params: the parameters the values change (None: the defaults).
        :param training_config: the training config the values change (None: the defaults).
        """
        return binding_of(self.algorithm).configure(
            builder, self.hyperparameters, params, training_config
        )


def load_best_params(path: str) -> dict[str, Any]:
    """The hyper-parameters saved in ``path``, by script option name (``hidden_sizes`` as a
    tuple): keyword arguments for a ``*_hl.py`` script's ``main`` or values for
    :meth:`~tianshou.highlevel.hpo.binding.AlgorithmBinding.configure`."""
    return BestConfiguration.load(path).hyperparameters
