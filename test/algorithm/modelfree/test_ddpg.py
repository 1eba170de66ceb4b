"""Tests of the exploration-noise policies, the off-policy actor-critic base and DDPG."""

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from test.algorithm.modelfree.test_sac import OBS_DIM, Critic, filled_buffer
from tianshou.algorithm.modelfree.ddpg import DDPG, ContinuousDeterministicPolicy, DDPGTrainingStats
from tianshou.algorithm.optim import TorchOptimizerFactory
from tianshou.data import Batch
from tianshou.exploration import BaseNoise, GaussianNoise
from tianshou.utils.torch_utils import policy_within_training_step

SPACE = gym.spaces.Box(-2.0, 2.0, shape=(2,))


class DeterministicActor(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 16), nn.ReLU(), nn.Linear(16, 2), nn.Tanh())

    def forward(self, obs, state=None, info=None):
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), state


class ConstantNoise(BaseNoise):
    def __call__(self, size: tuple[int, ...]) -> np.ndarray:
        return np.full(size, 0.25)

    def reset(self) -> None:
        pass


def make_policy(**kwargs) -> ContinuousDeterministicPolicy:
    torch.manual_seed(0)
    return ContinuousDeterministicPolicy(actor=DeterministicActor(), action_space=SPACE, **kwargs)


def make_ddpg(lr: float = 0.05) -> DDPG:
    policy = make_policy()
    torch.manual_seed(1)
    sgd = TorchOptimizerFactory(torch.optim.SGD, lr=lr)
    return DDPG(
        policy=policy, policy_optim=sgd, critic=Critic(), critic_optim=sgd, tau=0.1, gamma=0.9
    )


class TestPolicy:
    def test_no_noise_by_default_and_default_is_gaussian_of_std_0_1(self) -> None:
        assert make_policy().exploration_noise is None
        noise = make_policy(exploration_noise="default").exploration_noise
        assert isinstance(noise, GaussianNoise)
        np.random.seed(0)
        draws = noise((20_000,))
        assert abs(draws.mean()) < 0.005 and abs(draws.std() - 0.1) < 0.005

    def test_noise_is_added_to_numpy_actions(self) -> None:
        policy = make_policy(exploration_noise=ConstantNoise())
        act = np.zeros((3, 2))
        assert np.allclose(policy.add_exploration_noise(act, Batch()), 0.25)
        policy.set_exploration_noise(None)
        assert policy.add_exploration_noise(act, Batch()) is act

    def test_bad_noise_and_space(self) -> None:
        with pytest.raises(TypeError, match="exploration_noise"):
            make_policy(exploration_noise=0.1)
        with pytest.raises(ValueError, match="Box"):
            ContinuousDeterministicPolicy(
                actor=DeterministicActor(), action_space=gym.spaces.Discrete(2)
            )

    def test_forward_and_map_action(self) -> None:
        policy = make_policy()
        result = policy(Batch(obs=np.zeros((4, OBS_DIM), np.float32)))
        assert result.act.shape == (4, 2)
        assert np.allclose(policy.map_action(np.array([[1.0, -1.0]])), [[2.0, -2.0]])


def reference_ddpg_update(ddpg: DDPG, batch: Batch, lr: float = 0.05) -> None:
    """A naive DDPG step: TD target from the target nets, critic step, actor step, Polyak."""
    obs, act = torch.as_tensor(batch.obs), torch.as_tensor(batch.act)
    with torch.no_grad():
        act_next = ddpg.actor_old(batch.obs_next)[0]
        not_done = 1.0 - torch.as_tensor(batch.terminated, dtype=torch.float32)
        target = torch.as_tensor(batch.rew, dtype=torch.float32) + ddpg.gamma * not_done * (
            ddpg.critic_old(batch.obs_next, act_next).flatten()
        )
    ddpg.critic.zero_grad()
    ((ddpg.critic(obs, act).flatten() - target) ** 2).mean().backward()
    with torch.no_grad():
        for param in ddpg.critic.parameters():
            param -= lr * param.grad
    ddpg.policy.zero_grad()
    (-ddpg.critic(obs, ddpg.policy.actor(obs)[0]).mean()).backward()
    with torch.no_grad():
        for param in ddpg.policy.parameters():
            param -= lr * param.grad
        for source, lagged in ((ddpg.critic, ddpg.critic_old), (ddpg.policy.actor, ddpg.actor_old)):
            for param, target_param in zip(source.parameters(), lagged.parameters(), strict=True):
                target_param.mul_(1 - ddpg.tau).add_(ddpg.tau * param)


class TestDDPG:
    def test_update_matches_a_naive_reference(self) -> None:
        ddpg = make_ddpg()
        reference = copy.deepcopy(ddpg)
        buffer = filled_buffer()
        for _ in range(3):
            batch, _ = buffer.sample(0)
            with policy_within_training_step(ddpg.policy):
                stats = ddpg.update(buffer, 0)
            reference_ddpg_update(reference, batch)
        assert isinstance(stats, DDPGTrainingStats)
        for (name, mine), theirs in zip(
            ddpg.named_parameters(), reference.parameters(), strict=True
        ):
            assert torch.allclose(mine, theirs, atol=1e-5), name

    def test_nan_reward_raises(self) -> None:
        ddpg = make_ddpg()
        buffer = filled_buffer()
        buffer.rew[0] = np.nan
        with pytest.raises(FloatingPointError), policy_within_training_step(ddpg.policy):
            ddpg.update(buffer, 0)

    def test_bad_arguments(self) -> None:
        sgd = TorchOptimizerFactory(torch.optim.SGD, lr=0.1)
        with pytest.raises(ValueError, match="tau"):
            DDPG(policy=make_policy(), policy_optim=sgd, critic=Critic(), critic_optim=sgd, tau=2)
