"""Tests of the default collector factory."""

import torch

from tianshou.algorithm import DQN
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.highlevel.env import Environments
from tianshou.highlevel.params.collector import CollectorFactoryDefault
from tianshou.utils.net.common import Net


def make_dqn(envs: Environments) -> DQN:
    net = Net(state_shape=envs.get_observation_shape(), action_shape=envs.get_action_shape())
    policy = DiscreteQLearningPolicy(
        model=net, action_space=envs.get_action_space(), eps_training=1.0
    )
    return DQN(policy=policy, optim=AdamOptimizerFactory())


def test_default_collector_collects_into_the_given_buffer(cartpole: Environments) -> None:
    algorithm = make_dqn(cartpole)
    buffer = VectorReplayBuffer(64, len(cartpole.training_envs))
    collector = CollectorFactoryDefault().create_collector(
        algorithm, cartpole.training_envs, buffer, exploration_noise=True
    )
    assert isinstance(collector, Collector)
    assert collector.buffer is buffer
    assert collector.exploration_noise
    collector.reset()
    stats = collector.collect(n_step=10)
    assert stats.n_collected_steps == 10
    assert len(buffer) == 10


def test_test_collector_without_buffer_or_noise(cartpole: Environments) -> None:
    torch.manual_seed(0)
    collector = CollectorFactoryDefault().create_collector(make_dqn(cartpole), cartpole.test_envs)
    assert not collector.exploration_noise
    collector.reset()
    assert collector.collect(n_episode=2).n_collected_episodes == 2
