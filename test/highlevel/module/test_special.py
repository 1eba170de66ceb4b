"""Tests of ImplicitQuantileNetworkFactory: the network it builds acts in CartPole as IQN's."""

import pytest

from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.data import Collector, CollectStats
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import (
    ActorFactoryContinuousDeterministicNet,
    IntermediateModuleFactoryFromActorFactory,
)
from tianshou.highlevel.module.intermediate import IntermediateModule, IntermediateModuleFactory
from tianshou.highlevel.module.special import ImplicitQuantileNetworkFactory
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import ImplicitQuantileNetwork


class MLPBodyFactory(IntermediateModuleFactory):
    def create_intermediate_module(self, envs: Environments, device: object) -> IntermediateModule:
        body = Net(state_shape=envs.get_observation_shape(), hidden_sizes=[16]).to(device)
        return IntermediateModule(body, body.output_dim)


def test_iqn_network_acts_in_cartpole(cartpole: Environments) -> None:
    factory = ImplicitQuantileNetworkFactory(MLPBodyFactory(), hidden_sizes=[8], num_cosines=4)
    net = factory.create_module(cartpole, "cpu")
    assert isinstance(net, ImplicitQuantileNetwork)
    (quantiles, taus), _ = net(cartpole.training_envs.reset()[0], sample_size=6)
    assert quantiles.shape == (2, 2, 6)
    assert taus.shape == (2, 6)
    policy = IQNPolicy(model=net, action_space=cartpole.get_action_space(), sample_size=4)
    stats = Collector[CollectStats](policy, cartpole.training_envs).collect(
        n_step=30, reset_before_collect=True
    )
    assert stats.n_collected_steps == 30


def test_iqn_needs_discrete_envs(pendulum: Environments) -> None:
    body = IntermediateModuleFactoryFromActorFactory(ActorFactoryContinuousDeterministicNet([8]))
    with pytest.raises(AssertionError, match="requires discrete environments"):
        ImplicitQuantileNetworkFactory(body).create_module(pendulum, "cpu")
