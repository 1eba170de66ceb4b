"""The factories of the off-policy actor-critic algorithms: DDPG (actor + Q-critic), REDQ (actor
+ critic ensemble) and TD3, SAC and DiscreteSAC (actor + twin critics).
"""

from abc import abstractmethod
from typing import Generic, TypeVar

from torch import nn

from tianshou.algorithm import DDPG, REDQ, SAC, TD3, DiscreteSAC
from tianshou.algorithm.algorithm_base import Policy
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.sac import SACPolicy
from tianshou.algorithm.modelfree.td3 import ActorDualCriticsOffPolicyAlgorithm
from tianshou.highlevel._algorithm_factory_base import (
    OffPolicyAlgorithmFactory,
    algorithm_kwargs,
    created_exploration_noise,
    policy_spaces,
    resolved_action_scaling,
)
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import ActorFactory
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.module.critic import CriticEnsembleFactory, CriticFactory
from tianshou.highlevel.params.algorithm_params import (
    DDPGParams,
    DiscreteSACParams,
    Params,
    ParamTransformerData,
    REDQParams,
    SACParams,
    TD3Params,
)
from tianshou.highlevel.params.optim import OptimizerFactoryFactory

TActorDualCriticsParams = TypeVar("TActorDualCriticsParams", bound=Params)
TAlgorithm = TypeVar("TAlgorithm", bound=ActorDualCriticsOffPolicyAlgorithm)
TPolicy = TypeVar("TPolicy", bound=Policy)


def _deterministic_policy(
    actor: nn.Module, envs: Environments, params: DDPGParams | TD3Params, data: ParamTransformerData
) -> ContinuousDeterministicPolicy:
    """The deterministic policy of DDPG and TD3, exploring with the params' noise."""
    return ContinuousDeterministicPolicy(
        actor=actor,
        exploration_noise=created_exploration_noise(params, data),
        action_scaling=resolved_action_scaling(params, data),
        action_bound_method=params.action_bound_method,
        **policy_spaces(envs),
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
        data = self._transformer_data(envs, device)
        kwargs = algorithm_kwargs(DDPG, self.params, data)
        policy = _deterministic_policy(actor, envs, self.params, data)
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
        params = self.params
        actor = self.actor_factory.create_module(envs, device)
        critic = self.critic_ensemble_factory.create_module(
            envs, device, params.ensemble_size, use_action=True
        )
        data = self._transformer_data(envs, device)
        kwargs = algorithm_kwargs(REDQ, params, data)
        policy = REDQPolicy(
            actor=actor,
            deterministic_eval=params.deterministic_eval,
            exploration_noise=created_exploration_noise(params, data),
            action_scaling=resolved_action_scaling(params, data),
            action_bound_method=params.action_bound_method,
            **policy_spaces(envs),
        )
        return REDQ(policy=policy, critic=critic, **kwargs)


class ActorDualCriticsOffPolicyAlgorithmFactory(
    OffPolicyAlgorithmFactory, Generic[TActorDualCriticsParams, TAlgorithm, TPolicy]
):
    """Base of the factories of off-policy algorithms with an actor and twin critics (TD3, SAC,
    DiscreteSAC).

    A subclass names the algorithm class in ``_algorithm_class`` and builds the policy in
    :meth:`_create_policy`. For continuous envs the critics are ``Q(s, a)``; for discrete envs
    they output one Q-value per action.

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param actor_factory: builds the actor.
    :param critic1_factory: builds the first critic.
    :param critic2_factory: builds the second critic.
    :param optim_factory: the default optimizer factory factory.
    """

    _algorithm_class: type[TAlgorithm]

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
    def _create_policy(
        self, actor: nn.Module, envs: Environments, data: ParamTransformerData
    ) -> TPolicy:
        """The policy acting with ``actor`` in ``envs``; ``data`` resolves its parameters."""

    def _create_critic(
        self, factory: CriticFactory, envs: Environments, device: TDevice
    ) -> nn.Module:
        continuous = envs.get_type().is_continuous()
        return factory.create_module(
            envs, device, use_action=continuous, discrete_last_size_use_action_shape=True
        )

    def _create_algorithm(self, envs: Environments, device: TDevice) -> TAlgorithm:
        actor = self.actor_factory.create_module(envs, device)
        critic1 = self._create_critic(self.critic1_factory, envs, device)
        critic2 = self._create_critic(self.critic2_factory, envs, device)
        data = self._transformer_data(envs, device)
        kwargs = algorithm_kwargs(self._algorithm_class, self.params, data)
        policy = self._create_policy(actor, envs, data)
        return self._algorithm_class(policy=policy, critic=critic1, critic2=critic2, **kwargs)


class TD3AlgorithmFactory(
    ActorDualCriticsOffPolicyAlgorithmFactory[TD3Params, TD3, ContinuousDeterministicPolicy]
):
    """Builds :class:`~tianshou.algorithm.TD3` with a :class:`ContinuousDeterministicPolicy`;
    arguments as in the base class.
    """

    _algorithm_class = TD3

    def _create_policy(
        self, actor: nn.Module, envs: Environments, data: ParamTransformerData
    ) -> ContinuousDeterministicPolicy:
        return _deterministic_policy(actor, envs, self.params, data)


class SACAlgorithmFactory(ActorDualCriticsOffPolicyAlgorithmFactory[SACParams, SAC, SACPolicy]):
    """Builds :class:`~tianshou.algorithm.SAC` with a :class:`SACPolicy`; arguments as in the
    base class.
    """

    _algorithm_class = SAC

    def _create_policy(
        self, actor: nn.Module, envs: Environments, data: ParamTransformerData
    ) -> SACPolicy:
        return SACPolicy(
            actor=actor,
            exploration_noise=created_exploration_noise(self.params, data),
            deterministic_eval=self.params.deterministic_eval,
            action_scaling=resolved_action_scaling(self.params, data),
            **policy_spaces(envs),
        )


class DiscreteSACAlgorithmFactory(
    ActorDualCriticsOffPolicyAlgorithmFactory[DiscreteSACParams, DiscreteSAC, DiscreteSACPolicy]
):
    """Builds :class:`~tianshou.algorithm.DiscreteSAC` with a :class:`DiscreteSACPolicy`;
    arguments as in the base class.
    """

    _algorithm_class = DiscreteSAC

    def _create_policy(
        self, actor: nn.Module, envs: Environments, data: ParamTransformerData
    ) -> DiscreteSACPolicy:
        return DiscreteSACPolicy(
            actor=actor, deterministic_eval=self.params.deterministic_eval, **policy_spaces(envs)
        )
