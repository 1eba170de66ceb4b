"""The network settings of the builders: which factories each mixin contributes, in which
order, and what sharing the actor's body requires."""

from typing import Any

import pytest

from tianshou.highlevel.builder_mixins import (
    _BuilderMixinActorFactory_ContinuousDeterministic,
    _BuilderMixinActorFactory_ContinuousGaussian,
    _BuilderMixinCriticEnsembleFactory,
    _BuilderMixinDualCriticFactory,
    _BuilderMixinSingleCriticCanUseActorFactory,
)
from tianshou.highlevel.module.actor import (
    ActorFactoryDefault,
    ActorFactoryTransientStorageDecorator,
    ContinuousActorType,
)
from tianshou.highlevel.module.critic import (
    CriticEnsembleFactoryDefault,
    CriticFactoryDefault,
    CriticFactoryReuseActor,
)


class GaussianActorWithCritic(
    _BuilderMixinActorFactory_ContinuousGaussian, _BuilderMixinSingleCriticCanUseActorFactory
):
    """The network part of an actor-critic builder (e.g. PPO's)."""


class DeterministicActorWithTwoCritics(
    _BuilderMixinActorFactory_ContinuousDeterministic, _BuilderMixinDualCriticFactory
):
    """The network part of a builder with two critics (e.g. TD3's)."""


class GaussianActorWithEnsemble(
    _BuilderMixinActorFactory_ContinuousGaussian, _BuilderMixinCriticEnsembleFactory
):
    """The network part of REDQ's builder."""


class CriticWithoutActor(_BuilderMixinSingleCriticCanUseActorFactory):
    """A critic setting on a builder that builds no actor."""


def test_factories_come_in_the_order_of_the_bases_with_defaults_where_none_was_set() -> None:
    actor, critic = GaussianActorWithCritic()._get_network_factories()
    assert isinstance(actor, ActorFactoryTransientStorageDecorator)
    inner: Any = actor.actor_factory
    assert isinstance(inner, ActorFactoryDefault)
    assert inner.continuous_actor_type is ContinuousActorType.GAUSSIAN
    assert isinstance(critic, CriticFactoryDefault)

    actor, critic1, critic2 = DeterministicActorWithTwoCritics()._get_network_factories()
    assert isinstance(actor, ActorFactoryTransientStorageDecorator)
    assert isinstance(critic1, CriticFactoryDefault) and isinstance(critic2, CriticFactoryDefault)
    assert critic1 is not critic2

    actor, ensemble = GaussianActorWithEnsemble()._get_network_factories()
    assert isinstance(ensemble, CriticEnsembleFactoryDefault)


def test_dual_critic_settings_apply_to_one_or_both_critics() -> None:
    builder = DeterministicActorWithTwoCritics()
    shared = CriticFactoryDefault(hidden_sizes=(3,))
    assert builder.with_common_critic_factory(shared) is builder
    _, critic1, critic2 = builder._get_network_factories()
    assert critic1 is shared and critic2 is shared

    builder.with_common_critic_factory_default(hidden_sizes=(4,)).with_critic2_factory(shared)
    _, critic1, critic2 = builder._get_network_factories()
    assert isinstance(critic1, CriticFactoryDefault) and critic1.hidden_sizes == (4,)
    assert critic2 is shared

    builder.with_common_critic_factory_use_actor()
    _, critic1, critic2 = builder._get_network_factories()
    for critic in (critic1, critic2):
        assert isinstance(critic, CriticFactoryReuseActor)
        assert critic.actor_future is builder.get_actor_future()


def test_the_actor_factory_feeds_the_future_that_a_sharing_critic_reads() -> None:
    builder = GaussianActorWithCritic().with_critic_factory_use_actor()
    actor, critic = builder._get_network_factories()
    assert isinstance(actor, ActorFactoryTransientStorageDecorator)
    assert isinstance(critic, CriticFactoryReuseActor)
    assert critic.actor_future is builder.get_actor_future()
    assert actor._actor_future is builder.get_actor_future()


def test_sharing_the_actor_needs_a_builder_with_an_actor() -> None:
    with pytest.raises(TypeError, match="CriticWithoutActor builds no actor"):
        CriticWithoutActor().with_critic_factory_use_actor()


class UnboundedGaussianActorWithTwoCritics(
    _BuilderMixinActorFactory_ContinuousGaussian, _BuilderMixinDualCriticFactory
):
    """The network part of SAC's builder, whose default Gaussian is unbounded and conditioned."""

    _default_actor_continuous_unbounded = True
    _default_actor_continuous_conditioned_sigma = True


def test_default_networks_size_every_network_of_the_builder_as_its_defaults() -> None:
    actor, critic = GaussianActorWithCritic().with_default_networks((5,))._get_network_factories()
    inner: Any = actor.actor_factory  # type: ignore[union-attr]
    assert tuple(inner.hidden_sizes) == (5,)
    assert not inner.continuous_unbounded
    assert isinstance(critic, CriticFactoryDefault) and tuple(critic.hidden_sizes) == (5,)

    builder = UnboundedGaussianActorWithTwoCritics().with_default_networks((6, 6))
    actor, critic1, critic2 = builder._get_network_factories()
    inner = actor.actor_factory  # type: ignore[union-attr]
    assert tuple(inner.hidden_sizes) == (6, 6)
    assert inner.continuous_unbounded and inner.continuous_conditioned_sigma
    for critic in (critic1, critic2):
        assert isinstance(critic, CriticFactoryDefault) and tuple(critic.hidden_sizes) == (6, 6)

    _, ensemble = GaussianActorWithEnsemble().with_default_networks((7,))._get_network_factories()
    assert isinstance(ensemble, CriticEnsembleFactoryDefault)
    assert tuple(ensemble.hidden_sizes) == (7,)
