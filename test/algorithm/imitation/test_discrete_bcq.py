"""Tests of discrete BCQ: the batch-constrained arg-max against a naive reference, the loss by
hand, the targets, bad input, and learning CartPole from the expert data set."""

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from test.algorithm.imitation.discrete_offline_cartpole import (
    assert_training_repeats_its_trace,
    expert_cartpole_buffer,
    train_offline_on_cartpole,
)
from tianshou.algorithm.algorithm_base import OfflineAlgorithm
from tianshou.algorithm.imitation.discrete_bcq import (
    INF,
    DiscreteBCQ,
    DiscreteBCQPolicy,
    DiscreteBCQTrainingStats,
    float_info,
)
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.trainer import OfflineTrainer, OfflineTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor
from tianshou.utils.torch_utils import policy_within_training_step

NUM_ACTIONS = 4


class Fixed(nn.Module):
    """Returns the given output row for every observation, as a trainable parameter."""

    def __init__(self, row: list[float]) -> None:
        super().__init__()
        self.row = nn.Parameter(torch.tensor(row))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        return self.row.expand(len(obs), -1), state


class BareOutput(nn.Module):
    """Breaks the network protocol: returns the output without the state."""

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> torch.Tensor:
        return torch.zeros(len(obs), NUM_ACTIONS)


def make_policy(
    q_row: list[float], imitation_probs: list[float], threshold: float = 0.3
) -> DiscreteBCQPolicy:
    return DiscreteBCQPolicy(
        model=Fixed(q_row),
        imitator=Fixed(np.log(imitation_probs).tolist()),
        unlikely_action_threshold=threshold,
        action_space=gym.spaces.Discrete(len(q_row)),
    )


def make_bcq(policy: DiscreteBCQPolicy, **kwargs: Any) -> DiscreteBCQ:
    return DiscreteBCQ(
        policy=policy, optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1), **kwargs
    )


def observations(num: int) -> Batch:
    return Batch(obs=np.zeros((num, 2), dtype=np.float32), info=Batch())


def naive_constrained_argmax(q: np.ndarray, logits: np.ndarray, tau: float) -> list[int]:
    """Per row: softmax probabilities, keep actions with p / max p >= tau, arg-max of Q."""
    result = []
    for q_row, logit_row in zip(q, logits, strict=True):
        probs = np.exp(logit_row - logit_row.max())
        probs /= probs.sum()
        allowed = [a for a in range(len(q_row)) if probs[a] / probs.max() >= tau]
        result.append(max(allowed, key=lambda a: q_row[a]))
    return result


class TestModuleConstants:
    def test_inf_is_the_largest_float32(self) -> None:
        assert float_info.max == torch.finfo(torch.float32).max
        assert float_info.max == INF


Q_ROW = [1.0, 5.0, 3.0, 2.0]
PROBS = [0.5, 0.1, 0.3, 0.1]
"""Imitation probabilities; their ratios to the most likely action are 1, 0.2, 0.6, 0.2."""
LOGITS = [0.5, -1.0, 2.0, 0.0]


class TestDiscreteBCQPolicy:
    @pytest.mark.parametrize(
        ("threshold", "expected"),
        [(0.0, 1), (0.1, 1), (0.3, 2), (0.7, 0), (0.99, 0)],
    )
    def test_unlikely_actions_are_masked_out_of_the_argmax(
        self, threshold: float, expected: int
    ) -> None:
        policy = make_policy(Q_ROW, PROBS, threshold)
        out = policy(observations(3))
        assert out.act.tolist() == [expected] * 3
        assert torch.equal(out.q_value, torch.tensor([Q_ROW] * 3))
        torch.testing.assert_close(out.imitation_logits, torch.log(torch.tensor([PROBS] * 3)))

    @pytest.mark.parametrize("seed", [0, 1, 2])
    @pytest.mark.parametrize("threshold", [0.05, 0.3, 0.8])
    def test_constrained_argmax_matches_a_naive_reference(
        self, seed: int, threshold: float
    ) -> None:
        rng = np.random.default_rng(seed)
        q = rng.normal(size=(50, 5))
        logits = rng.normal(scale=2.0, size=(50, 5))
        policy = make_policy([0.0] * 5, [0.2] * 5, threshold)
        act = policy.constrained_argmax(torch.tensor(q), torch.tensor(logits))
        assert act.tolist() == naive_constrained_argmax(q, logits, threshold)

    def test_the_most_likely_legal_action_stays_allowed_under_an_action_mask(self) -> None:
        # action 0 (most likely) is illegal: the ratios are taken to action 2 (p = 0.3), so
        # actions 1 and 3 (ratio 1/3 >= 0.3) are allowed and action 1 has the largest Q
        policy = make_policy(Q_ROW, PROBS, threshold=0.3)
        mask = np.array([[False, True, True, True], [True, False, True, True]])
        batch = Batch(obs=Batch(obs=np.zeros((2, 2)), mask=mask), info=Batch())
        assert policy(batch).act.tolist() == [1, 2]

    def test_evaluating_another_model(self) -> None:
        policy = make_policy(Q_ROW, PROBS, threshold=0.0)
        out = policy(observations(1), model=Fixed([9.0, 0.0, 0.0, 0.0]))
        assert out.act.tolist() == [0]

    def test_is_a_q_learning_policy(self) -> None:
        assert isinstance(make_policy(Q_ROW, PROBS), DiscreteQLearningPolicy)

    @pytest.mark.parametrize("threshold", [-0.1, 1.0, 1.5])
    def test_threshold_outside_zero_one_is_refused(self, threshold: float) -> None:
        with pytest.raises(ValueError, match="unlikely_action_threshold"):
            make_policy(Q_ROW, PROBS, threshold)

    def test_a_policy_without_target_network_is_refused(self) -> None:
        with pytest.raises(ValueError, match="target_update_freq must be positive"):
            DiscreteBCQPolicy(
                model=Fixed([0.0, 0.0]),
                imitator=Fixed([0.0, 0.0]),
                target_update_freq=0,
                action_space=gym.spaces.Discrete(2),
            )

    def test_continuous_action_space_is_refused(self) -> None:
        with pytest.raises(ValueError, match="Discrete action space"):
            DiscreteBCQPolicy(
                model=Fixed([0.0]), imitator=Fixed([0.0]), action_space=gym.spaces.Box(-1, 1)
            )

    def test_imitator_of_the_wrong_width_is_refused(self) -> None:
        policy = DiscreteBCQPolicy(
            model=Fixed([0.0] * NUM_ACTIONS),
            imitator=Fixed([0.0, 0.0]),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        with pytest.raises(ValueError, match=r"imitator outputs logits of shape \(1, 2\)"):
            policy(observations(1))

    def test_imitator_must_return_a_pair(self) -> None:
        policy = DiscreteBCQPolicy(
            model=Fixed([0.0] * NUM_ACTIONS),
            imitator=BareOutput(),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        with pytest.raises(TypeError, match="imitator must return a pair"):
            policy(observations(1))


def huber(u: float) -> float:
    return 0.5 * u * u if abs(u) <= 1.0 else abs(u) - 0.5


class TestDiscreteBCQLoss:
    def loss_batch(self) -> Batch:
        batch = observations(2)
        batch.act = np.array([2, 0])
        batch.returns = torch.tensor([[3.5], [4.0]])
        return batch

    @pytest.mark.parametrize("penalty", [0.0, 0.01, 0.5])
    def test_loss_by_hand(self, penalty: float) -> None:
        policy = DiscreteBCQPolicy(
            model=Fixed(Q_ROW),
            imitator=Fixed(LOGITS),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        algorithm = make_bcq(policy, imitation_logits_penalty=penalty)
        stats = algorithm._update_with_batch(self.loss_batch())
        q_loss = np.mean([huber(3.5 - 3.0), huber(4.0 - 1.0)])
        log_z = np.log(np.sum(np.exp(LOGITS)))
        i_loss = np.mean([log_z - LOGITS[2], log_z - LOGITS[0]])
        reg_loss = np.mean(np.square(LOGITS))
        assert isinstance(stats, DiscreteBCQTrainingStats)
        assert stats.q_loss == pytest.approx(q_loss, rel=1e-6)
        assert stats.i_loss == pytest.approx(i_loss, rel=1e-6)
        assert stats.reg_loss == pytest.approx(reg_loss, rel=1e-6)
        assert stats.loss == pytest.approx(q_loss + i_loss + penalty * reg_loss, rel=1e-6)
        assert set(stats.get_loss_stats_dict()) == {"loss", "q_loss", "i_loss", "reg_loss"}

    def test_penalty_gradient_shrinks_the_logits(self) -> None:
        # with one action per logit class pulling equally, only the penalty moves the mean of
        # the logits: it shrinks them towards zero
        policy = DiscreteBCQPolicy(
            model=Fixed([0.0, 0.0]),
            imitator=Fixed([4.0, 4.0]),
            action_space=gym.spaces.Discrete(2),
        )
        algorithm = make_bcq(policy, imitation_logits_penalty=0.5)
        batch = observations(2)
        batch.act = np.array([0, 1])
        batch.returns = torch.zeros(2, 1)
        algorithm._update_with_batch(batch)
        # d/dlogit of 0.5 * mean(logit^2) = 0.5 * logit = 2; SGD lr 0.1 -> 4 - 0.2
        torch.testing.assert_close(policy.imitator.row.detach(), torch.tensor([3.8, 3.8]))

    def test_td_errors_become_the_batch_weights(self) -> None:
        policy = DiscreteBCQPolicy(
            model=Fixed(Q_ROW),
            imitator=Fixed(LOGITS),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        batch = self.loss_batch()
        make_bcq(policy)._update_with_batch(batch)
        torch.testing.assert_close(batch.weight, torch.tensor([0.5, 3.0]))


def chain_buffer() -> ReplayBuffer:
    """One episode of 3 steps (the last terminated), observations 0, 1, 2 and rewards 1."""
    buffer = ReplayBuffer(8)
    for t in range(3):
        buffer.add(
            Batch(
                obs=np.array([t, 0.0], dtype=np.float32),
                act=0,
                rew=1.0,
                terminated=t == 2,
                truncated=False,
                obs_next=np.array([t + 1, 0.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


class TestDiscreteBCQTargets:
    def test_target_values_the_online_constrained_action_with_the_target_network(self) -> None:
        policy = make_policy([1.0, 5.0, 3.0, 2.0], [0.5, 0.1, 0.3, 0.1], threshold=0.3)
        algorithm = make_bcq(policy, gamma=0.5, target_update_freq=100)
        with torch.no_grad():  # the online model changes; the target keeps the old row
            policy.model.row.copy_(torch.tensor([1.0, 5.0, 2.0, 3.0]))
        buffer = chain_buffer()
        indices = np.array([0, 2])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        # online constrained arg-max: allowed {0, 2} -> Q 1 vs 2 -> action 2; old Q(2) = 3
        torch.testing.assert_close(batch.returns.reshape(-1), torch.tensor([1.0 + 0.5 * 3, 1.0]))

    def test_n_step_targets(self) -> None:
        policy = make_policy([1.0, 5.0, 3.0, 2.0], [0.5, 0.1, 0.3, 0.1], threshold=0.0)
        algorithm = make_bcq(policy, gamma=0.5, n_step_return_horizon=2, target_update_freq=5)
        buffer = chain_buffer()
        indices = np.array([0, 1])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        # step 0: 1 + 0.5 * 1 + 0.25 * max Q = 5; step 1: two rewards to the terminal step
        torch.testing.assert_close(batch.returns.reshape(-1), torch.tensor([1.5 + 0.25 * 5.0, 1.5]))

    def test_target_network_is_refreshed_every_target_update_freq_updates(self) -> None:
        policy = make_policy([1.0, 5.0, 3.0, 2.0], [0.5, 0.1, 0.3, 0.1])
        algorithm = make_bcq(policy, target_update_freq=3)
        buffer = chain_buffer()
        rows = []
        for _ in range(4):
            with policy_within_training_step(policy):
                algorithm.update(buffer, 2)
            rows.append(policy.model.row.detach().clone())
        target_row = algorithm.model_old.row.detach()
        # copies happen before updates 0 and 3: the target holds the model after update 2
        torch.testing.assert_close(target_row, rows[2])
        assert not torch.equal(target_row, rows[3])


class TestDiscreteBCQConstruction:
    def test_is_an_offline_algorithm_run_by_the_offline_trainer(self) -> None:
        algorithm = make_bcq(make_policy([0.0, 0.0], [0.5, 0.5]))
        assert isinstance(algorithm, OfflineAlgorithm)
        params = OfflineTrainerParams(buffer=chain_buffer(), max_epochs=1, epoch_num_steps=1)
        assert isinstance(algorithm.create_trainer(params), OfflineTrainer)

    def test_optimizer_trains_the_q_network_and_the_imitator(self) -> None:
        policy = make_policy([0.0, 0.0], [0.5, 0.5])
        algorithm = make_bcq(policy)
        trained = {id(p) for g in algorithm.optim.torch_optimizer.param_groups for p in g["params"]}
        assert trained == {id(policy.model.row), id(policy.imitator.row)}

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"target_update_freq": 0}, "target_update_freq must be positive"),
            ({"imitation_logits_penalty": -1.0}, "imitation_logits_penalty"),
            ({"gamma": 1.5}, "gamma"),
            ({"n_step_return_horizon": 0}, "n_step_return_horizon"),
        ],
    )
    def test_invalid_parameters_are_refused(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_bcq(make_policy([0.0, 0.0], [0.5, 0.5]), **kwargs)

    def test_another_policy_is_refused(self) -> None:
        policy = DiscreteQLearningPolicy(model=Fixed([0.0]), action_space=gym.spaces.Discrete(1))
        with pytest.raises(TypeError, match="needs a DiscreteBCQPolicy"):
            DiscreteBCQ(policy=policy, optim=AdamOptimizerFactory())  # type: ignore[arg-type]


# ---------------------------------------------------------------- learning CartPole offline
def cartpole_bcq() -> DiscreteBCQ:
    """Q-network and imitator heads on a shared 64x64 body, as in the published example."""
    env = gym.make("CartPole-v1")
    body = Net(state_shape=4, hidden_sizes=[64, 64])
    q_head = DiscreteActor(preprocess_net=body, action_shape=2, softmax_output=False)
    imitator = DiscreteActor(preprocess_net=body, action_shape=2, softmax_output=False)
    policy = DiscreteBCQPolicy(
        model=q_head,
        imitator=imitator,
        target_update_freq=320,
        unlikely_action_threshold=0.6,
        action_space=env.action_space,
    )
    return DiscreteBCQ(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        n_step_return_horizon=3,
        target_update_freq=320,
        imitation_logits_penalty=0.01,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_discrete_bcq_learns_cartpole_from_the_expert_data() -> None:
    """Budget: at most 10 epochs of 200 updates (batch 64) on the CartPole expert buffer, stopping
    at a mean test return of 185 (the published bar); seeds 0-7 needed 400, 1000, 400, 400, 400,
    600, 200 and 600 updates (best mean returns 186 to 443)."""
    result = train_offline_on_cartpole(
        cartpole_bcq,
        expert_cartpole_buffer(),
        seed=0,
        max_epochs=10,
        epoch_num_steps=200,
        stop_at=185.0,
    )
    assert result.best_reward >= 185.0


@pytest.mark.usefixtures("one_thread")
def test_discrete_bcq_training_repeats_its_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(cartpole_bcq, "discrete_bcq", tmp_path)
