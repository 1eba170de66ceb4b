"""Algorithm factories: turn module factories and parameter objects into the procedural objects.

An :class:`AlgorithmFactory` is the high-level door to exactly the objects the procedural API
builds by hand. It builds

* the networks, from module factories;
* the :class:`~tianshou.algorithm.algorithm_base.Policy` and the
  :class:`~tianshou.algorithm.algorithm_base.Algorithm`, from a ``<Algo>Params`` object whose
  :meth:`~tianshou.highlevel.params.algorithm_params.Params.create_kwargs` resolves optimizers,
  noise, alpha, ... into constructor arguments (the policy's are split off, the rest go to the
  algorithm);
* the training and test :class:`~tianshou.data.Collector`, with a replay buffer sized by the
  training config;
* the :class:`~tianshou.trainer.OnPolicyTrainer` or :class:`~tianshou.trainer.OffPolicyTrainer`
  (through ``algorithm.create_trainer``).

The factories differ only in the modules they build and the classes they instantiate:

* on-policy: :class:`ReinforceAlgorithmFactory` (actor only) and
  :class:`ActorCriticOnPolicyAlgorithmFactory` (A2C, PPO, NPG, TRPO: actor + state-value critic,
  one optimizer over both);
* off-policy: :class:`DiscreteCriticOnlyOffPolicyAlgorithmFactory` (DQN, IQN: one Q-network),
  :class:`DDPGAlgorithmFactory` (actor + Q-critic),
  :class:`ActorDualCriticsOffPolicyAlgorithmFactory` (TD3, SAC, DiscreteSAC: actor + twin
  critics) and :class:`REDQAlgorithmFactory` (actor + critic ensemble).
"""

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Generic, TypeVar, cast

import gymnasium as gym
from torch import nn

from tianshou.algorithm import (
    A2C,
    DDPG,
    DQN,
    IQN,
    NPG,
    PPO,
    REDQ,
    SAC,
    TD3,
    TRPO,
    DiscreteSAC,
    Reinforce,
)
from tianshou.algorithm.algorithm_base import (
    Algorithm,
    OffPolicyAlgorithm,
    OnPolicyAlgorithm,
    Policy,
)
from tianshou.algorithm.modelfree.a2c import ActorCriticOnPolicyAlgorithm
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import SACPolicy
from tianshou.algorithm.modelfree.td3 import ActorDualCriticsOffPolicyAlgorithm
from tianshou.data import BaseCollector, ReplayBuffer, VectorReplayBuffer
from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnlineTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import ActorFactory
from tianshou.highlevel.module.core import ModuleFactory, TDevice
from tianshou.highlevel.module.critic import CriticEnsembleFactory, CriticFactory
from tianshou.highlevel.params.algorithm_params import (
    A2CParams,
    DDPGParams,
    DiscreteSACParams,
    DQNParams,
    IQNParams,
    NPGParams,
    Params,
    ParamTransformerData,
    PPOParams,
    REDQParams,
    ReinforceParams,
    SACParams,
    TD3Params,
    TRPOParams,
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
from tianshou.utils.net.discrete import ImplicitQuantileNetwork
from tianshou.utils.string import ToStringMixin

log = logging.getLogger(__name__)

CHECKPOINT_DICT_KEY_MODEL = "model"
"""Key of the model's state in a checkpoint dict."""
CHECKPOINT_DICT_KEY_OBS_RMS = "obs_rms"
"""Key of the observation normalisation statistics in a checkpoint dict."""

TParams = TypeVar("TParams", bound=Params)
TActorCriticParams = TypeVar("TActorCriticParams", bound=Params)
TActorDualCriticsParams = TypeVar("TActorDualCriticsParams", bound=Params)
TDiscreteCriticOnlyParams = TypeVar("TDiscreteCriticOnlyParams", bound=Params)
TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)
TActorCriticAlgorithm = TypeVar("TActorCriticAlgorithm", bound=ActorCriticOnPolicyAlgorithm)
TActorDualCriticsAlgorithm = TypeVar(
    "TActorDualCriticsAlgorithm", bound=ActorDualCriticsOffPolicyAlgorithm
)
TPolicy = TypeVar("TPolicy", bound=Policy)
TTrainingConfig = TypeVar("TTrainingConfig", bound=TrainingConfig)

_PROBABILISTIC_POLICY_KEYS = ("deterministic_eval", "action_scaling", "action_bound_method")
_NOISY_POLICY_KEYS = ("exploration_noise", "action_scaling", "action_bound_method")


def _pop_keys(kwargs: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """Remove ``keys`` (those present) from ``kwargs`` and return them as a dict.

    Used to split the resolved parameters into the Policy's constructor arguments (returned) and
    the Algorithm's (left in ``kwargs``).
    """
    return {key: kwargs.pop(key) for key in keys if key in kwargs}


def _test_step_num_episodes(config: TrainingConfig) -> int:
    """The episodes collected per test step: the configured number, or one per test env for
    the default -1 (so that every test env runs exactly one episode)."""
    if config.test_step_num_episodes == -1:
        return config.num_test_envs
    return config.test_step_num_episodes


def _online_trainer_params(
    config: OnlineTrainingConfig, world: World, policy_persistence: PolicyPersistence
) -> dict[str, Any]:
    """The trainer params that on- and off-policy trainers share, from the training config, the
    world's collectors and the policy persistence."""
    return {
        "training_collector": world.training_collector,
        "test_collector": world.test_collector,
        "max_epochs": config.max_epochs,
        "epoch_num_steps": config.epoch_num_steps,
        "test_step_num_episodes": _test_step_num_episodes(config),
        "collection_step_num_env_steps": config.collection_step_num_env_steps,
        "collection_step_num_episodes": config.collection_step_num_episodes,
        "test_in_training": config.test_in_training,
        "save_best_fn": policy_persistence.get_save_best_fn(world),
        "save_checkpoint_fn": policy_persistence.get_save_checkpoint_fn(world),
        # as in the published library: the test results go to the logger and the log, not to
        # the console (the experiment's progress bars stay readable)
        "verbose": False,
        "show_progress": config.show_progress,
    }


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
        if world.training_collector is None:
            raise ValueError(
                "the world has no training collector, but a trainer needs one; build the "
                "collectors with create_train_test_collectors(algorithm, envs)"
            )
        if world.training_collector.policy is not algorithm.policy:
            raise ValueError(
                "world.training_collector does not collect with the policy of the algorithm "
                "this factory created last; build the collectors with "
                "create_train_test_collectors(algorithm, envs)"
            )
        return algorithm

    def _trainer_fns(self, algorithm: Algorithm, world: World) -> dict[str, Any]:
        """The trainer's ``training_fn``/``test_fn``/``stop_fn``, the trainer callbacks bound to
        a :class:`TrainingContext` of ``algorithm``, and its ``logger``, the world's."""
        context = TrainingContext(algorithm, world.envs, world.logger)
        callbacks = self.trainer_callbacks
        train_cb, test_cb = callbacks.epoch_train_callback, callbacks.epoch_test_callback
        stop_cb = callbacks.epoch_stop_callback
        return {
            "training_fn": None if train_cb is None else train_cb.get_trainer_fn(context),
            "test_fn": None if test_cb is None else test_cb.get_trainer_fn(context),
            "stop_fn": None if stop_cb is None else stop_cb.get_trainer_fn(context),
            "logger": world.logger,
        }

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
            **_online_trainer_params(self.training_config, world, policy_persistence),
            **self._trainer_fns(algorithm, world),
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
            **_online_trainer_params(config, world, policy_persistence),
            **self._trainer_fns(algorithm, world),
            batch_size=config.batch_size,
            update_step_num_gradient_steps_per_sample=(
                config.update_step_num_gradient_steps_per_sample
            ),
        )
        return algorithm.create_trainer(params)


def _probabilistic_policy(
    actor_factory: ActorFactory, actor: nn.Module, envs: Environments, kwargs: dict[str, Any]
) -> ProbabilisticActorPolicy:
    """The stochastic policy of the on-policy algorithms; pops its arguments from ``kwargs``."""
    dist_fn = actor_factory.create_dist_fn(envs)
    if dist_fn is None:
        raise ValueError(
            f"{actor_factory} builds an actor without a distribution function, but on-policy "
            f"algorithms need a stochastic actor (e.g. ActorFactoryDefault with "
            f"ContinuousActorType.GAUSSIAN)"
        )
    return ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=dist_fn,
        action_space=envs.get_action_space(),
        observation_space=envs.get_observation_space(),
        **_pop_keys(kwargs, _PROBABILISTIC_POLICY_KEYS),
    )


class ReinforceAlgorithmFactory(OnPolicyAlgorithmFactory):
    """Builds :class:`~tianshou.algorithm.Reinforce` with a :class:`ProbabilisticActorPolicy`.

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param actor_factory: builds the stochastic actor (and its distribution function).
    :param optim_factory: the default optimizer factory factory.
    """

    def __init__(
        self,
        params: ReinforceParams,
        training_config: OnPolicyTrainingConfig,
        actor_factory: ActorFactory,
        optim_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optim_factory)
        self.params = params
        self.actor_factory = actor_factory

    def _create_algorithm(self, envs: Environments, device: TDevice) -> Reinforce:
        actor = self.actor_factory.create_module(envs, device)
        kwargs = self.params.create_kwargs(self._transformer_data(envs, device))
        policy = _probabilistic_policy(self.actor_factory, actor, envs, kwargs)
        return Reinforce(policy=policy, **kwargs)


class ActorCriticOnPolicyAlgorithmFactory(
    OnPolicyAlgorithmFactory, Generic[TActorCriticParams, TActorCriticAlgorithm]
):
    """Base of the factories of on-policy actor-critic algorithms (A2C, PPO, NPG, TRPO).

    The actor is built before the critic, so that a critic sharing the actor's body
    (:class:`~tianshou.highlevel.module.critic.CriticFactoryReuseActor`, fed by an
    :class:`~tianshou.highlevel.module.actor.ActorFactoryTransientStorageDecorator`) finds it.
    One optimizer trains actor and critic (shared parameters counted once).

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param actor_factory: builds the stochastic actor (and its distribution function).
    :param critic_factory: builds the state-value critic ``V(s)``.
    :param optimizer_factory: the default optimizer factory factory.
    """

    def __init__(
        self,
        params: TActorCriticParams,
        training_config: OnPolicyTrainingConfig,
        actor_factory: ActorFactory,
        critic_factory: CriticFactory,
        optimizer_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optimizer_factory)
        self.params = params
        self.actor_factory = actor_factory
        self.critic_factory = critic_factory

    @abstractmethod
    def _get_algorithm_class(self) -> type[TActorCriticAlgorithm]:
        """The algorithm class to instantiate."""

    def _create_algorithm(self, envs: Environments, device: TDevice) -> TActorCriticAlgorithm:
        actor = self.actor_factory.create_module(envs, device)
        critic = self.critic_factory.create_module(envs, device, use_action=False)
        kwargs = self.params.create_kwargs(self._transformer_data(envs, device))
        policy = _probabilistic_policy(self.actor_factory, actor, envs, kwargs)
        return self._get_algorithm_class()(policy=policy, critic=critic, **kwargs)


class A2CAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[A2CParams, A2C]):
    """Builds :class:`~tianshou.algorithm.A2C`; arguments as in the base class."""

    def _get_algorithm_class(self) -> type[A2C]:
        return A2C


class PPOAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[PPOParams, PPO]):
    """Builds :class:`~tianshou.algorithm.PPO`; arguments as in the base class."""

    def _get_algorithm_class(self) -> type[PPO]:
        return PPO


class NPGAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[NPGParams, NPG]):
    """Builds :class:`~tianshou.algorithm.NPG`; arguments as in the base class."""

    def _get_algorithm_class(self) -> type[NPG]:
        return NPG


class TRPOAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[TRPOParams, TRPO]):
    """Builds :class:`~tianshou.algorithm.TRPO`; arguments as in the base class."""

    def _get_algorithm_class(self) -> type[TRPO]:
        return TRPO


class DiscreteCriticOnlyOffPolicyAlgorithmFactory(
    OffPolicyAlgorithmFactory, Generic[TDiscreteCriticOnlyParams, TAlgorithm]
):
    """Base of the factories of Q-learning algorithms on discrete envs (DQN, IQN), whose only
    network is the Q-model.

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param model_factory: builds the Q-model (for IQN an implicit quantile network, e.g. by
        :class:`~tianshou.highlevel.module.special.ImplicitQuantileNetworkFactory`).
    :param optim_factory: the default optimizer factory factory.
    """

    def __init__(
        self,
        params: TDiscreteCriticOnlyParams,
        training_config: OffPolicyTrainingConfig,
        model_factory: ModuleFactory,
        optim_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optim_factory)
        self.params = params
        self.model_factory = model_factory

    @abstractmethod
    def _get_algorithm_class(self) -> type[TAlgorithm]:
        """The algorithm class to instantiate."""

    @abstractmethod
    def _create_policy(
        self,
        model: nn.Module,
        kwargs: dict[str, Any],
        action_space: gym.spaces.Discrete,
        observation_space: gym.Space,
    ) -> Policy:
        """The policy acting greedily on ``model``; pops its arguments from ``kwargs``."""

    def _create_algorithm(self, envs: Environments, device: TDevice) -> TAlgorithm:
        envs.get_type().assert_discrete(self)
        model = self.model_factory.create_module(envs, device)
        kwargs = self.params.create_kwargs(self._transformer_data(envs, device))
        action_space = cast(gym.spaces.Discrete, envs.get_action_space())
        policy = self._create_policy(model, kwargs, action_space, envs.get_observation_space())
        return self._get_algorithm_class()(policy=policy, **kwargs)


class DQNAlgorithmFactory(DiscreteCriticOnlyOffPolicyAlgorithmFactory[DQNParams, DQN]):
    """Builds :class:`~tianshou.algorithm.DQN` with a :class:`DiscreteQLearningPolicy`;
    arguments as in the base class.
    """

    def _get_algorithm_class(self) -> type[DQN]:
        return DQN

    def _create_policy(
        self,
        model: nn.Module,
        kwargs: dict[str, Any],
        action_space: gym.spaces.Discrete,
        observation_space: gym.Space,
    ) -> DiscreteQLearningPolicy:
        return DiscreteQLearningPolicy(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            **_pop_keys(kwargs, ("eps_training", "eps_inference")),
        )


class IQNAlgorithmFactory(DiscreteCriticOnlyOffPolicyAlgorithmFactory[IQNParams, IQN]):
    """Builds :class:`~tianshou.algorithm.IQN` with an :class:`IQNPolicy`; the model factory must
    build an :class:`~tianshou.utils.net.discrete.ImplicitQuantileNetwork`. Arguments as in the
    base class.
    """

    def _get_algorithm_class(self) -> type[IQN]:
        return IQN

    def _create_policy(
        self,
        model: nn.Module,
        kwargs: dict[str, Any],
        action_space: gym.spaces.Discrete,
        observation_space: gym.Space,
    ) -> IQNPolicy:
        keys = (
            "sample_size",
            "online_sample_size",
            "target_sample_size",
            "eps_training",
            "eps_inference",
        )
        if not isinstance(model, ImplicitQuantileNetwork):
            raise TypeError(
                f"IQN needs an ImplicitQuantileNetwork (e.g. from ImplicitQuantileNetworkFactory), "
                f"but the model factory built a {type(model).__name__}"
            )
        return IQNPolicy(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            **_pop_keys(kwargs, keys),
        )


class DDPGAlgorithmFactory(OffPolicyAlgorithmFactory):
    """Builds :class:`~tianshou.algorithm.DDPG` with a :class:`ContinuousDeterministicPolicy`.

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param actor_factory: builds the deterministic actor.
    :param critic_factory: builds the Q-critic ``Q(s, a)``.
    :param optim_factory: the default optimizer factory factory.
    """

    def __init__(
        self,
        params: DDPGParams,
        training_config: OffPolicyTrainingConfig,
        actor_factory: ActorFactory,
        critic_factory: CriticFactory,
        optim_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optim_factory)
        self.params = params
        self.actor_factory = actor_factory
        self.critic_factory = critic_factory

    def _create_algorithm(self, envs: Environments, device: TDevice) -> DDPG:
        actor = self.actor_factory.create_module(envs, device)
        critic = self.critic_factory.create_module(envs, device, use_action=True)
        kwargs = self.params.create_kwargs(self._transformer_data(envs, device))
        policy = ContinuousDeterministicPolicy(
            actor=actor,
            action_space=envs.get_action_space(),
            observation_space=envs.get_observation_space(),
            **_pop_keys(kwargs, _NOISY_POLICY_KEYS),
        )
        return DDPG(policy=policy, critic=critic, **kwargs)


class REDQAlgorithmFactory(OffPolicyAlgorithmFactory):
    """Builds :class:`~tianshou.algorithm.REDQ` with a :class:`REDQPolicy`.

    :param params: the algorithm's parameters (``ensemble_size`` sizes the critic ensemble).
    :param training_config: the training configuration.
    :param actor_factory: builds the Gaussian actor.
    :param critic_ensemble_factory: builds the ensemble of Q-critics.
    :param optim_factory: the default optimizer factory factory.
    """

    def __init__(
        self,
        params: REDQParams,
        training_config: OffPolicyTrainingConfig,
        actor_factory: ActorFactory,
        critic_ensemble_factory: CriticEnsembleFactory,
        optim_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optim_factory)
        self.params = params
        self.actor_factory = actor_factory
        self.critic_ensemble_factory = critic_ensemble_factory

    def _create_algorithm(self, envs: Environments, device: TDevice) -> REDQ:
        envs.get_type().assert_continuous(self)
        actor = self.actor_factory.create_module(envs, device)
        critic = self.critic_ensemble_factory.create_module(
            envs, device, self.params.ensemble_size, use_action=True
        )
        kwargs = self.params.create_kwargs(self._transformer_data(envs, device))
        policy = REDQPolicy(
            actor=actor,
            action_space=envs.get_action_space(),
            observation_space=envs.get_observation_space(),
            deterministic_eval=kwargs["deterministic_eval"],
            **_pop_keys(kwargs, _NOISY_POLICY_KEYS),
        )
        return REDQ(policy=policy, critic=critic, **kwargs)


class ActorDualCriticsOffPolicyAlgorithmFactory(
    OffPolicyAlgorithmFactory, Generic[TActorDualCriticsParams, TActorDualCriticsAlgorithm, TPolicy]
):
    """Base of the factories of off-policy algorithms with an actor and twin critics (TD3, SAC,
    DiscreteSAC).

    For continuous envs the critics are ``Q(s, a)``; for discrete envs they output one Q-value
    per action.

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param actor_factory: builds the actor.
    :param critic1_factory: builds the first critic.
    :param critic2_factory: builds the second critic.
    :param optim_factory: the default optimizer factory factory.
    """

    def __init__(
        self,
        params: TActorDualCriticsParams,
        training_config: OffPolicyTrainingConfig,
        actor_factory: ActorFactory,
        critic1_factory: CriticFactory,
        critic2_factory: CriticFactory,
        optim_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optim_factory)
        self.params = params
        self.actor_factory = actor_factory
        self.critic1_factory = critic1_factory
        self.critic2_factory = critic2_factory

    @abstractmethod
    def _get_algorithm_class(self) -> type[TActorDualCriticsAlgorithm]:
        """The algorithm class to instantiate."""

    @abstractmethod
    def _create_policy(
        self, actor: nn.Module, envs: Environments, kwargs: dict[str, Any]
    ) -> TPolicy:
        """The policy acting with ``actor``; pops its arguments from ``kwargs``."""

    def _create_critic(
        self, factory: CriticFactory, envs: Environments, device: TDevice
    ) -> nn.Module:
        continuous = envs.get_type().is_continuous()
        return factory.create_module(
            envs, device, use_action=continuous, discrete_last_size_use_action_shape=True
        )

    def _create_algorithm(self, envs: Environments, device: TDevice) -> TActorDualCriticsAlgorithm:
        actor = self.actor_factory.create_module(envs, device)
        critic1 = self._create_critic(self.critic1_factory, envs, device)
        critic2 = self._create_critic(self.critic2_factory, envs, device)
        kwargs = self.params.create_kwargs(self._transformer_data(envs, device))
        policy = self._create_policy(actor, envs, kwargs)
        return self._get_algorithm_class()(policy=policy, critic=critic1, critic2=critic2, **kwargs)


class TD3AlgorithmFactory(
    ActorDualCriticsOffPolicyAlgorithmFactory[TD3Params, TD3, ContinuousDeterministicPolicy]
):
    """Builds :class:`~tianshou.algorithm.TD3` with a :class:`ContinuousDeterministicPolicy`;
    arguments as in the base class.
    """

    def _get_algorithm_class(self) -> type[TD3]:
        return TD3

    def _create_policy(
        self, actor: nn.Module, envs: Environments, kwargs: dict[str, Any]
    ) -> ContinuousDeterministicPolicy:
        return ContinuousDeterministicPolicy(
            actor=actor,
            action_space=envs.get_action_space(),
            observation_space=envs.get_observation_space(),
            **_pop_keys(kwargs, _NOISY_POLICY_KEYS),
        )


class SACAlgorithmFactory(ActorDualCriticsOffPolicyAlgorithmFactory[SACParams, SAC, SACPolicy]):
    """Builds :class:`~tianshou.algorithm.SAC` with a :class:`SACPolicy`; arguments as in the
    base class.
    """

    def _get_algorithm_class(self) -> type[SAC]:
        return SAC

    def _create_policy(
        self, actor: nn.Module, envs: Environments, kwargs: dict[str, Any]
    ) -> SACPolicy:
        return SACPolicy(
            actor=actor,
            action_space=envs.get_action_space(),
            observation_space=envs.get_observation_space(),
            deterministic_eval=kwargs["deterministic_eval"],
            **_pop_keys(kwargs, ("exploration_noise", "action_scaling")),
        )


class DiscreteSACAlgorithmFactory(
    ActorDualCriticsOffPolicyAlgorithmFactory[DiscreteSACParams, DiscreteSAC, DiscreteSACPolicy]
):
    """Builds :class:`~tianshou.algorithm.DiscreteSAC` with a :class:`DiscreteSACPolicy`;
    arguments as in the base class.
    """

    def _get_algorithm_class(self) -> type[DiscreteSAC]:
        return DiscreteSAC

    def _create_policy(
        self, actor: nn.Module, envs: Environments, kwargs: dict[str, Any]
    ) -> DiscreteSACPolicy:
        return DiscreteSACPolicy(
            actor=actor,
            action_space=envs.get_action_space(),
            observation_space=envs.get_observation_space(),
            **_pop_keys(kwargs, ("deterministic_eval",)),
        )
