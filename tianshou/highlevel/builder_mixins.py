"""The fluent network settings that the per-algorithm experiment builders share.

Each ``_BuilderMixin*`` class adds the ``with_actor_factory*`` or ``with_*critic*_factory*``
methods that fit one kind of algorithm (Gaussian, deterministic or discrete-only actors; one,
two or an ensemble of critics, optionally sharing the actor's body) and contributes the module
factories chosen with them to :meth:`_BuilderMixinNetworkFactories._get_network_factories`,
from which :mod:`tianshou.highlevel.experiment_builders` builds the algorithm factories.
"""

from collections.abc import Sequence
from typing import Self

from torch import nn

from tianshou.highlevel.module.actor import (
    ActorFactory,
    ActorFactoryDefault,
    ActorFactoryTransientStorageDecorator,
    ActorFuture,
    ContinuousActorType,
)
from tianshou.highlevel.module.core import ModuleFactory
from tianshou.highlevel.module.critic import (
    CriticEnsembleFactory,
    CriticEnsembleFactoryDefault,
    CriticFactory,
    CriticFactoryDefault,
    CriticFactoryReuseActor,
)
from tianshou.utils.net.common import ModuleType

NetworkFactory = ModuleFactory | CriticFactory | CriticEnsembleFactory
"""A factory of one of the networks that an algorithm factory takes (actor, critic, ...)."""


class _BuilderMixinNetworkFactories:
    """The root of the network mixins: collects the network factories of a builder.

    Each mixin's :meth:`_get_network_factories` puts its own factories before those of the
    mixins after it in the method resolution order, so a builder whose bases list the actor
    mixin before the critic mixin yields ``(actor, critic)``: the order in which the algorithm
    factories take them, after the parameters and the training config.
    """

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        """The factories of the algorithm's networks, in the algorithm factory's order."""
        return ()

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        """Build each of the algorithm's networks (actor, critics, ...) as its default MLP with
        hidden layers of ``hidden_sizes``, as the builder builds it when none is chosen.

        Each network mixin sets its own networks and passes on to the next, so that one call
        sizes all of a builder's networks (e.g. for a search over network sizes).

        :param hidden_sizes: widths of the hidden layers of every network.
        """
        return self


class _BuilderMixinActorFactory(_BuilderMixinNetworkFactories):
    """Lets a builder set the actor factory; provides the future of the actor it builds.

    Subclasses (and builders) configure it by class attributes: ``_continuous_actor_type``,
    the actor the algorithm needs for continuous actions; ``_discrete_softmax``, whether discrete
    actors output probabilities (else logits); ``_default_actor_continuous_unbounded`` and
    ``_default_actor_continuous_conditioned_sigma``, the Gaussian of the actor built when
    none was chosen.
    """

    _continuous_actor_type: ContinuousActorType
    _discrete_softmax: bool = True
    _default_actor_continuous_unbounded: bool = False
    _default_actor_continuous_conditioned_sigma: bool = False

    def __init__(self) -> None:
        super().__init__()
        self._actor_factory: ActorFactory | None = None
        self._actor_future = ActorFuture()

    def with_actor_factory(self, actor_factory: ActorFactory) -> Self:
        """Set the factory that builds the actor."""
        self._actor_factory = actor_factory
        return self

    def _with_actor_factory_default(
        self,
        hidden_sizes: Sequence[int],
        hidden_activation: ModuleType = nn.ReLU,
        continuous_unbounded: bool = False,
        continuous_conditioned_sigma: bool = False,
    ) -> Self:
        self._actor_factory = ActorFactoryDefault(
            self._continuous_actor_type,
            hidden_sizes,
            hidden_activation=hidden_activation,
            continuous_unbounded=continuous_unbounded,
            continuous_conditioned_sigma=continuous_conditioned_sigma,
            discrete_softmax=self._discrete_softmax,
        )
        return self

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        self._with_actor_factory_default(
            hidden_sizes,
            continuous_unbounded=self._default_actor_continuous_unbounded,
            continuous_conditioned_sigma=self._default_actor_continuous_conditioned_sigma,
        )
        return super().with_default_networks(hidden_sizes)

    def get_actor_future(self) -> ActorFuture:
        """The future holding the actor once the experiment has built it."""
        return self._actor_future

    def _get_actor_factory(self) -> ActorFactory:
        factory = self._actor_factory
        if factory is None:
            factory = ActorFactoryDefault(
                self._continuous_actor_type,
                continuous_unbounded=self._default_actor_continuous_unbounded,
                continuous_conditioned_sigma=self._default_actor_continuous_conditioned_sigma,
                discrete_softmax=self._discrete_softmax,
            )
        return ActorFactoryTransientStorageDecorator(factory, self._actor_future)

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        return (self._get_actor_factory(), *super()._get_network_factories())


class _BuilderMixinActorFactory_ContinuousGaussian(_BuilderMixinActorFactory):
    """Actor factory setting for algorithms with a Gaussian actor for continuous actions (and a
    categorical one for discrete actions, where the algorithm supports them).
    """

    _continuous_actor_type = ContinuousActorType.GAUSSIAN

    def with_actor_factory_default(
        self,
        hidden_sizes: Sequence[int] = ActorFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
        continuous_unbounded: bool = False,
        continuous_conditioned_sigma: bool = False,
    ) -> Self:
        """Use the default MLP actor.

        :param hidden_sizes: widths of the hidden layers.
        :param hidden_activation: activation after each hidden layer.
        :param continuous_unbounded: leave the Gaussian's mean unsquashed (else ``tanh`` keeps
            it in ``[-1, 1]``).
        :param continuous_conditioned_sigma: compute the standard deviation from the
            observation (else it is a free parameter per action dimension).
        """
        return self._with_actor_factory_default(
            hidden_sizes,
            hidden_activation,
            continuous_unbounded=continuous_unbounded,
            continuous_conditioned_sigma=continuous_conditioned_sigma,
        )


class _BuilderMixinActorFactory_ContinuousDeterministic(_BuilderMixinActorFactory):
    """Actor factory setting for algorithms with a deterministic actor (DDPG, TD3)."""

    _continuous_actor_type = ContinuousActorType.DETERMINISTIC

    def with_actor_factory_default(
        self,
        hidden_sizes: Sequence[int] = ActorFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP actor.

        :param hidden_sizes: widths of the hidden layers.
        :param hidden_activation: activation after each hidden layer.
        """
        return self._with_actor_factory_default(hidden_sizes, hidden_activation)


class _BuilderMixinActorFactory_DiscreteOnly(_BuilderMixinActorFactory):
    """Actor factory setting for algorithms with discrete actions only."""

    _continuous_actor_type = ContinuousActorType.UNSUPPORTED

    def with_actor_factory_default(
        self,
        hidden_sizes: Sequence[int] = ActorFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP actor.

        :param hidden_sizes: widths of the hidden layers.
        :param hidden_activation: activation after each hidden layer.
        """
        return self._with_actor_factory_default(hidden_sizes, hidden_activation)


def _critic_reusing_actor(builder: object) -> CriticFactoryReuseActor:
    """A critic factory putting the critic's head on the body of ``builder``'s actor."""
    if not isinstance(builder, _BuilderMixinActorFactory):
        raise TypeError(f"{type(builder).__name__} builds no actor whose body a critic could share")
    return CriticFactoryReuseActor(builder.get_actor_future())


class _BuilderMixinSingleCriticFactory(_BuilderMixinNetworkFactories):
    """Lets a builder set the factory of its (one) critic."""

    def __init__(self) -> None:
        super().__init__()
        self._critic_factory: CriticFactory | None = None

    def with_critic_factory(self, critic_factory: CriticFactory) -> Self:
        """Set the factory that builds the critic."""
        self._critic_factory = critic_factory
        return self

    def with_critic_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP critic.

        :param hidden_sizes: widths of the hidden layers.
        :param hidden_activation: activation after each hidden layer.
        """
        self._critic_factory = CriticFactoryDefault(hidden_sizes, hidden_activation)
        return self

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        self.with_critic_factory_default(hidden_sizes)
        return super().with_default_networks(hidden_sizes)

    def _get_critic_factory(self) -> CriticFactory:
        if self._critic_factory is None:
            return CriticFactoryDefault()
        return self._critic_factory

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        return (self._get_critic_factory(), *super()._get_network_factories())


class _BuilderMixinSingleCriticCanUseActorFactory(_BuilderMixinSingleCriticFactory):
    """A single critic that may share the actor's body (of the builder's actor mixin)."""

    def with_critic_factory_use_actor(self) -> Self:
        """Put the critic's head on the actor's body, sharing its layers."""
        self._critic_factory = _critic_reusing_actor(self)
        return self


class _BuilderMixinDualCriticFactory(_BuilderMixinNetworkFactories):
    """Lets a builder set the factories of its two critics, together or one by one; a critic
    may share the body of the builder's actor.
    """

    def __init__(self) -> None:
        super().__init__()
        self._critic1_factory: CriticFactory | None = None
        self._critic2_factory: CriticFactory | None = None

    def with_common_critic_factory(self, critic_factory: CriticFactory) -> Self:
        """Build both critics with ``critic_factory``."""
        return self.with_critic1_factory(critic_factory).with_critic2_factory(critic_factory)

    def with_common_critic_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP for both critics (independent networks of the same shape)."""
        self.with_critic1_factory_default(hidden_sizes, hidden_activation)
        return self.with_critic2_factory_default(hidden_sizes, hidden_activation)

    def with_common_critic_factory_use_actor(self) -> Self:
        """Put both critics' heads on the actor's body."""
        return self.with_critic1_factory_use_actor().with_critic2_factory_use_actor()

    def with_critic1_factory(self, critic_factory: CriticFactory) -> Self:
        """Set the factory of the first critic."""
        self._critic1_factory = critic_factory
        return self

    def with_critic1_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP for the first critic."""
        return self.with_critic1_factory(CriticFactoryDefault(hidden_sizes, hidden_activation))

    def with_critic1_factory_use_actor(self) -> Self:
        """Put the first critic's head on the actor's body."""
        return self.with_critic1_factory(_critic_reusing_actor(self))

    def with_critic2_factory(self, critic_factory: CriticFactory) -> Self:
        """Set the factory of the second critic."""
        self._critic2_factory = critic_factory
        return self

    def with_critic2_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP for the second critic."""
        return self.with_critic2_factory(CriticFactoryDefault(hidden_sizes, hidden_activation))

    def with_critic2_factory_use_actor(self) -> Self:
        """Put the second critic's head on the actor's body."""
        return self.with_critic2_factory(_critic_reusing_actor(self))

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        self.with_common_critic_factory_default(hidden_sizes)
        return super().with_default_networks(hidden_sizes)

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        critics = (self._critic1_factory, self._critic2_factory)
        return (
            *(CriticFactoryDefault() if critic is None else critic for critic in critics),
            *super()._get_network_factories(),
        )


class _BuilderMixinCriticEnsembleFactory(_BuilderMixinNetworkFactories):
    """Lets a builder set the factory of its critic ensemble (REDQ)."""

    def __init__(self) -> None:
        super().__init__()
        self._critic_ensemble_factory: CriticEnsembleFactory | None = None

    def with_critic_ensemble_factory(self, factory: CriticEnsembleFactory) -> Self:
        """Set the factory that builds the critic ensemble."""
        self._critic_ensemble_factory = factory
        return self

    def with_critic_ensemble_factory_default(
        self, hidden_sizes: Sequence[int] = CriticEnsembleFactoryDefault.DEFAULT_HIDDEN_SIZES
    ) -> Self:
        """Use the default MLP ensemble.

        :param hidden_sizes: widths of the hidden layers of each member.
        """
        self._critic_ensemble_factory = CriticEnsembleFactoryDefault(hidden_sizes)
        return self

    def with_default_networks(self, hidden_sizes: Sequence[int]) -> Self:
        self.with_critic_ensemble_factory_default(hidden_sizes)
        return super().with_default_networks(hidden_sizes)

    def _get_network_factories(self) -> tuple[NetworkFactory, ...]:
        ensemble = self._critic_ensemble_factory
        if ensemble is None:
            ensemble = CriticEnsembleFactoryDefault()
        return (ensemble, *super()._get_network_factories())
