"""Tests of the intrinsic curiosity wrapper factory: it wraps off- and on-policy algorithms
with the matching ICM wrapper, which then trains, and rejects what it cannot wrap."""

import numpy as np
import pytest
import torch
from torch.distributions import Categorical

from tianshou.algorithm import DQN, Algorithm, ICMOffPolicyWrapper, ICMOnPolicyWrapper, Reinforce
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.module.intermediate import IntermediateModule, IntermediateModuleFactory
from tianshou.highlevel.params.algorithm_wrapper import AlgorithmWrapperFactoryIntrinsicCuriosity
from tianshou.highlevel.params.optim import (
    OptimizerFactoryFactoryAdam,
    OptimizerFactoryFactoryRMSprop,
)
from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.discrete import DiscreteActor
from tianshou.utils.torch_utils import policy_within_training_step


class FeatureNetFactory(IntermediateModuleFactory):
    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        net = Net(state_shape=envs.get_observation_shape(), hidden_sizes=[16]).to(device)
        return IntermediateModule(net, net.get_output_dim())


class PlainFeatureNetFactory(IntermediateModuleFactory):
    """A feature net returning a tensor rather than ``(features, state)``."""

    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        obs_dim = int(np.prod(envs.get_observation_shape()))
        return IntermediateModule(MLP(input_dim=obs_dim, output_dim=8).to(device), 8)


def icm_factory(
    feature_net_factory: IntermediateModuleFactory | None = None, **kwargs
) -> AlgorithmWrapperFactoryIntrinsicCuriosity:
    return AlgorithmWrapperFactoryIntrinsicCuriosity(
        feature_net_factory=feature_net_factory or FeatureNetFactory(),
        hidden_sizes=[8],
        lr=1e-3,
        lr_scale=1.0,
        reward_scale=0.1,
        forward_loss_weight=0.2,
        **kwargs,
    )


def make_dqn(envs: Environments) -> DQN:
    net = Net(state_shape=envs.get_observation_shape(), action_shape=envs.get_action_shape())
    policy = DiscreteQLearningPolicy(
        model=net, action_space=envs.get_action_space(), eps_training=1.0
    )
    return DQN(policy=policy, optim=AdamOptimizerFactory())


def make_reinforce(envs: Environments) -> Reinforce:
    body = Net(state_shape=envs.get_observation_shape(), hidden_sizes=[16])
    actor = DiscreteActor(preprocess_net=body, action_shape=envs.get_action_shape())
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=Categorical, action_space=envs.get_action_space()
    )
    return Reinforce(policy=policy, optim=AdamOptimizerFactory())


def fill(algorithm: Algorithm, envs: Environments, steps: int = 32) -> VectorReplayBuffer:
    buffer = VectorReplayBuffer(steps, len(envs.training_envs))
    collector = Collector(algorithm, envs.training_envs, buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(algorithm.policy):
        collector.collect(n_step=steps)
    return buffer


@pytest.mark.parametrize("feature_net_factory", [FeatureNetFactory(), PlainFeatureNetFactory()])
def test_off_policy_algorithm_gets_the_off_policy_wrapper(
    cartpole: Environments, feature_net_factory: IntermediateModuleFactory
) -> None:
    dqn = make_dqn(cartpole)
    wrapped = icm_factory(feature_net_factory).create_wrapped_algorithm(
        dqn, cartpole, OptimizerFactoryFactoryAdam(), "cpu"
    )
    assert isinstance(wrapped, ICMOffPolicyWrapper)
    assert wrapped.wrapped_algorithm is dqn
    assert wrapped.model.action_dim == 2
    assert (wrapped.lr_scale, wrapped.reward_scale, wrapped.forward_loss_weight) == (1, 0.1, 0.2)
    assert wrapped.optim.torch_optimizer.param_groups[0]["lr"] == 1e-3
    buffer = fill(wrapped, cartpole)
    with policy_within_training_step(wrapped.policy):
        stats = wrapped.update(buffer, sample_size=16)
    assert stats.icm_loss > 0  # type: ignore[attr-defined]


def test_on_policy_algorithm_gets_the_on_policy_wrapper(cartpole: Environments) -> None:
    reinforce = make_reinforce(cartpole)
    wrapped = icm_factory().create_wrapped_algorithm(
        reinforce, cartpole, OptimizerFactoryFactoryAdam(), "cpu"
    )
    assert isinstance(wrapped, ICMOnPolicyWrapper)
    buffer = fill(wrapped, cartpole)
    with policy_within_training_step(wrapped.policy):
        stats = wrapped.update(buffer, batch_size=16, repeat=1)
    assert stats.icm_loss > 0  # type: ignore[attr-defined]


def test_optimizer_own_or_experiment_default(cartpole: Environments) -> None:
    default_used = icm_factory().create_wrapped_algorithm(
        make_dqn(cartpole), cartpole, OptimizerFactoryFactoryRMSprop(), "cpu"
    )
    assert isinstance(default_used.optim.torch_optimizer, torch.optim.RMSprop)
    own = icm_factory(optim=OptimizerFactoryFactoryAdam()).create_wrapped_algorithm(
        make_dqn(cartpole), cartpole, OptimizerFactoryFactoryRMSprop(), "cpu"
    )
    assert isinstance(own.optim.torch_optimizer, torch.optim.Adam)


def test_continuous_envs_are_rejected(pendulum: Environments, cartpole: Environments) -> None:
    with pytest.raises(AssertionError, match="requires discrete environments"):
        icm_factory().create_wrapped_algorithm(
            make_dqn(cartpole), pendulum, OptimizerFactoryFactoryAdam(), "cpu"
        )


def test_icm_factory_takes_keyword_arguments_only() -> None:
    with pytest.raises(TypeError, match="positional"):
        AlgorithmWrapperFactoryIntrinsicCuriosity(  # type: ignore[misc]
            FeatureNetFactory(), [8], 1e-3, 1.0, 0.1, 0.2
        )
