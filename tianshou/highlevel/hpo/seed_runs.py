"""Running the seeds of one configuration and recording each seed's test return after every
epoch, the data a trial is scored and pruned on.

How the seeds run depends on the launcher:

* ``"sequential"`` (the default) runs the seeds in *lockstep* in this process: epoch 1 of every
  seed, then epoch 2 of every seed, and so on, so that after each epoch the IQM over the seeds
  is known while training goes on, and a pruner can stop all seeds of a weak trial there. Each
  seed keeps its own state of the global random generators (``random``, numpy, torch on the CPU
  and on every CUDA device, :class:`~tianshou.utils.random_states.GlobalRandomStates`) between
  its epochs, so that its run is the same as when it runs alone; the caller's generator states
  are restored at the end. All seeds' envs and buffers are in memory at once.
* any other launcher (``"joblib"``, ``"ray"`` or an :class:`ExpLauncher` instance) runs the
  seeds in parallel as a collection; their per-epoch returns are only known when all finished,
  so pruning cannot stop them early (the scores are still reported, for the pruner's decisions
  about later trials).

A seed that stops before the last epoch (e.g. by a reward-threshold callback) keeps its last
test return for the remaining epochs.
"""

import copy
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from tianshou.data import EpochStats, InfoStats
from tianshou.evaluation.launcher import (
    ExpLauncher,
    RegisteredExpLauncher,
    SequentialExpLauncher,
    resolve_launcher,
)
from tianshou.highlevel.experiment import Experiment
from tianshou.highlevel.world import World
from tianshou.utils.random_states import GlobalRandomStates

EpochCallback = Callable[[int, np.ndarray], None]
"""Called with an epoch (from 1) and the seeds' test returns after it; may raise (e.g.
``optuna.TrialPruned``) to stop the runs."""


@dataclass(kw_only=True)
class InfoStatsWithTestReturns(InfoStats):
    """A run's final counters, plus its mean test return after each epoch.

    :param test_returns: the mean return of the test episodes after each epoch.
    """

    test_returns: list[float] = field(default_factory=list)


def _create_scored_world(experiment: Experiment) -> World:
    """Seed the generators and build ``experiment``'s world, refusing one a search cannot score."""
    world = experiment.create_experiment_world(raise_error_on_dirname_collision=False)
    if world.trainer is None or world.test_collector is None:
        raise ValueError(
            f"experiment {experiment.name!r} has no test collector: a search needs test envs "
            f"(num_test_envs >= 1) to score its runs"
        )
    return world


def _epoch_test_returns(world: World) -> Iterator[tuple[float, EpochStats]]:
    """Train ``world`` epoch by epoch; yield its mean test return and the epoch's statistics
    after each epoch (the last return again after an epoch in which training stopped before
    testing)."""
    assert world.trainer is not None  # checked by _create_scored_world
    last_return = float("nan")
    for epoch_stats in world.trainer:
        test = epoch_stats.test_collect_stat
        if test is not None and test.returns_stat is not None:
            last_return = float(test.returns_stat.mean)
        yield last_return, epoch_stats


def run_recording_test_returns(experiment: Experiment) -> InfoStatsWithTestReturns:
    """Train ``experiment`` and return its counters with its per-epoch test returns (an
    experiment runner for the launchers; module-level, so that worker processes can load it).

    :param experiment: the experiment (it does not watch the agent afterwards).
    """
    epochs = list(_epoch_test_returns(_create_scored_world(experiment)))
    if not epochs:
        raise ValueError(f"experiment {experiment.name!r} trained no epoch (max_epochs=0?)")
    returns = [test_return for test_return, _ in epochs]
    info = epochs[-1][1].info_stat
    return InfoStatsWithTestReturns(**vars(info), test_returns=returns)


def _pad_to_matrix(runs: Sequence[Sequence[float]]) -> np.ndarray:
    """Seeds x epochs; a shorter run's last value fills its remaining epochs."""
    if any(len(r) == 0 for r in runs):
        raise ValueError("a run trained no epoch (max_epochs=0?); a search needs epochs to score")
    num_epochs = max(len(r) for r in runs)
    return np.array([list(r) + [r[-1]] * (num_epochs - len(r)) for r in runs], dtype=float)


class LockstepRun:
    """One seed's run, advanced an epoch at a time under its own states of the global random
    generators, so that runs taking turns in one process each train as they would alone.

    :param experiment: the seed's experiment; its world is built (and the generators seeded)
        by the first :meth:`advance`.
    """

    def __init__(self, experiment: Experiment) -> None:
        self.experiment = experiment
        self.world: World | None = None
        """The run's envs, algorithm and trainer, once the first epoch started."""
        self.returns: list[float] = []
        """The mean test return after each epoch so far."""
        self.epoch_stats: list[EpochStats] = []
        """The statistics of each epoch so far."""
        self.finished = False
        self._epochs: Iterator[tuple[float, EpochStats]] | None = None
        self._random_states: GlobalRandomStates | None = None

    def advance(self) -> None:
        """Run the next epoch, if any, with the generator states the run left last time."""
        if self._random_states is not None:
            self._random_states.restore()
        if self._epochs is None:
            self.world = _create_scored_world(self.experiment)
            self._epochs = _epoch_test_returns(self.world)
        try:
            test_return, epoch_stats = next(self._epochs)
            self.returns.append(test_return)
            self.epoch_stats.append(epoch_stats)
        except StopIteration:
            self.finished = True
        self._random_states = GlobalRandomStates.capture()


def run_in_lockstep(runs: Sequence[LockstepRun], on_epoch: EpochCallback | None = None) -> None:
    """Advance ``runs`` one epoch each in turn until all finished, calling ``on_epoch`` after each
    epoch with the runs' test returns after it; the caller's generator states are restored at
    the end."""
    callers_states = GlobalRandomStates.capture()
    try:
        epoch = 0
        while True:
            for run in runs:
                run.advance()
            if all(run.finished for run in runs):
                return
            epoch += 1
            if on_epoch is not None:
                on_epoch(epoch, _pad_to_matrix([run.returns for run in runs])[:, -1])
    finally:
        callers_states.restore()


class SeedRunner:
    """Runs the seeded experiments of one configuration and returns their per-epoch test
    returns (see the module docstring for how the launcher matters).

    :param launcher: ``"sequential"`` (lockstep in this process, prunable after each epoch),
        or a launcher running the seeds in parallel: a :class:`RegisteredExpLauncher`, its name
        (``"joblib"``, ``"ray"``), or an :class:`ExpLauncher` (whose runner is replaced by one
        that records the test returns).
    """

    def __init__(
        self, launcher: ExpLauncher | RegisteredExpLauncher | str = RegisteredExpLauncher.SEQUENTIAL
    ) -> None:
        resolved = resolve_launcher(launcher)
        self.reports_during_training = isinstance(resolved, SequentialExpLauncher)
        """Whether the epoch callback runs while the seeds train (so pruning saves time)."""
        self._launcher = copy.copy(resolved)
        self._launcher.experiment_runner = run_recording_test_returns

    def run(
        self, experiments: Sequence[Experiment], on_epoch: EpochCallback | None = None
    ) -> np.ndarray:
        """Run ``experiments`` (one per seed) and return their test returns, seeds x epochs.

        :param experiments: the experiments, e.g. of
            :meth:`~tianshou.highlevel.hpo.experiment_template.ExperimentTemplate.seeded_experiments`.
        :param on_epoch: called after each epoch with the seeds' returns after it: during
            training in lockstep mode, else after all seeds finished.
        """
        if not experiments:
            raise ValueError("no experiments to run")
        if self.reports_during_training:
            return self._run_in_lockstep(experiments, on_epoch)
        results = self._launcher.launch(experiments)
        returns = _pad_to_matrix([r.test_returns for r in results])  # type: ignore[union-attr]
        if on_epoch is not None:
            for epoch in range(returns.shape[1]):
                on_epoch(epoch + 1, returns[:, epoch])
        return returns

    @staticmethod
    def _run_in_lockstep(
        experiments: Sequence[Experiment], on_epoch: EpochCallback | None
    ) -> np.ndarray:
        runs = [LockstepRun(e) for e in experiments]
        run_in_lockstep(runs, on_epoch)
        return _pad_to_matrix([run.returns for run in runs])
