"""Tests of TD3BC: the normalised behaviour-cloning actor loss by hand, TD3's critic step and
delayed actor, bad input, and learning Pendulum offline from the SAC expert's data."""

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from tianshou.algorithm.imitation.td3_bc import TD3BC
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.td3 import TD3, TD3TrainingStats
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, InfoStats, ReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OfflineTrainer, OfflineTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLoggerContext
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 2
SPACE = gym.spaces.Box(-1.0, 1.0, shape=(1,))
SGD = TorchOptimizerFactory(torch.optim.SGD, lr=0.05)


class FixedActor(nn.Module):
    """Outputs the trainable action ``a0`` for every observation."""

    def __init__(self, a0: float) -> None:
        super().__init__()
        self.a0 = nn.Parameter(torch.tensor([a0]))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        return self.a0.expand(len(obs), 1), state


class LinearCritic(nn.Module):
    """``Q(s, a) = w . cat(s, a) + b`` with the given initial weights."""

    def __init__(self, weights: list[float], bias: float = 0.0) -> None:
        super().__init__()
        self.linear = nn.Linear(OBS_DIM + 1, 1)
        with torch.no_grad():
            self.linear.weight.copy_(torch.tensor([weights]))
            self.linear.bias.fill_(bias)

    def forward(self, obs: Any, act: Any = None, info: Any = None) -> torch.Tensor:
        obs = torch.as_tensor(obs, dtype=torch.float32)
        act = torch.as_tensor(act, dtype=torch.float32)
        return self.linear(torch.cat([obs, act], dim=-1))


def make_td3bc(a0: float = 0.3, cls: type = TD3BC, critic_optim: Any = SGD, **kwargs: Any) -> Any:
    policy = ContinuousDeterministicPolicy(actor=FixedActor(a0), action_space=SPACE)
    return cls(
        policy=policy,
        policy_optim=SGD,
        critic=LinearCritic([1.0, -1.0, 2.0]),
        critic_optim=critic_optim,
        critic2=LinearCritic([0.5, 0.5, -1.0], bias=0.5),
        **kwargs,
    )


OBS = np.array([[1.0, 0.0], [0.5, 2.0], [-1.0, -1.0]], dtype=np.float32)
DATA_ACT = np.array([[0.1], [-0.5], [0.9]], dtype=np.float32)


def hand_batch() -> Batch:
    return Batch(obs=OBS, act=DATA_ACT, info=Batch())


def filled_buffer(steps: int = 16) -> ReplayBuffer:
    buffer = ReplayBuffer(32)
    rng = np.random.default_rng(0)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=rng.normal(size=OBS_DIM).astype(np.float32),
                act=rng.uniform(-1, 1, size=1).astype(np.float32),
                rew=float(rng.normal()),
                terminated=t % 5 == 4,
                truncated=False,
                obs_next=rng.normal(size=OBS_DIM).astype(np.float32),
                info={},
            )
        )
    return buffer


class TestActorLoss:
    def test_loss_is_the_normalised_q_term_plus_the_squared_error_by_hand(self) -> None:
        a0, alpha = 0.3, 2.5
        algorithm = make_td3bc(a0, alpha=alpha)
        # Q = s0 - s1 + 2 a0 for the three observations
        q = np.array([1.0 + 0.6, 0.5 - 2.0 + 0.6, -1.0 + 1.0 + 0.6])
        lmbda = alpha / np.abs(q).mean()
        mse = np.mean((a0 - DATA_ACT.flatten()) ** 2)
        loss = algorithm._actor_loss(hand_batch())
        assert loss.item() == pytest.approx(-lmbda * q.mean() + mse, rel=1e-6)

    def test_the_q_scale_is_a_constant_in_the_gradient(self) -> None:
        a0, alpha = 0.3, 2.5
        algorithm = make_td3bc(a0, alpha=alpha)
        q = np.array([1.6, -0.9, 0.6])
        lmbda = alpha / np.abs(q).mean()
        algorithm._actor_loss(hand_batch()).backward()
        # d/da0 of -lmbda * mean(s0 - s1 + 2 a0) + mean((a0 - a)^2) with lmbda held fixed
        expected = -lmbda * 2.0 + 2.0 * np.mean(a0 - DATA_ACT.flatten())
        actor = algorithm.policy.actor
        assert actor.a0.grad.item() == pytest.approx(expected, rel=1e-5)
        assert algorithm.critic.linear.weight.grad is None

    def test_alpha_zero_is_behaviour_cloning(self) -> None:
        algorithm = make_td3bc(0.3, alpha=0.0)
        mse = np.mean((0.3 - DATA_ACT.flatten()) ** 2)
        assert algorithm._actor_loss(hand_batch()).item() == pytest.approx(mse, rel=1e-6)
        for _ in range(200):
            algorithm.policy_optim.step(algorithm._actor_loss(hand_batch()))
        assert algorithm.policy.actor.a0.item() == pytest.approx(DATA_ACT.mean(), abs=1e-4)

    def test_actions_of_another_shape_are_refused(self) -> None:
        algorithm = make_td3bc()
        batch = Batch(obs=OBS, act=np.zeros((3, 2), dtype=np.float32), info=Batch())
        with pytest.raises(ValueError, match=r"\(3, 2\).*\(3, 1\)"):
            algorithm._actor_loss(batch)


class TestUpdate:
    def test_critics_step_as_in_td3(self) -> None:
        buffer = filled_buffer()
        results = []
        for cls in (TD3, TD3BC):
            algorithm = make_td3bc(cls=cls, policy_noise=0.0)
            with policy_within_training_step(algorithm.policy):
                stats = algorithm.update(buffer, 0)
            results.append((stats, [p.detach().clone() for p in algorithm.critic.parameters()]))
        (td3_stats, td3_critic), (bc_stats, bc_critic) = results
        assert bc_stats.critic1_loss == pytest.approx(td3_stats.critic1_loss, rel=1e-6)
        assert bc_stats.critic2_loss == pytest.approx(td3_stats.critic2_loss, rel=1e-6)
        for a, b in zip(td3_critic, bc_critic, strict=True):
            assert torch.allclose(a, b)

    def test_actor_steps_every_update_actor_freq_updates_with_the_bc_loss(self) -> None:
        # critics that stay fixed, so the reported loss is that of the actor before its step
        frozen_critics = TorchOptimizerFactory(torch.optim.SGD, lr=0.0)
        algorithm = make_td3bc(update_actor_freq=2, critic_optim=frozen_critics)
        buffer = filled_buffer()
        changed, losses = [], []
        for _ in range(4):
            before = algorithm.policy.actor.a0.item()
            with torch.no_grad():
                expected = algorithm._actor_loss(buffer[:]).item()
            with policy_within_training_step(algorithm.policy):
                stats = algorithm.update(buffer, 0)
            assert isinstance(stats, TD3TrainingStats)
            changed.append(algorithm.policy.actor.a0.item() != before)
            losses.append((stats.actor_loss, expected))
        assert changed == [True, False, True, False]
        assert losses[0][0] == pytest.approx(losses[0][1], rel=1e-5)
        assert losses[1][0] == losses[0][0]
        assert losses[2][0] == pytest.approx(losses[2][1], rel=1e-5)
        assert losses[2][0] < losses[0][0]

    def test_runs_with_the_offline_trainer(self) -> None:
        algorithm = make_td3bc()
        trainer = algorithm.create_trainer(OfflineTrainerParams(buffer=filled_buffer()))
        assert isinstance(trainer, OfflineTrainer)

    def test_negative_alpha_is_refused(self) -> None:
        with pytest.raises(ValueError, match="alpha must be non-negative"):
            make_td3bc(alpha=-1.0)

    def test_td3_arguments_are_checked(self) -> None:
        with pytest.raises(ValueError, match="update_actor_freq"):
            make_td3bc(update_actor_freq=0)


# ---------------------------------------------------------------- learning Pendulum offline
def pendulum_td3bc(seed: int = 0) -> TD3BC:
    """TD3BC for Pendulum-v1 as the learning test trains it (64x64 networks, alpha 2.5)."""
    env = gym.make("Pendulum-v1")
    obs_dim = env.observation_space.shape[0]
    act_dim = env.action_space.shape[0]
    torch.manual_seed(seed)
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[64, 64]),
        action_shape=act_dim,
        max_action=1.0,
    )

    def critic() -> ContinuousCritic:
        body = Net(state_shape=obs_dim, action_shape=act_dim, hidden_sizes=[64, 64], concat=True)
        return ContinuousCritic(preprocess_net=body)

    policy = ContinuousDeterministicPolicy(
        actor=actor, exploration_noise=None, action_space=env.action_space
    )
    return TD3BC(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.99,
        policy_noise=0.2,
        update_actor_freq=2,
        noise_clip=0.5,
        alpha=2.5,
    )


def train_td3bc_on_pendulum(
    seed: int, max_epochs: int, stop_at: float | None, updates_per_epoch: int = 500
) -> InfoStats:
    """TD3BC on the SAC expert's Pendulum data (20,000 transitions), ``updates_per_epoch``
    updates of 256 samples per epoch, tested on 10 episodes after each epoch."""
    from test.offline.gather_pendulum_data import load_expert_buffer

    buffer = load_expert_buffer()
    np.random.seed(seed)
    algorithm = pendulum_td3bc(seed)
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(10)])
    test_envs.seed(seed + 1)
    return algorithm.run_training(
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=updates_per_epoch,
            batch_size=256,
            test_step_num_episodes=10,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_td3bc_learns_pendulum_from_the_expert_data() -> None:
    """Budget: at most 5 epochs of 500 updates; threshold -400 (the published bar is -1200).

    Seeds 0, 1 and 2 reached -309, -343 and -315 after 3 epochs (1,500 updates) and -173, -196
    and -194 after 5; the expert's data scores about -160, an untrained actor about -1,400.
    """
    result = train_td3bc_on_pendulum(seed=0, max_epochs=5, stop_at=-400.0)
    assert result.best_reward >= -400.0


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_td3bc_training_repeats_its_trace(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=str(tmp_path))
    traces = []
    for _ in range(2):
        with TraceLoggerContext() as trace:
            train_td3bc_on_pendulum(seed=3, max_epochs=2, stop_at=None, updates_per_epoch=50)
        traces.append(trace.get_log())
    snapshot.check(traces[0], "td3bc", create_reference_result=True)
    result = snapshot.check(traces[1], "td3bc")
    assert result.success and result.first_difference is None
    assert len(traces[0].log_lines) > 3
