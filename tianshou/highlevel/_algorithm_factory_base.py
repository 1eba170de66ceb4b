"""The base of the algorithm factories: what every factory does besides building its networks.

An :class:`AlgorithmFactory` builds the algorithm (wrapped if a wrapper factory is set), the
training and test collectors (with a replay buffer sized by the training config) and the
trainer; :class:`OnPolicyAlgorithmFactory` and :class:`OffPolicyAlgorithmFactory` fix the
trainer. This module also holds what the per-algorithm factories share to pass their typed
parameters on: the policies' spaces and resolved action values, and the algorithm's keyword
arguments.
"""

import inspect
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, Generic, Literal, TypedDict, TypeVar

import gymnasium as gym

from tianshou.algorithm.algorithm_base import Algorithm, OffPolicyAlgorithm, OnPolicyAlgorithm
from tianshou.data import BaseCollector, ReplayBuffer, VectorReplayBuffer
from tianshou.exploration import BaseNoise
from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.params.algorithm_params import (
    Params,
    ParamsMixinActionScaling,
    ParamsMixinExplorationNoise,
    ParamTransformerActionScaling,
    ParamTransformerData,
    ParamTransformerNoiseFactory,
)
from tianshou.highlevel.params.algorithm_wrapper import AlgorithmWrapperFactory
from tianshou.highlevel.params.collector import CollectorFactory, CollectorFactoryDefault
from tianshou.highlevel.params.optim import OptimizerFactoryFactory
from tianshou.highlevel.persistence import PolicyPersistence
from tianshou.highlevel.trainer import TrainerCallbacks, TrainingContext
from tianshou.highlevel.world import World
from tianshou.trainer import (
    OffPolicyTrainer,
    OffPolicyTrainerParams,
    OnPolicyTrainer,
    OnPolicyTrainerParams,
    Trainer,
)
from tianshou.utils.logger import BaseLogger
from tianshou.utils.string import ToStringMixin

# logged under the name of the module that publishes the factories, as users configure it
log = logging.getLogger("tianshou.highlevel.algorithm")

TTrainingConfig = TypeVar("TTrainingConfig", bound=TrainingConfig)


class PolicySpaces(TypedDict):
    """The spaces every policy is built with (keyword arguments of the policy classes)."""

    action_space: gym.Space
    observation_space: gym.Space


def policy_spaces(envs: Environments) -> PolicySpaces:
    """The action and observation space of ``envs``, for a policy's constructor."""
    return PolicySpaces(
        action_space=envs.get_action_space(), observation_space=envs.get_observation_space()
    )


def resolved_action_scaling(params: ParamsMixinActionScaling, data: ParamTransformerData) -> bool:
    """``params.action_scaling`` with ``"default"`` resolved (scale exactly continuous actions)."""
    return ParamTransformerActionScaling("action_scaling").change_value(params.action_scaling, data)


def created_exploration_noise(
    params: ParamsMixinExplorationNoise, data: ParamTransformerData
) -> BaseNoise | Literal["default"] | None:
    """``params.exploration_noise`` with a noise factory replaced by the noise it creates."""
    return ParamTransformerNoiseFactory("exploration_noise").change_value(
        params.exploration_noise, data
    )


def algorithm_kwargs(
    algorithm_class: Callable[..., Algorithm], params: Params, data: ParamTransformerData
) -> dict[str, Any]:
    """The keyword arguments that ``algorithm_class`` takes among the resolved ``params``.

    The params' fields are named after the procedural constructors' keywords, and
    :meth:`~tianshou.highlevel.params.algorithm_params.Params.create_kwargs` resolves their
    high-level values (learning rates into optimizer factories, ...); the fields only the policy
    takes (action scaling, exploration noise, ...) are passed to it by the factory and left out
    here, by the algorithm constructor's own signature.

    :param algorithm_class: the algorithm to instantiate.
    :param params: the algorithm's parameters.
    :param data: the environments, device and default optimizer to resolve them with.
    """
    accepted = inspect.signature(algorithm_class).parameters
    return {key: value for key, value in params.create_kwargs(data).items() if key in accepted}


class _OnlineTrainerArguments(TypedDict):
    """The arguments that :class:`OnPolicyTrainerParams` and :class:`OffPolicyTrainerParams`
    share, as an algorithm factory sets them."""

    training_collector: BaseCollector
    test_collector: BaseCollector | None
    max_epochs: int
    epoch_num_steps: int
    test_step_num_episodes: int
    collection_step_num_env_steps: int | None
    collection_step_num_episodes: int | None
    test_in_training: bool
    save_best_fn: Callable[[Algorithm], None] | None
    save_checkpoint_fn: Callable[[int, int, int], str] | None
    verbose: bool
    show_progress: bool
    training_fn: Callable[[int, int], None] | None
    test_fn: Callable[[int, int | None], None] | None
    stop_fn: Callable[[float], bool] | None
    logger: BaseLogger | None


def _test_step_num_episodes(config: TrainingConfig) -> int:
    """The episodes collected per test step: the configured number, or one per test env for
    the default -1 (so that every test env runs exactly one episode)."""
    if config.test_step_num_episodes == -1:
        return config.num_test_envs
    return config.test_step_num_episodes


def _training_collector(world: World) -> BaseCollector:
    """``world``'s training collector, which a trainer needs."""
    if world.training_collector is None:
        raise ValueError(
            "the world has no training collector, but a trainer needs one; build the "
            "collectors with create_train_test_collectors(algorithm, envs)"
        )
    return world.training_collector


class AlgorithmFactory(ABC, ToStringMixin, Generic[TTrainingConfig]):
    """Builds an algorithm, its collectors and its trainer for an experiment.

    :param training_config: sizes the buffer and collectors and configures the trainer.
    :param optim_factory: the default optimizer factory factory, for every optimizer whose
        params do not name their own.
    """

    def __init__(
        self, training_config: TTrainingConfig, optim_factory: OptimizerFactoryFactory
    ) -> None:
        self.training_config = training_config
        self.optim_factory = optim_factory
        self.algorithm_wrapper_factory: AlgorithmWrapperFactory | None = None
        self.trainer_callbacks = TrainerCallbacks()
        self.collector_factory: CollectorFactory = CollectorFactoryDefault()
        self._algorithm: Algorithm | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_algorithm"] = None  # built per run, not configuration: never pickled
        return state

    def set_collector_factory(self, collector_factory: CollectorFactory) -> None:
        """Build the collectors with ``collector_factory`` instead of the default one."""
        self.collector_factory = collector_factory

    def set_policy_wrapper_factory(self, policy_wrapper_factory: AlgorithmWrapperFactory) -> None:
        """Wrap every algorithm this factory creates (e.g. with intrinsic curiosity)."""
        self.algorithm_wrapper_factory = policy_wrapper_factory

    def set_trainer_callbacks(self, callbacks: TrainerCallbacks) -> None:
        """Use ``callbacks`` (their functions) in the trainers this factory creates."""
        self.trainer_callbacks = callbacks

    def _transformer_data(self, envs: Environments, device: TDevice) -> ParamTransformerData:
        return ParamTransformerData(
            envs=envs, device=device, optim_factory_default=self.optim_factory
        )

    @abstractmethod
    def _create_algorithm(self, envs: Environments, device: TDevice) -> Algorithm:
        """Build the modules, the policy and the (unwrapped) algorithm for ``envs``."""

    def create_algorithm(self, envs: Environments, device: TDevice) -> Algorithm:
        """Build the algorithm for ``envs`` on ``device``, wrapped by the wrapper factory if set.

        The factory remembers it: :meth:`create_trainer` trains the algorithm created last.

        :param envs: the environments the networks are sized for.
        :param device: where the networks' parameters live.
        """
        algorithm = self._create_algorithm(envs, device)
        if self.algorithm_wrapper_factory is not None:
            algorithm = self.algorithm_wrapper_factory.create_wrapped_algorithm(
                algorithm, envs, self.optim_factory, device
            )
        self._algorithm = algorithm
        return algorithm

    def _create_buffer(self, num_envs: int) -> ReplayBuffer:
        """The training buffer: one of ``buffer_size`` rows, split among ``num_envs`` envs."""
        config = self.training_config
        options: dict[str, Any] = {
            "stack_num": config.replay_buffer_stack_num,
            "ignore_obs_next": config.replay_buffer_ignore_obs_next,
            "save_only_last_obs": config.replay_buffer_save_only_last_obs,
        }
        if num_envs > 1:
            return VectorReplayBuffer(config.buffer_size, num_envs, **options)
        return ReplayBuffer(config.buffer_size, **options)

    @property
    @abstractmethod
    def _training_exploration_noise(self) -> bool:
        """Whether the training collector adds the policy's exploration noise to actions."""

    def create_train_test_collectors(
        self, algorithm: Algorithm, envs: Environments, reset_collectors: bool = True
    ) -> tuple[BaseCollector, BaseCollector]:
        """Build the training collector (with a buffer sized by the training config) and the test
        collector.

        With ``reset_collectors``, both are reset and, if the config's ``start_timesteps`` is
        positive, that many warm-up steps are collected into the training buffer (with random
        actions if ``start_timesteps_random``, else with the untrained policy). Without it the
        collectors are returned untouched (e.g. for a run that only watches a restored policy).

        :param algorithm: the algorithm whose policy collects.
        :param envs: provides the training and test envs.
        :param reset_collectors: reset the collectors and collect the warm-up steps.
        """
        training_envs = envs.training_envs
        training_collector = self.collector_factory.create_collector(
            algorithm,
            training_envs,
            self._create_buffer(len(training_envs)),
            self._training_exploration_noise,
        )
        test_collector = self.collector_factory.create_collector(
            algorithm, envs.test_envs, None, False
        )
        if reset_collectors:
            training_collector.reset()
            test_collector.reset()
            self._collect_warm_up_steps(training_collector)
        return training_collector, test_collector

    def _collect_warm_up_steps(self, collector: BaseCollector) -> None:
        config = self.training_config
        if config.start_timesteps <= 0:
            return
        log.info(
            "collecting %d warm-up env steps before training (random actions: %s)",
            config.start_timesteps,
            config.start_timesteps_random,
        )
        collector.collect(n_step=config.start_timesteps, random=config.start_timesteps_random)

    def _created_algorithm(self, world: World) -> Algorithm:
        """The algorithm created last, checked to be the one ``world``'s collectors run."""
        algorithm = self._algorithm
        if algorithm is None:
            raise ValueError(
                "create_trainer trains the algorithm this factory created; call "
                "create_algorithm (and create_train_test_collectors) first"
            )
        if _training_collector(world).policy is not algorithm.policy:
            raise ValueError(
                "world.training_collector does not collect with the policy of the algorithm "
                "this factory created last; build the collectors with "
                "create_train_test_collectors(algorithm, envs)"
            )
        return algorithm

    def _online_trainer_arguments(
        self, algorithm: Algorithm, world: World, policy_persistence: PolicyPersistence
    ) -> _OnlineTrainerArguments:
        """The trainer params that on- and off-policy trainers share: from the training config,
        the world's collectors and logger, the policy persistence and the trainer callbacks
        (bound to a :class:`TrainingContext` of ``algorithm``)."""
        config = self.training_config
        context = TrainingContext(algorithm, world.envs, world.logger)
        callbacks = self.trainer_callbacks
        train_cb, test_cb = callbacks.epoch_train_callback, callbacks.epoch_test_callback
        stop_cb = callbacks.epoch_stop_callback
        return _OnlineTrainerArguments(
            training_collector=_training_collector(world),
            test_collector=world.test_collector,
            max_epochs=config.max_epochs,
            epoch_num_steps=config.epoch_num_steps,
            test_step_num_episodes=_test_step_num_episodes(config),
            collection_step_num_env_steps=config.collection_step_num_env_steps,
            collection_step_num_episodes=config.collection_step_num_episodes,
            test_in_training=config.test_in_training,
            save_best_fn=policy_persistence.get_save_best_fn(world),
            save_checkpoint_fn=policy_persistence.get_save_checkpoint_fn(world),
            # as in the published library: the test results go to the logger and the log, not
            # to the console (the experiment's progress bars stay readable)
            verbose=False,
            show_progress=config.show_progress,
            training_fn=None if train_cb is None else train_cb.get_trainer_fn(context),
            test_fn=None if test_cb is None else test_cb.get_trainer_fn(context),
            stop_fn=None if stop_cb is None else stop_cb.get_trainer_fn(context),
            logger=world.logger,
        )

    @abstractmethod
    def create_trainer(self, world: World, policy_persistence: PolicyPersistence) -> Trainer:
        """Build the trainer of the algorithm created last, running on ``world``'s collectors.

        :param world: provides the collectors, envs and logger.
        :param policy_persistence: saves the best policy and checkpoints.
        """


class OnPolicyAlgorithmFactory(AlgorithmFactory[OnPolicyTrainingConfig], ABC):
    """Base of the factories of on-policy algorithms (trained by an :class:`OnPolicyTrainer`)."""

    @property
    def _training_exploration_noise(self) -> bool:
        return False

    def create_trainer(
        self, world: World, policy_persistence: PolicyPersistence
    ) -> OnPolicyTrainer:
        algorithm = self._created_algorithm(world)
        if not isinstance(algorithm, OnPolicyAlgorithm):
            raise TypeError(f"expected an OnPolicyAlgorithm, got {type(algorithm).__name__}")
        params = OnPolicyTrainerParams(
            **self._online_trainer_arguments(algorithm, world, policy_persistence),
            batch_size=self.training_config.batch_size,
            update_step_num_repetitions=self.training_config.update_step_num_repetitions,
        )
        return algorithm.create_trainer(params)


class OffPolicyAlgorithmFactory(AlgorithmFactory[OffPolicyTrainingConfig], ABC):
    """Base of the factories of off-policy algorithms (trained by an :class:`OffPolicyTrainer`);
    their training collectors add the policy's exploration noise.
    """

    @property
    def _training_exploration_noise(self) -> bool:
        return True

    def create_trainer(
        self, world: World, policy_persistence: PolicyPersistence
    ) -> OffPolicyTrainer:
        algorithm = self._created_algorithm(world)
        if not isinstance(algorithm, OffPolicyAlgorithm):
            raise TypeError(f"expected an OffPolicyAlgorithm, got {type(algorithm).__name__}")
        config = self.training_config
        params = OffPolicyTrainerParams(
            **self._online_trainer_arguments(algorithm, world, policy_persistence),
            batch_size=config.batch_size,
            update_step_num_gradient_steps_per_sample=(
                config.update_step_num_gradient_steps_per_sample
            ),
        )
        return algorithm.create_trainer(params)
