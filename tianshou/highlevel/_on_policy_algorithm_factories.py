"""The factories of the on-policy algorithms: REINFORCE (an actor) and the actor-critic ones
(A2C, PPO, NPG, TRPO: an actor and a state-value critic, one optimizer over both).

All act with a :class:`ProbabilisticActorPolicy`; an actor-critic factory differs from another
only in the algorithm class it instantiates.
"""

from typing import Generic, TypeVar

from torch import nn

from tianshou.algorithm import A2C, NPG, PPO, TRPO, Reinforce
from tianshou.algorithm.modelfree.a2c import ActorCriticOnPolicyAlgorithm
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.highlevel._algorithm_factory_base import (
    OnPolicyAlgorithmFactory,
    algorithm_kwargs,
    policy_spaces,
    resolved_action_scaling,
)
from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import ActorFactory
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.module.critic import CriticFactory
from tianshou.highlevel.params.algorithm_params import (
    A2CParams,
    ActorCriticOnPolicyParams,
    NPGParams,
    OnPolicyAlgorithmParams,
    ParamTransformerData,
    PPOParams,
    ReinforceParams,
    TRPOParams,
)
from tianshou.highlevel.params.optim import OptimizerFactoryFactory

TActorCriticParams = TypeVar("TActorCriticParams", bound=ActorCriticOnPolicyParams)
TAlgorithm = TypeVar("TAlgorithm", bound=ActorCriticOnPolicyAlgorithm)


def _probabilistic_policy(
    actor_factory: ActorFactory,
    actor: nn.Module,
    envs: Environments,
    params: OnPolicyAlgorithmParams,
    data: ParamTransformerData,
) -> ProbabilisticActorPolicy:
    """The stochastic policy of the on-policy algorithms, sampling from the distribution that
    ``actor_factory`` pairs with ``actor``."""
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
        deterministic_eval=params.deterministic_eval,
        action_scaling=resolved_action_scaling(params, data),
        action_bound_method=params.action_bound_method,
        **policy_spaces(envs),
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
        data = self._transformer_data(envs, device)
        kwargs = algorithm_kwargs(Reinforce, self.params, data)
        policy = _probabilistic_policy(self.actor_factory, actor, envs, self.params, data)
        return Reinforce(policy=policy, **kwargs)


class ActorCriticOnPolicyAlgorithmFactory(
    OnPolicyAlgorithmFactory, Generic[TActorCriticParams, TAlgorithm]
):
    """Base of the factories of on-policy actor-critic algorithms (A2C, PPO, NPG, TRPO).

    A subclass names the algorithm class in ``_algorithm_class``. The actor is built before the
    critic, so that a critic sharing the actor's body
    (:class:`~tianshou.highlevel.module.critic.CriticFactoryReuseActor`, fed by an
    :class:`~tianshou.highlevel.module.actor.ActorFactoryTransientStorageDecorator`) finds it.
    One optimizer trains actor and critic (shared parameters counted once).

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param actor_factory: builds the stochastic actor (and its distribution function).
    :param critic_factory: builds the state-value critic ``V(s)``.
    :param optimizer_factory: the default optimizer factory factory.
    """

    _algorithm_class: type[TAlgorithm]

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

    def _create_algorithm(self, envs: Environments, device: TDevice) -> TAlgorithm:
        actor = self.actor_factory.create_module(envs, device)
        critic = self.critic_factory.create_module(envs, device, use_action=False)
        data = self._transformer_data(envs, device)
        kwargs = algorithm_kwargs(self._algorithm_class, self.params, data)
        policy = _probabilistic_policy(self.actor_factory, actor, envs, self.params, data)
        return self._algorithm_class(policy=policy, critic=critic, **kwargs)


class A2CAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[A2CParams, A2C]):
    """Builds :class:`~tianshou.algorithm.A2C`; arguments as in the base class."""

    _algorithm_class = A2C


class PPOAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[PPOParams, PPO]):
    """Builds :class:`~tianshou.algorithm.PPO`; arguments as in the base class."""

    _algorithm_class = PPO


class NPGAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[NPGParams, NPG]):
    """Builds :class:`~tianshou.algorithm.NPG`; arguments as in the base class."""

    _algorithm_class = NPG


class TRPOAlgorithmFactory(ActorCriticOnPolicyAlgorithmFactory[TRPOParams, TRPO]):
    """Builds :class:`~tianshou.algorithm.TRPO`; arguments as in the base class."""

    _algorithm_class = TRPO
