"""Tests of the critic and critic-ensemble factories."""

import numpy as np
import pytest
import torch
from torch import nn

from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import ActorFactoryDefault, ActorFuture, ContinuousActorType
from tianshou.highlevel.module.critic import (
    CriticEnsembleFactoryContinuousNet,
    CriticEnsembleFactoryDefault,
    CriticFactoryContinuousNet,
    CriticFactoryDefault,
    CriticFactoryDiscreteNet,
    CriticFactoryReuseActor,
)
from tianshou.utils.net.continuous import ContinuousCritic
from tianshou.utils.net.discrete import DiscreteCritic

OBS_PENDULUM = np.zeros((5, 3), dtype=np.float32)
ACT_PENDULUM = np.zeros((5, 1), dtype=np.float32)
OBS_CARTPOLE = np.zeros((5, 4), dtype=np.float32)


def test_continuous_q_and_v_critics(pendulum: Environments) -> None:
    factory = CriticFactoryDefault(hidden_sizes=[16])
    q = factory.create_module(pendulum, "cpu", use_action=True)
    v = factory.create_module(pendulum, "cpu", use_action=False)
    assert isinstance(q, ContinuousCritic) and isinstance(v, ContinuousCritic)
    assert q(OBS_PENDULUM, ACT_PENDULUM).shape == (5, 1)
    assert v(OBS_PENDULUM).shape == (5, 1)
    first = q.preprocess.model.model[0]
    assert first.in_features == 4, "Q(s, a) takes observation and action concatenated"
    assert torch.count_nonzero(first.bias) == 0, "linear layers are initialised orthogonally"


@pytest.mark.parametrize(("use_action_shape", "width"), [(False, 1), (True, 2)])
def test_discrete_critic_output_width(
    cartpole: Environments, use_action_shape: bool, width: int
) -> None:
    critic = CriticFactoryDefault().create_module(
        cartpole, "cpu", use_action=False, discrete_last_size_use_action_shape=use_action_shape
    )
    assert isinstance(critic, DiscreteCritic)
    assert critic(OBS_CARTPOLE).shape == (5, width)


def test_discrete_critic_rejects_action_input(cartpole: Environments) -> None:
    with pytest.raises(ValueError, match="takes observations only"):
        CriticFactoryDiscreteNet([8]).create_module(cartpole, "cpu", use_action=True)


def test_critic_factory_on_the_wrong_env_type(cartpole: Environments) -> None:
    with pytest.raises(AssertionError, match="requires continuous environments"):
        CriticFactoryContinuousNet([8]).create_module(cartpole, "cpu", use_action=True)


def test_hidden_activation_is_used(pendulum: Environments) -> None:
    critic = CriticFactoryDefault([8], hidden_activation=nn.Tanh).create_module(
        pendulum, "cpu", use_action=True
    )
    assert any(isinstance(m, nn.Tanh) for m in critic.modules())


@pytest.mark.parametrize("task", ["cartpole", "pendulum"])
def test_reuse_actor_shares_the_actor_body(task: str, request: pytest.FixtureRequest) -> None:
    envs: Environments = request.getfixturevalue(task)
    actor = ActorFactoryDefault(ContinuousActorType.GAUSSIAN).create_module(envs, "cpu")
    critic = CriticFactoryReuseActor(ActorFuture(actor)).create_module(
        envs, "cpu", use_action=False
    )
    assert critic.preprocess is actor.get_preprocess_net()
    obs = OBS_CARTPOLE if task == "cartpole" else OBS_PENDULUM
    assert critic(obs).shape == (5, 1)


def test_reuse_actor_errors(pendulum: Environments) -> None:
    with pytest.raises(ValueError, match="was the actor built first"):
        CriticFactoryReuseActor(ActorFuture()).create_module(pendulum, "cpu", use_action=False)
    actor = ActorFactoryDefault(ContinuousActorType.GAUSSIAN).create_module(pendulum, "cpu")
    factory = CriticFactoryReuseActor(ActorFuture(actor))
    with pytest.raises(ValueError, match="V\\(s\\) only"):
        factory.create_module(pendulum, "cpu", use_action=True)
    assert "actor_future" not in str(factory)


def test_ensemble_members_are_independent(pendulum: Environments) -> None:
    critic = CriticEnsembleFactoryDefault(hidden_sizes=[16]).create_module(
        pendulum, "cpu", ensemble_size=4, use_action=True
    )
    obs = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    values = critic(obs, ACT_PENDULUM)
    assert values.shape == (4, 5, 1)
    assert len({tuple(np.round(member.detach().numpy().ravel(), 6)) for member in values}) == 4
    loss = values.sum()
    loss.backward()
    assert all(p.grad is not None for p in critic.parameters())


def test_ensemble_without_actions(pendulum: Environments) -> None:
    critic = CriticEnsembleFactoryContinuousNet([8]).create_module(
        pendulum, "cpu", ensemble_size=2, use_action=False
    )
    assert critic(OBS_PENDULUM).shape == (2, 5, 1)


def test_ensemble_errors(cartpole: Environments, pendulum: Environments) -> None:
    with pytest.raises(ValueError, match="continuous envs only"):
        CriticEnsembleFactoryDefault().create_module(cartpole, "cpu", 2, use_action=True)
    with pytest.raises(ValueError, match="ensemble_size must be at least 1, got 0"):
        CriticEnsembleFactoryDefault().create_module(pendulum, "cpu", 0, use_action=True)
