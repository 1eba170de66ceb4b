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

from tianshou.evaluation.interval_estimates import iqm
from tianshou.highlevel.config import TrainingConfig
from tianshou.highlevel.hpo._optuna import import_optuna
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate, epoch_env_steps
from tianshou.highlevel.hpo.score import ScoreWithInterval
from tianshou.highlevel.hpo.seed_runs import SeedRunner
from tianshou.highlevel.hpo.space import SearchSpace, format_hyperparameters
from tianshou.utils.progress_bar import progress_bar

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
    :param show_progress: show one progress bar per trial (its epochs over all seeds, with
        the IQM so far), labelled with the trial's number.
    """

    def __init__(
        self,
        template: ExperimentTemplate,
        space: SearchSpace,
        num_seeds: int,
        seed_runner: SeedRunner | None = None,
        show_progress: bool = False,
    ) -> None:
        if num_seeds < 1:
            raise ValueError(f"num_seeds must be at least 1, got {num_seeds}")
        template.binding.check_names(space.names)
        self.template = template
        self.space = space
        self.num_seeds = num_seeds
        self.seed_runner = seed_runner if seed_runner is not None else SeedRunner()
        self.show_progress = show_progress
        self._warned_epoch_lengths: set[tuple[int, int]] = set()

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
        training = self.template.trial_training_config(values)
        self._warn_if_epochs_grow(training)
        experiments = self.template.seeded_experiments(
            values, self.search_seeds[0], self.num_seeds, f"trial_{trial.number}"
        )
        returns_so_far: list[np.ndarray] = []
        with self._progress_bar(trial.number, training.max_epochs) as bar:

            def on_epoch(epoch: int, returns_S: np.ndarray) -> None:
                returns_so_far.append(returns_S)
                epoch_iqm = iqm(returns_S)
                bar.update(1)
                bar.set_postfix({"IQM": f"{epoch_iqm:.2f}"})
                trial.report(epoch_iqm, epoch)
                if self.seed_runner.reports_during_training and trial.should_prune():
                    returns = np.stack(returns_so_far, axis=1).tolist()
                    trial.set_user_attr("test_returns", returns)
                    log.info(f"Trial {trial.number}: pruned after epoch {epoch}")
                    raise optuna.TrialPruned(f"pruned after epoch {epoch}")

            returns_SE = self.seed_runner.run(experiments, on_epoch)
        score = ScoreWithInterval.of_returns(returns_SE[:, -1])
        trial.set_user_attr("test_returns", returns_SE.tolist())
        trial.set_user_attr("score", score.to_dict())
        log.info(
            f"Trial {trial.number}: IQM of final test returns {score} with "
            f"{format_hyperparameters(values)}"
        )
        return score.iqm

    def _progress_bar(self, trial_number: int, epochs: int) -> Any:
        return progress_bar(
            self.show_progress,
            epochs,
            desc=f"trial {trial_number} ({self.num_seeds} seeds)",
            unit="epoch",
        )

    def _warn_if_epochs_grow(self, training: TrainingConfig) -> None:
        """Say (once per length) when a trial's epochs are longer than ``epoch_num_steps``
        because its collection steps do not divide it, e.g. a tuned collection size above the
        epoch length."""
        steps = epoch_env_steps(training)
        key = (training.epoch_num_steps, steps)
        if steps != training.epoch_num_steps and key not in self._warned_epoch_lengths:
            self._warned_epoch_lengths.add(key)
            log.warning(
                f"epoch_num_steps={training.epoch_num_steps} is rounded up to {steps} env steps "
                f"per epoch: an epoch consists of whole collection steps of "
                f"collection_step_num_env_steps={training.collection_step_num_env_steps} "
                f"(over {training.num_training_envs} training envs)"
            )
