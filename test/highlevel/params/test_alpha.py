"""Tests of the learned entropy coefficient factory: target entropies per action-space type,
initial value, optimizer and learning rate."""

import math

import pytest
import torch

from tianshou.algorithm.modelfree.sac import AutoAlpha
from tianshou.algorithm.optim import AdamOptimizerFactory, RMSpropOptimizerFactory
from tianshou.highlevel.env import Environments
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.highlevel.params.optim import OptimizerFactoryFactoryRMSprop


def test_continuous_target_is_coefficient_times_action_dim(pendulum: Environments) -> None:
    alpha = AutoAlphaFactoryDefault().create_auto_alpha(pendulum, "cpu")
    assert isinstance(alpha, AutoAlpha)
    assert alpha.target_entropy == -1.0  # Pendulum has one action dimension
    scaled = AutoAlphaFactoryDefault(target_entropy_coefficient=-0.5)
    assert scaled.create_auto_alpha(pendulum, "cpu").target_entropy == -0.5


def test_discrete_target_is_coefficient_times_log_num_actions(cartpole: Environments) -> None:
    default = AutoAlphaFactoryDefault().create_auto_alpha(cartpole, "cpu")
    assert default.target_entropy == pytest.approx(-math.log(2))  # the published default -1.0
    exploring = AutoAlphaFactoryDefault(target_entropy_coefficient=0.98)
    assert exploring.create_auto_alpha(cartpole, "cpu").target_entropy == pytest.approx(
        0.98 * math.log(2)
    )


def test_initial_value_learning_rate_and_optimizer(pendulum: Environments) -> None:
    alpha = AutoAlphaFactoryDefault(lr=0.01, log_alpha=math.log(0.5)).create_auto_alpha(
        pendulum, "cpu"
    )
    assert alpha.value == pytest.approx(0.5)
    assert isinstance(alpha.optim_factory, AdamOptimizerFactory)
    assert alpha.optim_factory.lr == 0.01
    assert all(p.device == torch.device("cpu") for p in alpha.parameters())
    custom = AutoAlphaFactoryDefault(lr=0.02, optim=OptimizerFactoryFactoryRMSprop())
    custom_alpha = custom.create_auto_alpha(pendulum, "cpu")
    assert isinstance(custom_alpha.optim_factory, RMSpropOptimizerFactory)
    assert custom_alpha.optim_factory.lr == 0.02


def test_alpha_grows_while_entropy_is_below_target(pendulum: Environments) -> None:
    alpha = AutoAlphaFactoryDefault(lr=0.1).create_auto_alpha(pendulum, "cpu")
    alpha.update(torch.full((8,), -3.0))  # entropy -3 < target -1
    assert alpha.value > 1.0
