"""The objective of a seed-robust search: a trial's score is the IQM over several seeds of the
final test returns, not the return of one lucky seed.

Each trial samples the search space, runs the configuration on the *search seeds* (the
template's seed and the following ones, the same for every trial, so that trials differ only in
their hyper-parameters) and returns the IQM of the seeds' test returns after the last epoch.
After every epoch it reports the IQM over the seeds of that epoch's test returns (Optuna step =
epoch), so that a pruner compares trials at equal training budgets; in lockstep mode (the
sequential launcher) a pruned trial stops all its seeds there.

What a trial stores (``trial.user_attrs``), read back by the re-evaluation and the report:
``hyperparameters`` (the values, JSON-ready), ``seeds``, ``test_returns`` (seeds x epochs run),
and for a complete trial ``score`` (IQM with confidence interval of the final returns).
"""

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from tianshou.highlevel.hpo._optuna import import_optuna
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.score import iqm, iqm_with_interval
from tianshou.highlevel.hpo.seed_runs import SeedRunner
from tianshou.highlevel.hpo.space import SearchSpace

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)


def to_json_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with tuples (e.g. ``hidden_sizes``) as lists, as JSON and Optuna store them."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()}


class SeedRobustObjective:
    """Scores a trial's configuration by the IQM over ``num_seeds`` seeds of the final test
    returns, reporting per-epoch IQMs for pruning.

    :param template: the experiment that trials vary.
    :param space: the hyper-parameters to sample.
    :param num_seeds: seeds per trial (at least 1; several make the score robust).
    :param seed_runner: how the seeds run (default: sequentially, in lockstep).
    """

    def __init__(
        self,
        template: ExperimentTemplate,
        space: SearchSpace,
        num_seeds: int,
        seed_runner: SeedRunner | None = None,
    ) -> None:
        if num_seeds < 1:
            raise ValueError(f"num_seeds must be at least 1, got {num_seeds}")
        template.binding.check_names(space.names)
        self.template = template
        self.space = space
        self.num_seeds = num_seeds
        self.seed_runner = seed_runner if seed_runner is not None else SeedRunner()

    @property
    def search_seeds(self) -> list[int]:
        """The seeds every trial runs on."""
        first = self.template.experiment_config.seed
        return list(range(first, first + self.num_seeds))

    def __call__(self, trial: "optuna.Trial") -> float:
        optuna = import_optuna()
        values = self.space.sample(trial)
        trial.set_user_attr("hyperparameters", to_json_values(values))
        trial.set_user_attr("seeds", self.search_seeds)
        experiments = self.template.seeded_experiments(
            values, self.search_seeds[0], self.num_seeds, f"trial_{trial.number}"
        )
        returns_so_far: list[np.ndarray] = []

        def on_epoch(epoch: int, returns_S: np.ndarray) -> None:
            returns_so_far.append(returns_S)
            trial.report(iqm(returns_S), epoch)
            if self.seed_runner.reports_during_training and trial.should_prune():
                trial.set_user_attr("test_returns", np.stack(returns_so_far, axis=1).tolist())
                raise optuna.TrialPruned(f"pruned after epoch {epoch}")

        returns_SE = self.seed_runner.run(experiments, on_epoch)
        score = iqm_with_interval(returns_SE[:, -1])
        trial.set_user_attr("test_returns", returns_SE.tolist())
        trial.set_user_attr("score", score.to_dict())
        log.info(f"Trial {trial.number}: IQM of final test returns {score} with {values}")
        return score.iqm
