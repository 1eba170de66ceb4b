"""Tests of the actor factories: the modules they build act in real envs through a Collector."""

import pickle

import numpy as np
import pytest
import torch
from torch import nn

from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy, ProbabilisticActorPolicy
from tianshou.data import Collector, CollectStats
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import (
    ActorFactoryContinuousDeterministicNet,
    ActorFactoryContinuousGaussianNet,
    ActorFactoryDefault,
    ActorFactoryDiscreteNet,
    ActorFactoryTransientStorageDecorator,
    ActorFuture,
    ContinuousActorType,
    IntermediateModuleFactoryFromActorFactory,
)
from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousActorProbabilistic
from tianshou.utils.net.discrete import DiscreteActor


def collect(policy: object, envs: Environments, n_step: int = 60) -> CollectStats:
    collector = Collector[CollectStats](policy, envs.training_envs)  # type: ignore[arg-type]
    return collector.collect(n_step=n_step, reset_before_collect=True)


def hidden_widths(module: nn.Module) -> list[int]:
    return [m.out_features for m in module.modules() if isinstance(m, nn.Linear)]


def test_default_discrete_actor_acts_in_cartpole(cartpole: Environments) -> None:
    factory = ActorFactoryDefault(ContinuousActorType.GAUSSIAN, hidden_sizes=(16, 8))
    actor = factory.create_module(cartpole, "cpu")
    assert isinstance(actor, DiscreteActor)
    assert actor.softmax_output
    assert hidden_widths(actor) == [16, 8, 2]
    dist_fn = factory.create_dist_fn(cartpole)
    assert dist_fn is not None
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=dist_fn, action_space=cartpole.get_action_space()
    )
    stats = collect(policy, cartpole)
    assert stats.n_collected_steps == 60
    assert stats.n_collected_episodes >= 1


def test_default_discrete_actor_with_logits(cartpole: Environments) -> None:
    factory = ActorFactoryDefault(ContinuousActorType.UNSUPPORTED, discrete_softmax=False)
    actor = factory.create_module(cartpole, "cpu")
    logits, _ = actor(np.zeros((1, 4), dtype=np.float32))
    dist = factory.create_dist_fn(cartpole)(logits)  # type: ignore[misc]
    torch.testing.assert_close(dist.probs, torch.softmax(logits, -1))


def test_default_gaussian_actor_acts_in_pendulum_within_bounds(pendulum: Environments) -> None:
    factory = ActorFactoryDefault(ContinuousActorType.GAUSSIAN, continuous_unbounded=True)
    actor = factory.create_module(pendulum, "cpu")
    assert isinstance(actor, ContinuousActorProbabilistic)
    torch.testing.assert_close(actor.sigma_param.detach(), torch.full((1, 1), -0.5))
    (mu, sigma), _ = actor(np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32))
    assert mu.abs().max() < 0.1, "the mean head is scaled down so that initial means are near 0"
    torch.testing.assert_close(sigma, torch.full_like(sigma, np.exp(-0.5)))
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=factory.create_dist_fn(pendulum),  # type: ignore[arg-type]
        action_space=pendulum.get_action_space(),
    )
    collector = Collector[CollectStats](policy, pendulum.training_envs)
    collector.collect(n_step=40, reset_before_collect=True)
    assert collector.buffer is not None
    actions = policy.map_action(collector.buffer.act[: len(collector.buffer)])
    assert np.all(np.abs(actions) <= 2.0)


def test_gaussian_actor_with_conditioned_sigma(pendulum: Environments) -> None:
    actor = ActorFactoryContinuousGaussianNet([8], conditioned_sigma=True).create_module(
        pendulum, "cpu"
    )
    assert hasattr(actor, "sigma") and not hasattr(actor, "sigma_param")


def test_default_deterministic_actor_acts_in_pendulum(pendulum: Environments) -> None:
    factory = ActorFactoryDefault(ContinuousActorType.DETERMINISTIC, hidden_sizes=[8])
    actor = factory.create_module(pendulum, "cpu")
    assert isinstance(actor, ContinuousActorDeterministic)
    assert factory.create_dist_fn(pendulum) is None
    policy = ContinuousDeterministicPolicy(actor=actor, action_space=pendulum.get_action_space())
    assert collect(policy, pendulum, n_step=20).n_collected_steps == 20


def test_unsupported_continuous_actor_names_the_env_type(pendulum: Environments) -> None:
    factory = ActorFactoryDefault(ContinuousActorType.UNSUPPORTED)
    with pytest.raises(ValueError, match="does not support continuous environments"):
        factory.create_module(pendulum, "cpu")


@pytest.mark.parametrize(
    ("factory", "required"),
    [
        (ActorFactoryDiscreteNet([8]), "discrete"),
        (ActorFactoryContinuousGaussianNet([8]), "continuous"),
        (ActorFactoryContinuousDeterministicNet([8]), "continuous"),
    ],
)
def test_factory_on_the_wrong_env_type_names_the_required_type(
    factory: object, required: str, cartpole: Environments, pendulum: Environments
) -> None:
    envs = pendulum if required == "discrete" else cartpole
    with pytest.raises(AssertionError, match=f"requires {required} environments"):
        factory.create_module(envs, "cpu")  # type: ignore[attr-defined]


def test_activation_is_used(cartpole: Environments) -> None:
    actor = ActorFactoryDiscreteNet([8], activation=nn.Tanh).create_module(cartpole, "cpu")
    assert any(isinstance(m, nn.Tanh) for m in actor.modules())
    assert not any(isinstance(m, nn.ReLU) for m in actor.modules())


def test_transient_storage_keeps_the_last_actor_but_does_not_pickle_it(
    cartpole: Environments,
) -> None:
    future = ActorFuture()
    factory = ActorFactoryTransientStorageDecorator(ActorFactoryDiscreteNet([8]), future)
    actor = factory.create_module(cartpole, "cpu")
    assert future.actor is actor
    assert factory.create_dist_fn(cartpole) is not None
    clone = pickle.loads(pickle.dumps(factory))
    assert clone._actor_future is not future
    assert clone._actor_future.actor is None
    # a factory reading the future (a critic reusing the actor) shares it after unpickling
    reader_future, clone2 = pickle.loads(pickle.dumps((future, factory)))
    assert reader_future.actor is None
    assert clone2.create_module(cartpole, "cpu") is reader_future.actor


def test_intermediate_module_from_actor(cartpole: Environments) -> None:
    factory = IntermediateModuleFactoryFromActorFactory(ActorFactoryDiscreteNet([8]))
    module = factory.create_intermediate_module(cartpole, "cpu")
    assert isinstance(module.module, DiscreteActor)
    assert module.output_dim == 2


def test_intermediate_module_needs_a_vector_output_actor(cartpole: Environments) -> None:
    class PlainActorFactory(ActorFactoryDiscreteNet):
        def create_module(self, envs: Environments, device: object) -> nn.Module:
            return nn.Linear(4, 2)

    factory = IntermediateModuleFactoryFromActorFactory(PlainActorFactory([8]))
    with pytest.raises(TypeError, match=r"built a Linear.*ModuleWithVectorOutput"):
        factory.create_intermediate_module(cartpole, "cpu")
