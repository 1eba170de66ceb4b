"""The fluent actor and critic settings that the per-algorithm experiment builders share.

Each ``_BuilderMixin*`` class adds the ``with_actor_factory*`` or ``with_*critic*_factory*``
methods that fit one kind of algorithm (Gaussian, deterministic or discrete-only actors; one,
two or an ensemble of critics, optionally sharing the actor's body) and turns the choice into
the module factories the algorithm factory is built with. They live in
:mod:`tianshou.highlevel.experiment`'s namespace as well, where the builders use them.
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
from tianshou.highlevel.module.critic import (
    CriticEnsembleFactory,
    CriticEnsembleFactoryDefault,
    CriticFactory,
    CriticFactoryDefault,
    CriticFactoryReuseActor,
)
from tianshou.utils.net.common import ModuleType


class _BuilderMixinActorFactory:
    """Lets a builder set the actor factory; provides the future of the actor it builds.

    :param continuous_actor_type: the actor the algorithm needs for continuous actions.
    :param discrete_softmax: discrete actors output probabilities (else logits).
    """

    def __init__(
        self, continuous_actor_type: ContinuousActorType, discrete_softmax: bool = True
    ) -> None:
        self._continuous_actor_type = continuous_actor_type
        self._discrete_softmax = discrete_softmax
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

    def get_actor_future(self) -> ActorFuture:
        """The future holding the actor once the experiment has built it."""
        return self._actor_future

    def _get_actor_factory(self) -> ActorFactory:
        factory = self._actor_factory
        if factory is None:
            factory = ActorFactoryDefault(
                self._continuous_actor_type, discrete_softmax=self._discrete_softmax
            )
        return ActorFactoryTransientStorageDecorator(factory, self._actor_future)


class _BuilderMixinActorFactory_ContinuousGaussian(_BuilderMixinActorFactory):
    """Actor factory setting for algorithms with a Gaussian actor for continuous actions (and a
    categorical one for discrete actions, where the algorithm supports them).
    """

    def __init__(self) -> None:
        super().__init__(ContinuousActorType.GAUSSIAN)

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

    def __init__(self) -> None:
        super().__init__(ContinuousActorType.DETERMINISTIC)

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
    """Actor factory setting for algorithms with discrete actions only.

    :param discrete_softmax: the default actor outputs probabilities (else logits).
    """

    def __init__(self, discrete_softmax: bool = True) -> None:
        super().__init__(ContinuousActorType.UNSUPPORTED, discrete_softmax=discrete_softmax)

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


class _BuilderMixinSingleCriticFactory:
    """Lets a builder set the factory of its (one) critic."""

    def __init__(self) -> None:
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

    def _get_critic_factory(self) -> CriticFactory:
        if self._critic_factory is None:
            return CriticFactoryDefault()
        return self._critic_factory


class _BuilderMixinSingleCriticCanUseActorFactory(_BuilderMixinSingleCriticFactory):
    """A single critic that may share the actor's body.

    :param actor_future_provider: provides the future of the actor (the builder itself).
    """

    def __init__(self, actor_future_provider: _BuilderMixinActorFactory) -> None:
        super().__init__()
        self._actor_future_provider = actor_future_provider

    def with_critic_factory_use_actor(self) -> Self:
        """Put the critic's head on the actor's body, sharing its layers."""
        self._critic_factory = CriticFactoryReuseActor(
            self._actor_future_provider.get_actor_future()
        )
        return self


class _BuilderMixinDualCriticFactory:
    """Lets a builder set the factories of its two critics, together or one by one.

    :param actor_future_provider: provides the future of the actor (the builder itself).
    """

    def __init__(self, actor_future_provider: _BuilderMixinActorFactory) -> None:
        self._critic1 = _BuilderMixinSingleCriticCanUseActorFactory(actor_future_provider)
        self._critic2 = _BuilderMixinSingleCriticCanUseActorFactory(actor_future_provider)

    def with_common_critic_factory(self, critic_factory: CriticFactory) -> Self:
        """Build both critics with ``critic_factory``."""
        self._critic1.with_critic_factory(critic_factory)
        self._critic2.with_critic_factory(critic_factory)
        return self

    def with_common_critic_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP for both critics (independent networks of the same shape)."""
        self._critic1.with_critic_factory_default(hidden_sizes, hidden_activation)
        self._critic2.with_critic_factory_default(hidden_sizes, hidden_activation)
        return self

    def with_common_critic_factory_use_actor(self) -> Self:
        """Put both critics' heads on the actor's body."""
        self._critic1.with_critic_factory_use_actor()
        self._critic2.with_critic_factory_use_actor()
        return self

    def with_critic1_factory(self, critic_factory: CriticFactory) -> Self:
        """Set the factory of the first critic."""
        self._critic1.with_critic_factory(critic_factory)
        return self

    def with_critic1_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP for the first critic."""
        self._critic1.with_critic_factory_default(hidden_sizes, hidden_activation)
        return self

    def with_critic1_factory_use_actor(self) -> Self:
        """Put the first critic's head on the actor's body."""
        self._critic1.with_critic_factory_use_actor()
        return self

    def with_critic2_factory(self, critic_factory: CriticFactory) -> Self:
        """Set the factory of the second critic."""
        self._critic2.with_critic_factory(critic_factory)
        return self

    def with_critic2_factory_default(
        self,
        hidden_sizes: Sequence[int] = CriticFactoryDefault.DEFAULT_HIDDEN_SIZES,
        hidden_activation: ModuleType = nn.ReLU,
    ) -> Self:
        """Use the default MLP for the second critic."""
        self._critic2.with_critic_factory_default(hidden_sizes, hidden_activation)
        return self

    def with_critic2_factory_use_actor(self) -> Self:
        """Put the second critic's head on the actor's body."""
        self._critic2.with_critic_factory_use_actor()
        return self

    def _get_critic_factories(self) -> tuple[CriticFactory, CriticFactory]:
        return self._critic1._get_critic_factory(), self._critic2._get_critic_factory()


class _BuilderMixinCriticEnsembleFactory:
    """Lets a builder set the factory of its critic ensemble (REDQ)."""

    def __init__(self) -> None:
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

    def _get_critic_ensemble_factory(self) -> CriticEnsembleFactory:
        if self._critic_ensemble_factory is None:
            return CriticEnsembleFactoryDefault()
        return self._critic_ensemble_factory
