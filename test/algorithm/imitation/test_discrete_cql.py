"""Tests of discrete CQL: the conservative regulariser by hand, the whole loss against a naive
reference, bad input, and learning CartPole from the expert data set."""

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
from test.algorithm.modelfree.test_qrdqn import naive_quantile_huber
from tianshou.algorithm.algorithm_base import OfflineAlgorithm
from tianshou.algorithm.imitation.discrete_cql import (
    DiscreteCQL,
    DiscreteCQLTrainingStats,
    cql_regulariser,
)
from tianshou.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.trainer import OfflineTrainer, OfflineTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

NUM_ACTIONS = 3
NUM_QUANTILES = 4


class FixedQuantiles(nn.Module):
    """Returns the given ``(NUM_ACTIONS, NUM_QUANTILES)`` quantiles for every observation."""

    def __init__(self, quantiles: np.ndarray) -> None:
        super().__init__()
        self.quantiles = nn.Parameter(torch.tensor(quantiles, dtype=torch.float32))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        return self.quantiles.expand(len(obs), -1, -1), state


def make_cql(quantiles: np.ndarray, **kwargs: Any) -> DiscreteCQL:
    policy = QRDQNPolicy(
        model=FixedQuantiles(quantiles), action_space=gym.spaces.Discrete(NUM_ACTIONS)
    )
    return DiscreteCQL(
        policy=policy,
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        num_quantiles=NUM_QUANTILES,
        **kwargs,
    )


def random_quantiles(seed: int) -> np.ndarray:
    return np.sort(np.random.default_rng(seed).normal(size=(NUM_ACTIONS, NUM_QUANTILES)), axis=1)


class TestCQLRegulariser:
    def test_hand_computed_value(self) -> None:
        # row 0: logsumexp(0, ln 3) = ln 4, data action 1 -> ln 4 - ln 3
        # row 1: logsumexp(2, 2) = 2 + ln 2, data action 0 -> ln 2
        q = torch.tensor([[0.0, np.log(3.0)], [2.0, 2.0]])
        value = cql_regulariser(q, torch.tensor([1, 0]))
        assert value.item() == pytest.approx(np.mean([np.log(4 / 3), np.log(2.0)]), rel=1e-6)

    def test_illegal_actions_with_minus_infinity_do_not_count(self) -> None:
        q = torch.tensor([[1.0, -torch.inf, 1.0]])
        assert cql_regulariser(q, torch.tensor([0])).item() == pytest.approx(np.log(2.0))

    def test_gradient_pushes_the_data_action_up_and_the_others_down(self) -> None:
        q = torch.zeros(1, 3, requires_grad=True)
        cql_regulariser(q, torch.tensor([2])).backward()
        assert q.grad is not None
        torch.testing.assert_close(q.grad, torch.tensor([[1 / 3, 1 / 3, 1 / 3 - 1]]))


class TestDiscreteCQLUpdate:
    @pytest.mark.parametrize("seed", [0, 1])
    @pytest.mark.parametrize("min_q_weight", [0.0, 0.5, 10.0])
    def test_loss_matches_a_naive_reference(self, seed: int, min_q_weight: float) -> None:
        quantiles = random_quantiles(seed)
        algorithm = make_cql(quantiles, min_q_weight=min_q_weight)
        rng = np.random.default_rng(seed + 10)
        act = np.array([0, 2, 1, 2])
        returns = rng.normal(scale=2.0, size=(4, NUM_QUANTILES))
        batch = Batch(obs=np.zeros((4, 2)), act=act, returns=torch.tensor(returns), info=Batch())
        stats = algorithm._update_with_batch(batch)
        taus = (2 * np.arange(NUM_QUANTILES) + 1) / (2 * NUM_QUANTILES)
        qr = np.mean(
            [naive_quantile_huber(quantiles[a], returns[b], taus) for b, a in enumerate(act)]
        )
        q = quantiles.mean(axis=1)
        cql = np.mean([np.log(np.exp(q).sum()) - q[a] for a in act])
        assert isinstance(stats, DiscreteCQLTrainingStats)
        assert stats.qr_loss == pytest.approx(qr, rel=1e-5)
        assert stats.cql_loss == pytest.approx(cql, rel=1e-5)
        assert stats.loss == pytest.approx(qr + min_q_weight * cql, rel=1e-5)
        assert set(stats.get_loss_stats_dict()) == {"loss", "qr_loss", "cql_loss"}
        assert batch.weight.shape == (4,)

    def test_without_the_regulariser_the_step_is_qrdqns(self) -> None:
        quantiles = random_quantiles(3)
        cql = make_cql(quantiles, min_q_weight=0.0)
        qrdqn = QRDQN(
            policy=QRDQNPolicy(
                model=FixedQuantiles(quantiles), action_space=gym.spaces.Discrete(NUM_ACTIONS)
            ),
            optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
            num_quantiles=NUM_QUANTILES,
        )
        for algorithm in (cql, qrdqn):
            batch = Batch(
                obs=np.zeros((2, 2)),
                act=np.array([1, 0]),
                returns=torch.ones(2, NUM_QUANTILES),
                info=Batch(),
            )
            algorithm._update_with_batch(batch)
        torch.testing.assert_close(
            cql.policy.model.quantiles, qrdqn.policy.model.quantiles, rtol=0, atol=1e-7
        )

    def test_regulariser_lowers_the_unseen_actions_relative_to_the_data_action(self) -> None:
        # all quantiles and returns start at zero: the quantile loss alone would not move, so
        # the regulariser raises the data action and lowers the others (symmetrically)
        quantiles = np.zeros((NUM_ACTIONS, NUM_QUANTILES))
        algorithm = make_cql(quantiles, min_q_weight=1.0)
        for _ in range(20):
            batch = Batch(
                obs=np.zeros((2, 2)),
                act=np.array([1, 1]),
                returns=torch.zeros(2, NUM_QUANTILES),
                info=Batch(),
            )
            algorithm._update_with_batch(batch)
        q = algorithm.policy.model.quantiles.detach().mean(1)
        assert q[1] > 0.1 and q[0] < -0.1
        torch.testing.assert_close(q[0], q[2])

    def test_update_through_the_buffer_uses_the_target_network(self) -> None:
        algorithm = make_cql(random_quantiles(4), target_update_freq=2, n_step_return_horizon=2)
        buffer = ReplayBuffer(8)
        for t in range(6):
            buffer.add(
                Batch(
                    obs=np.array([t, 0.0]),
                    act=t % NUM_ACTIONS,
                    rew=1.0,
                    terminated=t == 5,
                    truncated=False,
                    obs_next=np.array([t + 1, 0.0]),
                    info={},
                )
            )
        for _ in range(3):
            with policy_within_training_step(algorithm.policy):
                stats = algorithm.update(buffer, 4)
        assert np.isfinite(stats.loss)
        assert algorithm.model_old is not None
        assert not torch.equal(
            algorithm.model_old.quantiles.detach(), algorithm.policy.model.quantiles.detach()
        )


class TestDiscreteCQLConstruction:
    def test_is_an_offline_qrdqn_run_by_the_offline_trainer(self) -> None:
        algorithm = make_cql(random_quantiles(0))
        assert isinstance(algorithm, OfflineAlgorithm)
        assert isinstance(algorithm, QRDQN)
        params = OfflineTrainerParams(buffer=ReplayBuffer(1), max_epochs=1, epoch_num_steps=1)
        assert isinstance(algorithm.create_trainer(params), OfflineTrainer)

    def test_defaults(self) -> None:
        policy = QRDQNPolicy(
            model=FixedQuantiles(np.zeros((NUM_ACTIONS, 200))),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        algorithm = DiscreteCQL(policy=policy, optim=AdamOptimizerFactory())
        assert algorithm.min_q_weight == 10.0
        assert algorithm.num_quantiles == 200
        assert algorithm.gamma == 0.99
        assert algorithm.target_update_freq == 0

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"min_q_weight": -1.0}, "min_q_weight"),
            ({"num_quantiles": 1}, "num_quantiles"),
            ({"gamma": -0.1}, "gamma"),
            ({"target_update_freq": -1}, "target_update_freq"),
        ],
    )
    def test_invalid_parameters_are_refused(self, kwargs: dict[str, Any], match: str) -> None:
        params = {"num_quantiles": NUM_QUANTILES, **kwargs}
        policy = QRDQNPolicy(
            model=FixedQuantiles(random_quantiles(0)),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        with pytest.raises(ValueError, match=match):
            DiscreteCQL(policy=policy, optim=AdamOptimizerFactory(), **params)


# ---------------------------------------------------------------- learning CartPole offline
def cartpole_cql() -> DiscreteCQL:
    """A 64x64 quantile network with 32 quantiles per action (the published example uses 200,
    whose ``(batch, 200, 200)`` quantile loss costs several times as much per update on a CPU;
    on scripted CartPole data 32 quantiles also learned faster per update)."""
    env = gym.make("CartPole-v1")
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[64, 64], num_atoms=32)
    return DiscreteCQL(
        policy=QRDQNPolicy(model=net, action_space=env.action_space),
        optim=AdamOptimizerFactory(lr=1e-3),
        min_q_weight=10.0,
        num_quantiles=32,
        n_step_return_horizon=3,
        target_update_freq=500,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_discrete_cql_learns_cartpole_from_the_expert_data() -> None:
    """Budget: at most 10 epochs of 200 updates (batch 64) on the CartPole expert buffer, stopping
    at a mean test return of 170 (the published bar); seeds 0-7 needed 600, 400, 400, 400, 600,
    600, 600 and 600 updates (best mean returns 178 to 392)."""
    result = train_offline_on_cartpole(
        cartpole_cql,
        expert_cartpole_buffer(),
        seed=0,
        max_epochs=10,
        epoch_num_steps=200,
        stop_at=170.0,
    )
    assert result.best_reward >= 170.0


@pytest.mark.usefixtures("one_thread")
def test_discrete_cql_training_repeats_its_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(cartpole_cql, "discrete_cql", tmp_path)
