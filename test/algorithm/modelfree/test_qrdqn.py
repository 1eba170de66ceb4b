"""Tests of QRDQN: the quantile Huber loss against a naive double loop, targets, and learning."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from test.algorithm.modelfree.cartpole_q_learning import (
    assert_training_repeats_its_trace,
    train_on_cartpole,
)
from tianshou.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy, quantile_huber_loss
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import (
    Batch,
    PrioritizedReplayBuffer,
    ReplayBuffer,
)
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

NUM_ACTIONS = 2
NUM_QUANTILES = 4


def naive_quantile_huber(quantiles: np.ndarray, targets: np.ndarray, taus: np.ndarray) -> float:
    """Per-sample quantile Huber loss of one sample, by explicit loops over (i, j)."""
    total = 0.0
    for i, q in enumerate(quantiles):
        row = 0.0
        for t in targets:
            u = t - q
            huber = 0.5 * u * u if abs(u) <= 1.0 else abs(u) - 0.5
            row += abs(taus[i] - (1.0 if u < 0 else 0.0)) * huber
        total += row
    return total / len(quantiles)


class QuantileNet(nn.Module):
    """A linear map of 2-d observations to ``(B, NUM_ACTIONS, NUM_QUANTILES)`` quantiles."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(2, NUM_ACTIONS * NUM_QUANTILES)

    def forward(self, obs, state=None, info=None):
        out = self.net(torch.as_tensor(obs, dtype=torch.float32))
        return out.view(-1, NUM_ACTIONS, NUM_QUANTILES), state


def make_qrdqn(**kwargs) -> QRDQN:
    torch.manual_seed(0)
    policy = QRDQNPolicy(model=QuantileNet(), action_space=gym.spaces.Discrete(NUM_ACTIONS))
    return QRDQN(
        policy=policy,
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        num_quantiles=NUM_QUANTILES,
        **kwargs,
    )


def filled_buffer(buffer: ReplayBuffer | None = None, steps: int = 8) -> ReplayBuffer:
    """Episodes of length 4 (the last step terminated), rewards 1, 2, 3, ..."""
    buffer = buffer if buffer is not None else ReplayBuffer(16)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=np.array([t, 1.0], dtype=np.float32),
                act=t % NUM_ACTIONS,
                rew=float(t + 1),
                terminated=t % 4 == 3,
                truncated=False,
                obs_next=np.array([t + 1, 1.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


class TestQuantileHuberLoss:
    @pytest.mark.parametrize("seed", [0, 1, 2])
    def test_matches_a_naive_double_loop_batched(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        quantiles = rng.normal(scale=2.0, size=(5, 3))  # |u| on both sides of the threshold 1
        targets = rng.normal(scale=2.0, size=(5, 4))
        taus = rng.uniform(size=(5, 3))
        loss, priority = quantile_huber_loss(
            torch.tensor(quantiles), torch.tensor(targets), torch.tensor(taus)
        )
        expected = [naive_quantile_huber(quantiles[b], targets[b], taus[b]) for b in range(5)]
        np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-12)
        huber = [
            [
                [0.5 * u * u if abs(u) <= 1 else abs(u) - 0.5 for u in targets[b] - q]
                for q in quantiles[b]
            ]
            for b in range(5)
        ]
        np.testing.assert_allclose(priority.numpy(), np.sum(huber, axis=2).mean(1), rtol=1e-12)

    def test_hand_computed_values(self) -> None:
        # one quantile at tau = 0.25 and value 0, targets 0.5 and -3:
        # u = 0.5 -> 0.25 * 0.125; u = -3 -> 0.75 * 2.5
        loss, priority = quantile_huber_loss(
            torch.tensor([[0.0]]), torch.tensor([[0.5, -3.0]]), torch.tensor([0.25])
        )
        assert loss.item() == pytest.approx(0.25 * 0.125 + 0.75 * 2.5)
        assert priority.item() == pytest.approx(0.125 + 2.5)

    def test_gradient_moves_a_quantile_towards_its_fraction(self) -> None:
        # targets 0, 10, ..., 70 (far apart: the Huber loss is linear between them): the
        # 0.25-quantile has zero gradient between the 2nd and 3rd target, and above them a
        # positive one (gradient descent moves it down)
        quantile = torch.tensor([[15.0], [25.0]], requires_grad=True)
        targets = (10.0 * torch.arange(8.0)).expand(2, -1)
        loss, _ = quantile_huber_loss(quantile, targets, torch.tensor([0.25]))
        loss.sum().backward()
        assert quantile.grad is not None
        assert quantile.grad.view(-1).tolist() == pytest.approx([0.0, 3 * 0.75 - 5 * 0.25])

    def test_mismatched_batch_sizes_are_refused(self) -> None:
        with pytest.raises(ValueError, match="same batch size"):
            quantile_huber_loss(torch.zeros(2, 3), torch.zeros(3, 3), torch.zeros(3))


class TestQRDQN:
    def test_policy_acts_on_the_mean_of_the_quantiles(self) -> None:
        policy = make_qrdqn().policy
        logits = torch.tensor([[[0.0, 0.0, 0.0, 4.0], [1.0, 1.0, 1.0, 1.0]]])
        assert policy.compute_q_value(logits, None).tolist() == [[1.0, 1.0]]
        masked = policy.compute_q_value(logits, np.array([[False, True]]))
        assert masked.tolist() == [[-np.inf, 1.0]]
        assert make_qrdqn().tau_hat.view(-1).tolist() == [0.125, 0.375, 0.625, 0.875]

    def test_num_quantiles_below_two_is_refused(self) -> None:
        with pytest.raises(ValueError, match="num_quantiles"):
            make_qrdqn_with(num_quantiles=1)

    def test_targets_are_the_target_quantiles_of_the_greedy_action(self) -> None:
        algorithm = make_qrdqn(gamma=0.5, n_step_return_horizon=2, target_update_freq=10)
        buffer = filled_buffer()
        indices = np.array([0, 2, 3, 6])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        model = algorithm.policy.model
        with torch.no_grad():
            next_q, _ = model(np.array([[2.0, 1.0]]))
        bootstrap = next_q[0, next_q[0].mean(1).argmax()]
        expected = torch.stack(
            [
                1 + 0.5 * 2 + 0.25 * bootstrap,  # bootstraps at the obs_next of step 1
                torch.full((NUM_QUANTILES,), 3 + 0.5 * 4),  # step 3 ends the episode
                torch.full((NUM_QUANTILES,), 4.0),  # a terminal transition
                torch.full((NUM_QUANTILES,), 7 + 0.5 * 8),  # step 7 ends the episode
            ]
        )
        torch.testing.assert_close(batch.returns.float(), expected)

    def test_a_truncated_transition_bootstraps_from_its_next_observation(self) -> None:
        algorithm = make_qrdqn(gamma=0.5, n_step_return_horizon=3, target_update_freq=10)
        buffer = ReplayBuffer(8)
        for t in range(3):
            buffer.add(
                Batch(
                    obs=np.array([t, 1.0], dtype=np.float32),
                    act=0,
                    rew=1.0,
                    terminated=False,
                    truncated=t == 1,
                    obs_next=np.array([t + 1, 1.0], dtype=np.float32),
                    info={},
                )
            )
        indices = np.array([0])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        with torch.no_grad():
            next_q, _ = algorithm.policy.model(np.array([[2.0, 1.0]]))
        bootstrap = next_q[0, next_q[0].mean(1).argmax()]
        # two rewards up to the truncation, then the value of the truncated step's obs_next
        torch.testing.assert_close(batch.returns[0].float(), 1 + 0.5 + 0.25 * bootstrap)

    def test_update_minimises_the_shared_loss_and_sets_priorities(self) -> None:
        algorithm = make_qrdqn(target_update_freq=2)
        buffer = PrioritizedReplayBuffer(16, alpha=0.6, beta=0.4)
        filled_buffer(buffer)
        losses = []
        for _ in range(30):
            with policy_within_training_step(algorithm.policy):
                losses.append(algorithm.update(buffer, 8).loss)
        assert losses[-1] < losses[0]
        batch, indices = buffer.sample(0)
        batch = algorithm._preprocess_batch(batch, buffer, indices)
        expected_loss, expected_priority = quantile_huber_loss(
            algorithm.policy(batch).logits[torch.arange(len(batch)), batch.act],
            batch.returns,
            algorithm.tau_hat,
        )
        weight = torch.as_tensor(batch.weight, dtype=torch.float32)
        stats = algorithm._update_with_batch(batch)
        assert stats.loss == pytest.approx((expected_loss * weight).mean().item(), rel=1e-5)
        torch.testing.assert_close(batch.weight, expected_priority.detach())


def make_qrdqn_with(**kwargs) -> QRDQN:
    policy = QRDQNPolicy(model=QuantileNet(), action_space=gym.spaces.Discrete(NUM_ACTIONS))
    return QRDQN(policy=policy, optim=AdamOptimizerFactory(), **kwargs)


def build_qrdqn() -> QRDQN:
    """The QRDQN the CartPole tests train."""
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[64, 64], num_atoms=50)
    policy = QRDQNPolicy(model=net, action_space=gym.spaces.Discrete(2), eps_training=0.5)
    return QRDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        num_quantiles=50,
        n_step_return_horizon=3,
        target_update_freq=320,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_qrdqn_learns_cartpole() -> None:
    result = train_on_cartpole(
        build_qrdqn, seed=0, max_epochs=10, epoch_num_steps=2000, stop_at=195.0
    )
    assert result.best_reward >= 195.0


@pytest.mark.usefixtures("one_thread")
def test_training_twice_with_one_seed_leaves_the_same_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(build_qrdqn, "qrdqn", tmp_path)
