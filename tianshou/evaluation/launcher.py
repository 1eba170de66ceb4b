"""Launchers run a collection of experiments (e.g. one per seed) one after another, in parallel
processes (joblib) or as Ray tasks, and return their results in the order the experiments were
given.

An experiment that raises does not stop the others: every launcher first runs all experiments,
then raises one :class:`ExperimentsFailedError` that names each failed experiment with its
traceback and carries the results of the experiments that succeeded.

Experiments are duck-typed (see :class:`LaunchableExperiment`): anything with a ``name``, a
``config`` holding ``persistence_base_dir`` and a ``run(...)`` method works, in particular
:class:`tianshou.highlevel.experiment.Experiment`. The parallel launchers send experiments to
other processes, so experiments (and a custom ``experiment_runner``) must be picklable.
"""

import logging
import os
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from tianshou.data import InfoStats
from tianshou.evaluation.ray_tasks import pack_dir, ray_connection, run_tasks, unpack_dir

log = logging.getLogger(__name__)


class LaunchableExperiment(Protocol):
    """What a launcher needs from an experiment."""

    name: str
    config: Any
    """The experiment's configuration; its ``persistence_base_dir`` joined with ``name`` is the
    directory the experiment writes to."""

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run the experiment; the default runner passes ``raise_error_on_dirname_collision``."""


ExperimentRunner = Callable[[Any], InfoStats | None]
"""Runs one experiment and returns what its trainer returned (None if it did not train)."""


def default_experiment_execution(exp: LaunchableExperiment) -> InfoStats | None:
    """Run ``exp`` and return its trainer's result.

    A directory left by an earlier run of the same experiment is reused rather than being an
    error, so that a collection can be re-launched after some of its experiments failed.

    :param exp: the experiment to run.
    """
    result = exp.run(raise_error_on_dirname_collision=False)
    return result.trainer_result


class ExperimentsFailedError(RuntimeError):
    """Raised after a launch in which at least one experiment raised.

    :param failures: the failed experiments' names mapped to their formatted tracebacks.
    :param results: the results of all experiments in launch order, None for the failed ones.
    """

    def __init__(self, failures: dict[str, str], results: list[InfoStats | None]) -> None:
        details = "\n".join(f"--- {name} ---\n{tb}" for name, tb in failures.items())
        super().__init__(
            f"{len(failures)} of {len(results)} experiments failed: {', '.join(failures)}; "
            f"the others completed (their results are in this error's `results`).\n{details}"
        )
        self.failures = failures
        self.results = results


@dataclass
class _Outcome:
    """The result of one experiment, or the traceback of the error it raised."""

    name: str
    result: InfoStats | None = None
    error: str | None = None


def _run_safely(runner: ExperimentRunner, exp: LaunchableExperiment) -> _Outcome:
    """Run ``exp`` with ``runner``, turning an exception into a failed outcome (module-level so
    that worker processes can unpickle it)."""
    try:
        return _Outcome(exp.name, result=runner(exp))
    except Exception:  # reported with the experiment's name by the launcher
        error = traceback.format_exc()
        log.error(f"Experiment {exp.name!r} failed:\n{error}")
        return _Outcome(exp.name, error=error)


class ExpLauncher(ABC):
    """Runs a sequence of experiments and returns their results in the same order.

    :param experiment_runner: runs one experiment and returns its result; the default runs it
        with :func:`default_experiment_execution`.
    """

    def __init__(self, experiment_runner: ExperimentRunner = default_experiment_execution) -> None:
        self.experiment_runner = experiment_runner

    @abstractmethod
    def _launch(self, experiments: Sequence[LaunchableExperiment]) -> list[_Outcome]:
        """Run every experiment (each through :func:`_run_safely`), outcomes in launch order."""

    def get_name(self) -> str:
        """The launcher's name, for logs."""
        return type(self).__name__

    def launch(self, experiments: Sequence[LaunchableExperiment]) -> list[InfoStats | None]:
        """Run all ``experiments`` and return their results in the order given.

        :param experiments: the experiments; their names should be unique, since errors and
            persistence directories are told apart by name.
        :raises ExperimentsFailedError: after all experiments ran, if any of them raised.
        """
        log.info(f"Launching {len(experiments)} experiments with {self.get_name()}")
        outcomes = self._launch(experiments)
        results = [outcome.result for outcome in outcomes]
        failures = {o.name: o.error for o in outcomes if o.error is not None}
        if failures:
            raise ExperimentsFailedError(failures, results)
        return results


class SequentialExpLauncher(ExpLauncher):
    """Runs the experiments one after another in this process (easiest to debug)."""

    def _launch(self, experiments: Sequence[LaunchableExperiment]) -> list[_Outcome]:
        return [_run_safely(self.experiment_runner, exp) for exp in experiments]


@dataclass
class JoblibConfig:
    """How :class:`JoblibExpLauncher` parallelises.

    :param n_jobs: number of parallel workers; -1: one per CPU.
    :param backend: the joblib backend; ``"loky"`` runs each experiment in a separate process
        (the experiments must be picklable), ``"threading"`` in threads of this process.
    :param verbose: joblib's progress verbosity (0: silent).
    """

    n_jobs: int = -1
    backend: str = "loky"
    verbose: int = 10


class JoblibExpLauncher(ExpLauncher):
    """Runs the experiments in parallel with joblib.

    :param joblib_cfg: the parallelisation settings; None: :class:`JoblibConfig` defaults.
    :param experiment_runner: runs one experiment and returns its result.
    """

    def __init__(
        self,
        joblib_cfg: JoblibConfig | None = None,
        experiment_runner: ExperimentRunner = default_experiment_execution,
    ) -> None:
        super().__init__(experiment_runner)
        self.joblib_cfg = joblib_cfg if joblib_cfg is not None else JoblibConfig()

    def _launch(self, experiments: Sequence[LaunchableExperiment]) -> list[_Outcome]:
        from joblib import Parallel, delayed

        cfg = self.joblib_cfg
        parallel = Parallel(n_jobs=cfg.n_jobs, backend=cfg.backend, verbose=cfg.verbose)
        return list(parallel(delayed(_run_safely)(self.experiment_runner, e) for e in experiments))


def _persistence_dir(exp: LaunchableExperiment) -> str:
    """The directory ``exp`` writes its files to."""
    return os.path.abspath(os.path.join(exp.config.persistence_base_dir, exp.name))


def _run_on_ray_worker(
    runner: ExperimentRunner,
    exp: LaunchableExperiment,
    driver_node_id: str | None,
) -> tuple[_Outcome, bytes | None]:
    """Run ``exp`` in a Ray task; if ``driver_node_id`` is given and this task runs on another
    node, also return the experiment's persistence directory as a tar archive."""
    import ray

    outcome = _run_safely(runner, exp)
    directory = _persistence_dir(exp)
    on_other_node = ray.get_runtime_context().get_node_id() != driver_node_id
    if driver_node_id is None or not on_other_node or not os.path.isdir(directory):
        return outcome, None
    return outcome, pack_dir(directory)


class RayExpLauncher(ExpLauncher):
    """Runs each experiment as a Ray task, on this machine or on a Ray cluster.

    Uses the Ray instance this process is already connected to, if any. Otherwise it connects to
    the cluster at ``address`` (or the ``RAY_ADDRESS`` environment variable), or starts a local
    instance with one CPU per core and no dashboard; an instance the launcher started or
    connected to is shut down when the launch ends.

    Each experiment writes to its persistence directory on the node that runs it. On a cluster,
    that path should be on a filesystem all nodes share; without one, the driver still gets every
    experiment's result (the returned ``InfoStats``), and ``gather_persistence_dirs=True`` copies
    each experiment's directory from a remote node back to the same path on the driver (as a tar
    archive through Ray's object store, so only for directories of moderate size).

    :param address: the Ray cluster to connect to (e.g. ``"ray://head:10001"`` or ``"auto"``);
        None: ``RAY_ADDRESS`` if set, else a new local instance.
    :param num_cpus_per_experiment: CPUs Ray reserves per experiment; limits how many run at once.
    :param num_gpus_per_experiment: GPUs (may be fractional) Ray reserves per experiment.
    :param runtime_env: Ray runtime environment (e.g. ``{"working_dir": ".", "pip": [...]}``) so
        that the workers can import the experiments' code.
    :param gather_persistence_dirs: copy the persistence directories of experiments that ran on
        another node back to the driver.
    :param experiment_runner: runs one experiment and returns its result.
    """

    def __init__(
        self,
        address: str | None = None,
        num_cpus_per_experiment: float = 1,
        num_gpus_per_experiment: float = 0,
        runtime_env: dict[str, Any] | None = None,
        gather_persistence_dirs: bool = False,
        experiment_runner: ExperimentRunner = default_experiment_execution,
    ) -> None:
        super().__init__(experiment_runner)
        self.address = address
        self.num_cpus_per_experiment = num_cpus_per_experiment
        self.num_gpus_per_experiment = num_gpus_per_experiment
        self.runtime_env = runtime_env
        self.gather_persistence_dirs = gather_persistence_dirs

    def _launch(self, experiments: Sequence[LaunchableExperiment]) -> list[_Outcome]:
        import ray
        from ray.exceptions import RayError

        outcomes = [_Outcome(exp.name) for exp in experiments]

        def on_done(index: int, done: tuple[_Outcome, bytes | None] | RayError) -> None:
            exp = experiments[index]
            if isinstance(done, RayError):  # Ray could not run the task, e.g. its worker died
                log.error(f"Ray task of experiment {exp.name!r} failed: {done}")
                outcomes[index].error = "".join(traceback.format_exception(done))
                return
            outcomes[index], archive = done
            if archive is not None:
                unpack_dir(archive, _persistence_dir(exp))

        with ray_connection(self.address, runtime_env=self.runtime_env):
            driver_node = (
                ray.get_runtime_context().get_node_id() if self.gather_persistence_dirs else None
            )
            run_tasks(
                _run_on_ray_worker,
                ((self.experiment_runner, exp, driver_node) for exp in experiments),
                on_done,
                num_cpus=self.num_cpus_per_experiment,
                num_gpus=self.num_gpus_per_experiment,
            )
        return outcomes


class RegisteredExpLauncher(Enum):
    """The launchers selectable by name (e.g. from a command line): their values are the
    members' names, and :func:`resolve_launcher` also takes the names as strings in any case."""

    JOBLIB = "JOBLIB"
    SEQUENTIAL = "SEQUENTIAL"
    RAY = "RAY"

    def create_launcher(self) -> ExpLauncher:
        """A launcher of this kind with default settings."""
        match self:
            case RegisteredExpLauncher.JOBLIB:
                return JoblibExpLauncher()
            case RegisteredExpLauncher.SEQUENTIAL:
                return SequentialExpLauncher()
            case RegisteredExpLauncher.RAY:
                return RayExpLauncher()
        raise NotImplementedError(f"no launcher for {self}")


def _registered_launcher_of_name(name: str) -> RegisteredExpLauncher:
    """The registered launcher named ``name`` in any case (``"joblib"``, ``"Sequential"``)."""
    try:
        return RegisteredExpLauncher[name.upper()]
    except KeyError:
        choices = ", ".join(repr(kind.name.lower()) for kind in RegisteredExpLauncher)
        raise ValueError(
            f"unknown launcher {name!r}; choose one of {choices} (any case), or pass a "
            f"RegisteredExpLauncher or an ExpLauncher"
        ) from None


def resolve_launcher(launcher: ExpLauncher | RegisteredExpLauncher | str) -> ExpLauncher:
    """The launcher that ``launcher`` names: an :class:`ExpLauncher` is returned as it is, a
    :class:`RegisteredExpLauncher` or its name (a string in any case, e.g. ``"joblib"``) gives
    that launcher with default settings.

    :param launcher: the launcher, its kind or the kind's name.
    :raises ValueError: for a string naming no registered launcher.
    :raises TypeError: for anything else.
    """
    if isinstance(launcher, ExpLauncher):
        return launcher
    if isinstance(launcher, str):
        launcher = _registered_launcher_of_name(launcher)
    if isinstance(launcher, RegisteredExpLauncher):
        return launcher.create_launcher()
    raise TypeError(
        f"launcher must be an ExpLauncher, a RegisteredExpLauncher or a launcher name, got "
        f"{launcher!r}"
    )
