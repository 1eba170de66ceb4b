"""What running experiments returns: one run's result, and the per-seed results of
:meth:`~tianshou.highlevel.experiment.ExperimentBuilder.build_and_run`.

Both are importable from :mod:`tianshou.highlevel.experiment` as well, where the published
library defines :class:`ExperimentResult`.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tianshou.data import InfoStats
from tianshou.highlevel.world import World


@dataclass(frozen=True)
class RunRecord:
    """What one run of :meth:`~tianshou.highlevel.experiment.ExperimentBuilder.build_and_run`
    was and where it wrote its files, for reports made after the runs ended (possibly in other
    processes).

    :param seed: the run's seed.
    :param algorithm: the algorithm's name, e.g. ``"PPO"`` or ``"DiscreteSAC"``.
    :param directory: the run directory (log, saved policy); None when persistence was off.
    """

    seed: int
    algorithm: str
    directory: str | None


@dataclass
class ExperimentResult:
    """What a run of an experiment produced.

    :param world: the envs, collectors, logger and trainer of the run.
    :param trainer_result: what training returned; None if the run did not train.
    """

    world: World
    trainer_result: InfoStats | None


_WORLD_IN_WORKERS = (
    "this run trained on Ray Train workers, whose worlds stayed in their processes: only rank "
    "0's trainer_result came back"
)


class WorkersRunResult(ExperimentResult):
    """What a run trained by Ray Train workers returns in the driver that launched them: rank
    0's training result. The world (envs, algorithm, trainer) lives and ends in the workers, so
    :attr:`world` raises an AttributeError saying so.

    :param trainer_result: what training returned on rank 0; None if the run did not train.
    """

    def __init__(self, trainer_result: InfoStats | None) -> None:
        self.trainer_result = trainer_result

    def __getattr__(self, name: str) -> World:
        if name == "world":
            raise AttributeError(_WORLD_IN_WORKERS)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(trainer_result={self.trainer_result!r})"


class SeedResults(list[InfoStats | None]):
    """What :meth:`~tianshou.highlevel.experiment.ExperimentBuilder.build_and_run` returns,
    whatever the number of experiments: the training results of its runs in seed order (None
    for a run that did not train), as a list.

    Code written for either of the two return types of the published library keeps working:
    the results index, iterate and compare like the list returned for several experiments, and
    the result of a single experiment also has the :attr:`trainer_result` and :attr:`world` of
    the :class:`ExperimentResult` returned for one, and is an instance of it (so that
    ``isinstance(result, ExperimentResult)`` still tells a single run from several).

    >>> results = SeedResults([None, None])
    >>> len(results), results == [None, None]
    (2, True)

    :param trainer_results: what each run's training returned, in seed order.
    :param world: the world of the run when there is exactly one and it ran in this process;
        the worlds of several runs stay in the launcher's processes.
    :param runs: what each run was and where it wrote, in the order of ``trainer_results``;
        empty if not known.
    """

    def __init__(
        self,
        trainer_results: Iterable[InfoStats | None],
        world: World | None = None,
        runs: Sequence[RunRecord] = (),
    ) -> None:
        super().__init__(trainer_results)
        if world is not None and len(self) != 1:
            raise ValueError(f"a world belongs to a single run, but there are {len(self)} results")
        if runs and len(runs) != len(self):
            raise ValueError(f"{len(runs)} run records for {len(self)} results")
        self._world = world
        self.runs: tuple[RunRecord, ...] = tuple(runs)

    @staticmethod
    def of_single_run(result: ExperimentResult, run: RunRecord | None = None) -> "SeedResults":
        """The results of one experiment run in this process: a list of one training result,
        which is also an :class:`ExperimentResult` with the run's world.

        :param result: what :meth:`~tianshou.highlevel.experiment.Experiment.run` returned.
        :param run: what the run was and where it wrote; None if not known.
        """
        world = None if isinstance(result, WorkersRunResult) else result.world
        return _SingleRunResults([result.trainer_result], world, runs=() if run is None else (run,))

    @property
    def trainer_result(self) -> InfoStats | None:
        """What training returned, for a single run (as in :class:`ExperimentResult`); an
        AttributeError for several, as the list returned for them has no such attribute.
        """
        if len(self) != 1:
            raise AttributeError(
                f"trainer_result is the result of a single run, but these are the results of "
                f"{len(self)} runs: index or iterate over them instead"
            )
        return self[0]

    @property
    def world(self) -> World:
        """The run's world, for a single run (as in :class:`ExperimentResult`); an
        AttributeError for several runs.
        """
        if self._world is None:
            raise AttributeError(
                f"only a single experiment (num_experiments=1) keeps its world, but these are "
                f"the results of {len(self)} runs, whose worlds stayed in the launcher"
            )
        return self._world

    def __repr__(self) -> str:
        return f"SeedResults({list.__repr__(self)})"


# mypy flags the read-only properties against the (writable) dataclass fields
class _SingleRunResults(SeedResults, ExperimentResult):  # type: ignore[override]
    """The results of a single experiment: a :class:`SeedResults` that is also an
    :class:`ExperimentResult`, its fields answered by :class:`SeedResults`' properties.
    """

    @property
    def world(self) -> World:  # type: ignore[override]  # as above
        """The run's world; an AttributeError for a run trained on Ray Train workers (a
        :class:`WorkersRunResult`), whose world stayed in them."""
        if self._world is None:
            raise AttributeError(_WORLD_IN_WORKERS)
        return self._world
