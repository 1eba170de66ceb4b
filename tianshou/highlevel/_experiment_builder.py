"""The base of the experiment builders: :class:`ExperimentBuilder` and its on- and off-policy kinds.

Published in :mod:`tianshou.highlevel.experiment`; the per-algorithm builders deriving from
these sit in :mod:`tianshou.highlevel.experiment_builders`.
"""

import copy
import logging
import os
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Generic, Self, TypeVar

from tianshou.evaluation.launcher import ExpLauncher, RegisteredExpLauncher, resolve_launcher
from tianshou.highlevel._experiment import Experiment, ExperimentCollection, ExperimentConfig
from tianshou.highlevel.algorithm import AlgorithmFactory
from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.highlevel.env import EnvFactory
from tianshou.highlevel.experiment_result import RunRecord, SeedResults
from tianshou.highlevel.logger import LoggerFactory
from tianshou.highlevel.params.algorithm_wrapper import AlgorithmWrapperFactory
from tianshou.highlevel.params.collector import CollectorFactory
from tianshou.highlevel.params.optim import OptimizerFactoryFactory
from tianshou.highlevel.trainer import (
    EpochStopCallback,
    EpochTestCallback,
    EpochTrainCallback,
    TrainerCallbacks,
)

# logged under the name of the module that publishes the experiment API, as users configure it
log = logging.getLogger("tianshou.highlevel.experiment")

TTrainingConfig = TypeVar("TTrainingConfig", bound=TrainingConfig)


class ExperimentBuilder(ABC, Generic[TTrainingConfig]):
    """Builds experiments step by step; the subclass per algorithm adds its parameters and
    network factories. Every ``with_*``/config method returns the builder itself.

    :param env_factory: builds the envs.
    :param experiment_config: how the experiment runs; None: :class:`ExperimentConfig`
        defaults.
    :param training_config: the training hyper-parameters; None: the defaults of the
        builder's training config class.
    """

    training_config_class: type[TTrainingConfig]
    """The builder's kind of training config; its defaults are used when none is given."""

    def __init__(
        self,
        env_factory: EnvFactory,
        experiment_config: ExperimentConfig | None = None,
        training_config: TTrainingConfig | None = None,
    ) -> None:
        super().__init__()  # initialises the network mixins listed after this class
        self._env_factory = env_factory
        self._experiment_config = (
            experiment_config if experiment_config is not None else ExperimentConfig()
        )
        self._training_config = (
            training_config if training_config is not None else self.training_config_class()
        )
        self._logger_factory: LoggerFactory | None = None
        self._optim_factory: OptimizerFactoryFactory | None = None
        self._algorithm_wrapper_factory: AlgorithmWrapperFactory | None = None
        self._collector_factory: CollectorFactory | None = None
        self._trainer_callbacks = TrainerCallbacks()
        self._name: str | None = None

    @abstractmethod
    def _create_algorithm_factory(self) -> AlgorithmFactory:
        """The algorithm factory configured by this builder."""

    def experiment_config(self, experiment_config: ExperimentConfig) -> Self:
        """Set how the experiment runs."""
        self._experiment_config = experiment_config
        return self

    def training_config(self, config: TTrainingConfig) -> Self:
        """Set the training hyper-parameters."""
        self._training_config = config
        return self

    def copy(self) -> Self:
        """An independent (deep) copy, to derive variants of an experiment."""
        return copy.deepcopy(self)

    def with_logger_factory(self, logger_factory: LoggerFactory) -> Self:
        """Set the factory of the run's logger (default: TensorBoard)."""
        self._logger_factory = logger_factory
        return self

    def with_name(self, name: str) -> Self:
        """Set the experiment's name, i.e. its directory under ``persistence_base_dir`` (default:
        the algorithm's name and the time the experiment is built).
        """
        self._name = name
        return self

    def with_optim_default(self, optim_factory: OptimizerFactoryFactory) -> Self:
        """Set the optimizer used where the algorithm's parameters name none (default: Adam)."""
        self._optim_factory = optim_factory
        return self

    def with_algorithm_wrapper_factory(
        self, algorithm_wrapper_factory: AlgorithmWrapperFactory
    ) -> Self:
        """Wrap the algorithm, e.g. with an intrinsic curiosity module."""
        self._algorithm_wrapper_factory = algorithm_wrapper_factory
        return self

    def with_collector_factory(self, collector_factory: CollectorFactory) -> Self:
        """Set the factory of the training and test collectors."""
        self._collector_factory = collector_factory
        return self

    def with_epoch_train_callback(self, callback: EpochTrainCallback) -> Self:
        """Call ``callback`` at the start of each epoch's training phase."""
        self._trainer_callbacks.epoch_train_callback = callback
        return self

    def with_epoch_test_callback(self, callback: EpochTestCallback) -> Self:
        """Call ``callback`` at the start of each test phase."""
        self._trainer_callbacks.epoch_test_callback = callback
        return self

    def with_epoch_stop_callback(self, callback: EpochStopCallback) -> Self:
        """Let ``callback`` decide after each test phase whether training stops early."""
        self._trainer_callbacks.epoch_stop_callback = callback
        return self

    def _get_optim_factory(self) -> OptimizerFactoryFactory:
        if self._optim_factory is None:
            return OptimizerFactoryFactory.default()
        return self._optim_factory

    def _algorithm_name(self) -> str:
        """The algorithm's name, from the builder's (``PPOExperimentBuilder``: ``PPO``)."""
        return type(self).__name__.removesuffix("ExperimentBuilder")

    def _default_name(self) -> str:
        return f"{self._algorithm_name()}_{datetime.now():%Y%m%d-%H%M%S}"

    def _run_record(self, experiment: Experiment) -> RunRecord:
        """What ``experiment`` (built by this builder) runs and where it writes."""
        config = experiment.config
        directory = Experiment.persistence_dir_static(config.persistence_base_dir, experiment.name)
        return RunRecord(
            seed=config.seed,
            algorithm=self._algorithm_name(),
            directory=directory if config.persistence_enabled else None,
        )

    def build(self) -> Experiment:
        """The experiment configured so far.

        It is built from a copy of the builder's state, so that changing the builder (or
        another experiment built from it) later leaves it unaffected.
        """
        return self.copy()._build_from_own_state()

    def _build_from_own_state(self) -> Experiment:
        algorithm_factory = self._create_algorithm_factory()
        if self._algorithm_wrapper_factory is not None:
            algorithm_factory.set_policy_wrapper_factory(self._algorithm_wrapper_factory)
        if self._collector_factory is not None:
            algorithm_factory.set_collector_factory(self._collector_factory)
        algorithm_factory.set_trainer_callbacks(self._trainer_callbacks)
        return Experiment(
            config=self._experiment_config,
            env_factory=self._env_factory,
            algorithm_factory=algorithm_factory,
            training_config=self._training_config,
            name=self._name if self._name is not None else self._default_name(),
            logger_factory=self._logger_factory,
        )

    def build_seeded_collection(self, num_experiments: int) -> ExperimentCollection:
        """Experiments differing only in the seed (the configured one, plus 1, plus 2, ...),
        named ``<name>/seed=<seed>``, so that each writes to its own subdirectory of the
        directory ``<persistence_base_dir>/<name>``.

        :param num_experiments: the number of seeds.
        """
        return self._build_seeded_collection(num_experiments, self._name or self._default_name())

    def _build_seeded_collection(self, num_experiments: int, name: str) -> ExperimentCollection:
        if num_experiments < 1:
            raise ValueError(f"num_experiments must be at least 1, got {num_experiments}")
        experiments = []
        for i in range(num_experiments):
            builder = self.copy()
            builder._experiment_config.seed += i
            seed = builder._experiment_config.seed
            builder.with_name(os.path.join(name, Experiment.seeding_info_str_static(seed)))
            experiments.append(builder.build())
        return ExperimentCollection(experiments)

    def build_and_run(
        self,
        num_experiments: int = 1,
        launcher: ExpLauncher | RegisteredExpLauncher | str = RegisteredExpLauncher.SEQUENTIAL,
        perform_rliable_analysis: bool = True,
    ) -> SeedResults:
        """Build and run one experiment, or a seeded collection of them, and return the
        training results in seed order.

        The result is a list of training results in either case; for a single experiment it
        also carries the run's ``world`` and ``trainer_result`` and is an
        :class:`ExperimentResult` (see :class:`SeedResults`), so that code written for
        either return type of the published library keeps working.

        :param num_experiments: 1 runs a single experiment in this process, whatever the
            launcher; more run a seeded collection (:meth:`build_seeded_collection`).
        :param launcher: runs the collection: an :class:`ExpLauncher`, a
            :class:`RegisteredExpLauncher` or its name (``"sequential"``, ``"joblib"``,
            ``"ray"``, any case); checked even for a single experiment.
        :param perform_rliable_analysis: after a collection ran (with persistence enabled),
            evaluate all seeds with rliable and save the plots (and JSON) into the experiment
            directory; ignored for a single experiment.
        """
        if num_experiments < 1:
            raise ValueError(f"num_experiments must be at least 1, got {num_experiments}")
        resolved_launcher = resolve_launcher(launcher)
        if num_experiments == 1:
            experiment = self.build()
            return SeedResults.of_single_run(experiment.run(), self._run_record(experiment))
        name = self._name or self._default_name()
        collection = self._build_seeded_collection(num_experiments, name)
        results = SeedResults(
            collection.run(resolved_launcher),
            runs=[self._run_record(experiment) for experiment in collection.experiments],
        )
        if perform_rliable_analysis:
            self._evaluate_with_rliable(
                Experiment.persistence_dir_static(
                    self._experiment_config.persistence_base_dir, name
                )
            )
        return results

    def _evaluate_with_rliable(self, experiment_dir: str) -> None:
        if not self._experiment_config.persistence_enabled:
            log.warning("rliable analysis skipped: it reads the logs, but persistence is disabled")
            return
        from tianshou.evaluation.rliable_evaluation import load_and_eval_experiment

        log.info(f"Evaluating the runs in {experiment_dir} with rliable")
        load_and_eval_experiment(experiment_dir, show_plots=False, save_plots=True)


class OnPolicyExperimentBuilder(ExperimentBuilder[OnPolicyTrainingConfig], ABC):
    """Base of the builders of on-policy algorithms (default: :class:`OnPolicyTrainingConfig`)."""

    training_config_class = OnPolicyTrainingConfig


class OffPolicyExperimentBuilder(ExperimentBuilder[OffPolicyTrainingConfig], ABC):
    """Base of the builders of off-policy algorithms (default: :class:`OffPolicyTrainingConfig`)."""

    training_config_class = OffPolicyTrainingConfig
