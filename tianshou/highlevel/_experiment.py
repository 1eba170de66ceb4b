"""The :class:`Experiment` (with its :class:`ExperimentConfig`) and :class:`ExperimentCollection`.

Published in :mod:`tianshou.highlevel.experiment` (see there for how experiments are built and
where a run writes); the builders, which create experiments, sit in modules layered above this one.
"""

import logging
import os
import pickle
import random
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Literal

import numpy as np
import torch

from tianshou.data import Collector, InfoStats
from tianshou.distributed import (
    DEFAULT_TIMEOUT_S,
    SINGLE_PROCESS,
    RankGroup,
    current_rank_group,
    data_parallel,
    launch_on_ray_train,
)
from tianshou.evaluation.launcher import ExpLauncher, RegisteredExpLauncher, resolve_launcher
from tianshou.highlevel.algorithm import AlgorithmFactory
from tianshou.highlevel.config import (
    TrainingConfig,
)
from tianshou.highlevel.env import EnvFactory, has_display
from tianshou.highlevel.experiment_result import ExperimentResult, WorkersRunResult
from tianshou.highlevel.logger import LoggerFactory, LoggerFactoryDefault, TLogger
from tianshou.highlevel.persistence import (
    PersistenceGroup,
    PolicyPersistence,
    env_state_persistence,
)
from tianshou.highlevel.world import World
from tianshou.utils.logger import LazyLogger
from tianshou.utils.string import ToStringMixin
from tianshou.utils.torch_utils import torch_threads

# logged under the name of the module that publishes the experiment API, as users configure it
log = logging.getLogger("tianshou.highlevel.experiment")


EXPERIMENT_PICKLE_FILENAME = "experiment.pkl"
LOG_FILENAME = "experiment.log"


def _default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class ExperimentConfig:
    """How an experiment runs (as opposed to what it trains: see the training config).

    :param seed: seeds numpy, torch and ``random`` at the start of a run, and (spread over
        them) the envs.
    :param device: where the networks live, e.g. ``"cpu"`` or ``"cuda:0"``; defaults to
        ``"cuda"`` if available.
    :param policy_restore_directory: a run directory whose saved policy parameters are loaded
        before training (to continue from them); None starts from fresh networks.
    :param train: train the agent (False: only restore and/or watch it).
    :param watch: after training, run the agent for ``watch_num_episodes`` episodes in the
        watch env and log the mean return.
    :param watch_num_episodes: episodes run when watching.
    :param watch_render: when watching, render each step and pause this many seconds; 0 turns
        rendering off. Without a display (headless Linux) nothing is rendered.
    :param persistence_base_dir: the directory under which each run gets its directory.
    :param persistence_enabled: write the run directory (logs, policy, the pickled
        experiment); False writes nothing and logs nowhere.
    :param log_file_enabled: copy the log records emitted during a run to ``experiment.log``
        in the run directory (records the logging configuration lets through).
    :param policy_persistence_mode: what is saved of the policy.
    :param data_parallel: train as one rank of a data-parallel job that torchrun started (see
        :mod:`tianshou.distributed`): each rank trains a replica on its own envs, with
        gradients averaged at every step; only rank 0 persists, logs, tests and watches.
    :param data_parallel_timeout_s: how long a rank waits for the others before the job fails.
    :param data_parallel_launcher: who starts the ranks of a data-parallel run: ``"torchrun"``
        (the script is started once per rank), or ``"ray"``: :meth:`Experiment.run` is the
        driver of ``data_parallel_num_workers`` Ray Train workers, each running the experiment
        as one rank, and returns rank 0's training result (the worlds stay in the workers).
        Only with ``data_parallel=True``.
    :param data_parallel_num_workers: the number of ranks of a Ray Train run.
    :param data_parallel_ray_address: the head node (``HOST:PORT``) of the Ray cluster of a Ray
        Train run; None: the cluster ``RAY_ADDRESS`` names, else a local Ray.
    """

    seed: int = 42
    device: str | torch.device = field(default_factory=_default_device)
    policy_restore_directory: str | None = None
    train: bool = True
    watch: bool = True
    watch_num_episodes: int = 10
    watch_render: float = 0.0
    persistence_base_dir: str = "log"
    persistence_enabled: bool = True
    log_file_enabled: bool = True
    policy_persistence_mode: PolicyPersistence.Mode = PolicyPersistence.Mode.POLICY
    data_parallel: bool = False
    data_parallel_timeout_s: float = DEFAULT_TIMEOUT_S
    data_parallel_launcher: Literal["torchrun", "ray"] = "torchrun"
    data_parallel_num_workers: int = 2
    data_parallel_ray_address: str | None = None

    def __post_init__(self) -> None:
        if self.watch_num_episodes < 1:
            raise ValueError(
                f"watch_num_episodes must be at least 1, got {self.watch_num_episodes} (to skip "
                f"watching, set watch=False)"
            )
        if self.watch_render < 0:
            raise ValueError(
                f"watch_render is a pause in seconds (0: no rendering), got {self.watch_render}"
            )
        if self.data_parallel_launcher == "ray" and not self.data_parallel:
            raise ValueError(
                "data_parallel_launcher='ray' launches a data-parallel run: set data_parallel=True"
            )


class Experiment(ToStringMixin):
    """Everything needed to train (and persist, restore and watch) one agent.

    Build it with an experiment builder (e.g. :class:`PPOExperimentBuilder`) rather than
    directly. It must stay picklable (no lambdas or open resources), as it is saved with each
    run and sent to the processes of parallel launchers.

    :param config: how the experiment runs.
    :param env_factory: builds the envs.
    :param algorithm_factory: builds the algorithm, its collectors and its trainer.
    :param training_config: the training hyper-parameters (epochs, envs, buffer, ...).
    :param name: the experiment's name; its runs write to
        ``<config.persistence_base_dir>/<name>``. It may contain path separators.
    :param logger_factory: builds the run's logger; None: TensorBoard
        (:class:`~tianshou.highlevel.logger.LoggerFactoryDefault`).
    """

    def __init__(
        self,
        config: ExperimentConfig,
        env_factory: EnvFactory,
        algorithm_factory: AlgorithmFactory,
        training_config: TrainingConfig,
        name: str,
        logger_factory: LoggerFactory | None = None,
    ) -> None:
        self.config = config
        self.env_factory = env_factory
        self.algorithm_factory = algorithm_factory
        self.training_config = training_config
        self.name = name
        self.logger_factory = (
            logger_factory if logger_factory is not None else LoggerFactoryDefault()
        )

    @staticmethod
    def seeding_info_str_static(seed: int) -> str:
        """The name component that tells runs with different seeds apart, ``seed=<seed>``."""
        return f"seed={seed}"

    def get_seeding_info_as_str(self) -> str:
        """:meth:`seeding_info_str_static` for this experiment's seed."""
        return self.seeding_info_str_static(self.config.seed)

    @staticmethod
    def persistence_dir_static(
        persistence_base_dir: str, experiment_name: str, seed: int | None = None
    ) -> str:
        """The directory of the experiment ``experiment_name`` or, given a seed, of its run with
        that seed among the seeded runs (as built by
        :meth:`ExperimentBuilder.build_seeded_collection`).

        :param persistence_base_dir: the base directory of all experiments.
        :param experiment_name: the experiment's name (shared by its seeded runs).
        :param seed: the run's seed; None: the experiment's directory itself, which holds the
            directories of the seeded runs.
        """
        experiment_dir = os.path.join(persistence_base_dir, experiment_name)
        if seed is None:
            return experiment_dir
        return os.path.join(experiment_dir, Experiment.seeding_info_str_static(seed))

    def save(self, directory: str) -> None:
        """Pickle this experiment to ``experiment.pkl`` in ``directory`` (created if missing),
        for :meth:`from_directory`.

        :param directory: where the file goes, usually the run directory.
        """
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, EXPERIMENT_PICKLE_FILENAME)
        log.info(f"Saving the experiment to {path}")
        with open(path, "wb") as f:
            pickle.dump(self, f)

    @classmethod
    def from_directory(cls, directory: str, restore_policy: bool = True) -> "Experiment":
        """Load the experiment saved in a run directory, to run it again or continue it.

        The file is a pickle, and unpickling can run arbitrary code: load only directories
        written by your own runs. Run the loaded experiment with a new ``run_name`` (or
        ``raise_error_on_dirname_collision=False``), since its directory exists already.

        :param directory: a run directory holding ``experiment.pkl``.
        :param restore_policy: load the policy saved in ``directory`` when the experiment runs,
            so that training continues from it (and watching shows it).
        """
        path = os.path.join(directory, EXPERIMENT_PICKLE_FILENAME)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"no {EXPERIMENT_PICKLE_FILENAME} in {directory!r}; pass the directory of a run "
                f"with persistence enabled (<persistence_base_dir>/<experiment name>)"
            )
        with open(path, "rb") as f:
            experiment = pickle.load(f)
        if not isinstance(experiment, cls):
            raise TypeError(f"{path} holds a {type(experiment).__name__}, not an {cls.__name__}")
        if restore_policy:
            experiment.config.policy_restore_directory = directory
        return experiment

    def _persistence_dir(self, experiment_name: str) -> str:
        return os.path.join(self.config.persistence_base_dir, experiment_name)

    def _prepare_persistence_dir(self, directory: str, raise_error_on_collision: bool) -> None:
        """Create the run directory (if persistence is enabled), refusing an existing one."""
        if not self.config.persistence_enabled:
            return
        if raise_error_on_collision and os.path.exists(directory):
            raise FileExistsError(
                f"the run directory {directory!r} exists already (from an earlier run?); choose "
                f"another experiment name (builder.with_name) or run_name, delete the directory, "
                f"or pass raise_error_on_dirname_collision=False to write into it"
            )
        os.makedirs(directory, exist_ok=True)

    def _set_seed(self, seed: int) -> None:
        log.info(f"Setting random seed {seed}")
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

    def create_experiment_world(
        self,
        override_experiment_name: str | None = None,
        logger_run_id: str | None = None,
        raise_error_on_dirname_collision: bool = True,
        reset_collectors: bool = True,
    ) -> World:
        """Seed everything and build the run's world: envs, algorithm (with the policy restored
        if configured), collectors, logger and trainer; training is left to the caller.

        :param override_experiment_name: the name determining the run directory; None: the
            experiment's name.
        :param logger_run_id: the logger's run id (e.g. to resume a W&B run).
        :param raise_error_on_dirname_collision: refuse to write into an existing directory.
        :param reset_collectors: reset the collectors' envs (and collect the warm-up steps).
        """
        name = self.name if override_experiment_name is None else override_experiment_name
        directory = self._persistence_dir(name)
        self._prepare_persistence_dir(directory, raise_error_on_dirname_collision)
        return self._create_world(name, directory, logger_run_id, reset_collectors)

    def _create_world(
        self,
        name: str,
        directory: str,
        logger_run_id: str | None,
        reset_collectors: bool = True,
    ) -> World:
        training = self.training_config
        # the ranks of a data-parallel run explore with their own random streams and env seeds
        ranks = current_rank_group()
        seed = self.config.seed + ranks.rank * training.num_training_envs
        self._set_seed(seed)
        envs = self.env_factory.create_envs(
            training.num_training_envs,
            training.num_test_envs,
            create_watch_env=self.config.watch and ranks.is_reporting,
            seed=seed,
        )
        log.info(f"Created {envs}")
        algorithm = self.algorithm_factory.create_algorithm(envs, self.config.device)
        training_collector, test_collector = self.algorithm_factory.create_train_test_collectors(
            algorithm, envs, reset_collectors=reset_collectors
        )
        world = World(
            envs=envs,
            algorithm=algorithm,
            training_collector=training_collector,
            test_collector=test_collector,
            logger=self._create_logger(name, directory, logger_run_id),
            persist_directory=directory,
            restore_directory=self.config.policy_restore_directory,
        )
        policy_persistence = PolicyPersistence(
            additional_persistence=PersistenceGroup(
                *env_state_persistence(envs.persistence),
                enabled=self.config.persistence_enabled,
            ),
            enabled=self.config.persistence_enabled,
            mode=self.config.policy_persistence_mode,
        )
        if self.config.policy_restore_directory is not None:
            policy_persistence.restore(algorithm, world, self.config.device)
        world.trainer = self.algorithm_factory.create_trainer(world, policy_persistence)
        ranks.attach(algorithm, training_collector.env if training_collector else None)
        return world

    def _create_logger(self, name: str, directory: str, run_id: str | None) -> TLogger:
        if not (self.config.persistence_enabled and current_rank_group().is_reporting):
            return LazyLogger()
        config_dict = {
            "experiment_config": asdict(self.config),
            "training_config": asdict(self.training_config),
            "env_factory": str(self.env_factory),
            "algorithm_factory": str(self.algorithm_factory),
        }
        return self.logger_factory.create_logger(
            log_dir=directory, experiment_name=name, run_id=run_id, config_dict=config_dict
        )

    @contextmanager
    def _log_file(self, directory: str) -> Iterator[None]:
        """Copy log records to ``experiment.log`` in ``directory`` while the context is open."""
        if not (self.config.persistence_enabled and self.config.log_file_enabled):
            yield
            return
        handler = logging.FileHandler(os.path.join(directory, LOG_FILENAME))
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger()
        root.addHandler(handler)
        try:
            yield
        finally:
            root.removeHandler(handler)
            handler.close()

    def run(
        self,
        run_name: str | None = None,
        logger_run_id: str | None = None,
        raise_error_on_dirname_collision: bool = True,
    ) -> ExperimentResult:
        """Run the experiment: seed, build the world, save this experiment into the run
        directory, restore the policy if configured, train if configured, then watch the agent
        if configured.

        :param run_name: a subdirectory of the experiment's directory for this run (e.g. to run
            a restored experiment again); None: the experiment's directory itself.
        :param logger_run_id: the logger's run id (e.g. to resume a W&B run).
        :param raise_error_on_dirname_collision: refuse to write into an existing directory,
            so that results of an earlier run are not mixed with (or overwritten by) this one.
        :return: the world of the run and what training returned.
        """
        if self.config.data_parallel and self.config.data_parallel_launcher == "ray":
            return self._run_on_ray_train(run_name, logger_run_id, raise_error_on_dirname_collision)
        return self._run_as_rank(run_name, logger_run_id, raise_error_on_dirname_collision)

    def _run_on_ray_train(
        self,
        run_name: str | None,
        logger_run_id: str | None,
        raise_error_on_dirname_collision: bool,
    ) -> ExperimentResult:
        """Run the experiment on Ray Train workers, one rank each, and return rank 0's
        training result."""
        config = self.config
        results = launch_on_ray_train(
            partial(
                self._trainer_result_as_rank,
                run_name,
                logger_run_id,
                raise_error_on_dirname_collision,
            ),
            num_workers=config.data_parallel_num_workers,
            use_gpu=torch.device(config.device).type == "cuda",
            ray_address=config.data_parallel_ray_address,
            timeout_s=config.data_parallel_timeout_s,
        )
        return WorkersRunResult(results[0])

    def _trainer_result_as_rank(
        self,
        run_name: str | None,
        logger_run_id: str | None,
        raise_error_on_dirname_collision: bool,
    ) -> InfoStats | None:
        """A Ray Train worker's part of :meth:`run`: the experiment run as one rank; only the
        training result goes back to the driver (the world cannot leave the process)."""
        return self._run_as_rank(
            run_name, logger_run_id, raise_error_on_dirname_collision
        ).trainer_result

    def _run_as_rank(
        self,
        run_name: str | None,
        logger_run_id: str | None,
        raise_error_on_dirname_collision: bool,
    ) -> ExperimentResult:
        """Run the experiment in this process: alone, or as one rank of a data-parallel run."""
        with self._rank_group() as ranks:
            # every rank takes rank 0's name: a name made by the builder holds the time each
            # rank built its experiment, and only rank 0 persists under it anyway
            self.name = ranks.decision_of_reporter(self.name)
            ranks.check_same_config({**asdict(self.config), **asdict(self.training_config)})
            name = self.name if run_name is None else os.path.join(self.name, run_name)
            directory = self._persistence_dir(name)
            return self._run(name, directory, logger_run_id, raise_error_on_dirname_collision)

    def _rank_group(self) -> AbstractContextManager[RankGroup]:
        """With ``config.data_parallel``, this process's rank of the job that torchrun or Ray
        Train started."""
        if not self.config.data_parallel:
            return nullcontext(SINGLE_PROCESS)
        return data_parallel(self.config.device, timeout_s=self.config.data_parallel_timeout_s)

    def _run(
        self,
        name: str,
        directory: str,
        logger_run_id: str | None,
        raise_error_on_dirname_collision: bool,
    ) -> ExperimentResult:
        reporting = current_rank_group().is_reporting
        if reporting:
            self._prepare_persistence_dir(directory, raise_error_on_dirname_collision)
        threads = self.training_config.torch_threads
        log_file = self._log_file(directory) if reporting else nullcontext()
        with log_file, torch_threads(threads) as chosen:
            log.info(f"Running experiment {name!r}:\n{self}")
            log.info(
                f"torch: {chosen} intra-op thread{'s' if chosen != 1 else ''} "
                f"({'torch default' if threads is None else 'training_config.torch_threads'})"
            )
            if self.config.persistence_enabled and reporting:
                self.save(directory)
            world = self._create_world(name, directory, logger_run_id)
            assert world.trainer is not None
            trainer_result = None
            if self.config.train:
                log.info("Training")
                trainer_result = world.trainer.run()
                log.info(f"Training result:\n{trainer_result}")
            if self.config.watch and reporting:
                self._watch_agent(world)
        return ExperimentResult(world=world, trainer_result=trainer_result)

    def _watch_agent(self, world: World) -> None:
        """Run the watch episodes, rendering only if asked to and a display exists."""
        watch_env = world.envs.watch_env
        if watch_env is None:
            raise ValueError(
                f"{type(self.env_factory).__name__}.create_envs built no watch env, although "
                f"create_watch_env=True (config.watch) asked for one"
            )
        render = self.config.watch_render
        if render > 0 and not has_display():
            log.warning(
                f"watch_render={render}, but there is no display (DISPLAY/WAYLAND_DISPLAY "
                f"unset): watching without rendering"
            )
            render = 0.0
        collector = Collector(world.algorithm, watch_env)
        collector.reset()
        stats = collector.collect(
            n_episode=self.config.watch_num_episodes, render=render if render > 0 else None
        )
        returns = stats.returns_stat
        log.info(
            f"Watched {stats.n_collected_episodes} episodes: mean return "
            f"{returns.mean if returns is not None else float('nan')}"
        )


class ExperimentCollection:
    """Experiments run together by a launcher, e.g. the seeded runs of one configuration.

    :param experiments: the experiments; their names must differ (they name the directories).
    """

    def __init__(self, experiments: list[Experiment]) -> None:
        self.experiments = experiments

    def run(
        self, launcher: ExpLauncher | RegisteredExpLauncher | str = RegisteredExpLauncher.SEQUENTIAL
    ) -> list[InfoStats | None]:
        """Run all experiments and return their training results in order.

        :param launcher: runs them (sequentially, with joblib or Ray); a
            :class:`RegisteredExpLauncher` or its name (``"sequential"``, ``"joblib"``,
            ``"ray"``, any case) is turned into its launcher with default settings.
        """
        return resolve_launcher(launcher).launch(experiments=self.experiments)
