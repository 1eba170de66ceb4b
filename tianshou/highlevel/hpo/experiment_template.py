"""The experiment a search varies: everything but the tuned hyper-parameters and the seed."""

import dataclasses
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tianshou.highlevel.config import TrainingConfig
from tianshou.highlevel.env import EnvFactory
from tianshou.highlevel.experiment import Experiment, ExperimentConfig
from tianshou.highlevel.experiment_builders import AlgorithmExperimentBuilder
from tianshou.highlevel.hpo.binding import AlgorithmBinding
from tianshou.highlevel.params.algorithm_params import Params

BuilderCustomization = Callable[[AlgorithmExperimentBuilder], AlgorithmExperimentBuilder]
"""Applies settings a search does not vary to a builder (e.g. activations, callbacks) and
returns it; it is called after the tuned values are set."""


@dataclass
class ExperimentTemplate:
    """The base experiment of a search; each trial changes only the tuned values and seeds.

    :param binding: how values configure the algorithm's builder.
    :param env_factory: builds the envs.
    :param experiment_config: how runs run; its ``seed`` is the first search seed (seed ``i``
        of a trial is ``seed + i``). Runs never watch the agent.
    :param training_config: the training settings the tuned values change (its
        ``max_epochs`` is the budget of a trial, and each epoch ends with the test whose
        returns are scored); None: the binding's defaults.
    :param params: the algorithm parameters the tuned values change; None: the defaults.
    :param customize: applies fixed settings to every trial's builder (None: none).
    :param persistence_name: the directory below ``experiment_config.persistence_base_dir``
        under which the runs write (``<name>/<run>/seed=<seed>``), if persistence is enabled.
    :param show_run_progress: show each run's epoch progress bars (off by default: the seeds
        of a trial run side by side, and their bars would interleave; the search shows one
        bar per trial instead).
    """

    binding: AlgorithmBinding
    env_factory: EnvFactory
    experiment_config: ExperimentConfig
    training_config: TrainingConfig | None = None
    params: Params | None = None
    customize: BuilderCustomization | None = None
    persistence_name: str = "hpo"
    show_run_progress: bool = False

    def __post_init__(self) -> None:
        if self.training_config is not None and self.training_config.num_test_envs < 1:
            raise ValueError(
                "a search scores configurations by their test returns: the training config "
                "needs num_test_envs >= 1"
            )

    def builder(
        self, values: Mapping[str, Any], seed: int | None = None
    ) -> AlgorithmExperimentBuilder:
        """A builder of the template configured with ``values``.

        :param values: the hyper-parameters, by name.
        :param seed: the seed of the (first) run; None: the template's.
        """
        builder = self.binding.builder_class(self.env_factory)
        seed = self.experiment_config.seed if seed is None else seed
        builder.experiment_config(
            dataclasses.replace(self.experiment_config, seed=seed, watch=False)
        )
        training = self.training_config or self.binding.training_config_class()
        training = dataclasses.replace(training, show_progress=self.show_run_progress)
        self.binding.configure(builder, values, self.params, training)
        if self.customize is not None:
            builder = self.customize(builder)
        return builder

    def seeded_experiments(
        self, values: Mapping[str, Any], first_seed: int, num_seeds: int, run_name: str
    ) -> list[Experiment]:
        """The experiments of ``values`` with seeds ``first_seed, first_seed + 1, ...``, named
        ``<persistence_name>/<run_name>/seed=<seed>``.

        :param values: the hyper-parameters.
        :param first_seed: the first seed.
        :param num_seeds: how many seeds.
        :param run_name: tells the runs of this configuration apart (e.g. ``trial_3``).
        """
        builder = self.builder(values, first_seed)
        name = os.path.join(self.persistence_name, run_name)
        return builder.with_name(name).build_seeded_collection(num_seeds).experiments

    def trial_training_config(self, values: Mapping[str, Any]) -> TrainingConfig:
        """The training config the runs of ``values`` train with (the tuned values applied)."""
        training = self.training_config or self.binding.training_config_class()
        return dataclasses.replace(training, **self.binding.training_updates(values))


def epoch_env_steps(config: TrainingConfig) -> int:
    """The env steps an epoch of ``config`` really collects: ``epoch_num_steps`` rounded up to
    whole collection steps, each of which every training env takes an equal share of.

    Equal to ``epoch_num_steps`` for configs that collect whole episodes.
    """
    collect = config.collection_step_num_env_steps
    if collect is None:
        return config.epoch_num_steps
    envs = config.num_training_envs
    per_collection = -(-collect // envs) * envs
    return -(-config.epoch_num_steps // per_collection) * per_collection
