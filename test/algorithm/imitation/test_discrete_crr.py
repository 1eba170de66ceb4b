"""Tests of discrete CRR: the weight modes and the whole loss by hand, the critic's targets, bad
input, and learning CartPole from the expert data set."""

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Normal

from test.algorithm.imitation.discrete_offline_cartpole import (
    assert_training_repeats_its_trace,
    expert_cartpole_buffer,
    train_offline_on_cartpole,
)
from tianshou.algorithm.algorithm_base import OfflineAlgorithm
from tianshou.algorithm.imitation.discrete_crr import (
    DiscreteCRR,
    DiscreteCRRTrainingStats,
    crr_weights,
)
from tianshou.algorithm.imitation.imitation_base import ImitationPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.trainer import OfflineTrainer, OfflineTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import policy_within_training_step

NUM_ACTIONS = 3
ACTOR_LOGITS = [0.0, 1.0, -1.0]
CRITIC_Q = [1.0, 2.0, 4.0]


class FixedActor(nn.Module):
    """Returns the given logits for every observation, as a trainable parameter."""

    def __init__(self, row: list[float]) -> None:
        super().__init__()
        self.row = nn.Parameter(torch.tensor(row))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        return self.row.expand(len(obs), -1), state


class ObsCritic(nn.Module):
    """``Q(s, .) = row + s[0] * slope``: depends on the observation, so targets can be told
    apart from current values."""

    def __init__(self, row: list[float], slope: float = 0.0) -> None:
        super().__init__()
        self.row = nn.Parameter(torch.tensor(row))
        self.slope = slope

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> torch.Tensor:
        first = torch.as_tensor(obs, dtype=torch.float32)[:, :1]
        return self.row + self.slope * first


def logits_policy(actor: nn.Module | None = None) -> DiscreteActorPolicy:
    """The default ``dist_fn`` reads the actor's output as logits."""
    return DiscreteActorPolicy(
        actor=actor or FixedActor(ACTOR_LOGITS), action_space=gym.spaces.Discrete(NUM_ACTIONS)
    )


def make_crr(critic: nn.Module | None = None, **kwargs: Any) -> DiscreteCRR:
    return DiscreteCRR(
        policy=logits_policy(),
        critic=critic or ObsCritic(CRITIC_Q),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        **kwargs,
    )


class TestWeights:
    def test_exp_weights_are_clipped_at_the_upper_bound(self) -> None:
        advantage = torch.tensor([-1.0, 0.0, 1.0, 10.0])
        weights = crr_weights(advantage, "exp", beta=2.0, ratio_upper_bound=2.0)
        expected = [np.exp(-0.5), 1.0, np.exp(0.5), 2.0]
        np.testing.assert_allclose(weights.numpy(), expected, rtol=1e-6)

    def test_binary_weights_keep_only_positive_advantages(self) -> None:
        weights = crr_weights(torch.tensor([-1.0, 0.0, 0.5]), "binary", 1.0, 20.0)
        assert weights.tolist() == [0.0, 0.0, 1.0]

    def test_all_weights_are_one(self) -> None:
        weights = crr_weights(torch.tensor([-3.0, 3.0]), "all", 1.0, 20.0)
        assert weights.tolist() == [1.0, 1.0]


def naive_crr_losses(
    act: list[int], returns: list[float], mode: str, beta: float, bound: float
) -> tuple[float, float, float]:
    """Actor, critic and CQL losses of the fixed actor and critic, row by row."""
    probs = np.exp(ACTOR_LOGITS) / np.exp(ACTOR_LOGITS).sum()
    value = float(np.dot(probs, CRITIC_Q))
    actor, critic, cql = [], [], []
    for a, y in zip(act, returns, strict=True):
        advantage = CRITIC_Q[a] - value
        weight = {
            "exp": min(np.exp(advantage / beta), bound),
            "binary": float(advantage > 0),
            "all": 1.0,
        }[mode]
        actor.append(-weight * np.log(probs[a]))
        critic.append(0.5 * (CRITIC_Q[a] - y) ** 2)
        cql.append(np.log(np.exp(CRITIC_Q).sum()) - CRITIC_Q[a])
    return float(np.mean(actor)), float(np.mean(critic)), float(np.mean(cql))


class TestDiscreteCRRLoss:
    @pytest.mark.parametrize("mode", ["exp", "binary", "all"])
    @pytest.mark.parametrize(("beta", "bound"), [(1.0, 20.0), (0.5, 3.0)])
    def test_losses_by_hand(self, mode: Any, beta: float, bound: float) -> None:
        algorithm = make_crr(
            policy_improvement_mode=mode, beta=beta, ratio_upper_bound=bound, min_q_weight=0.7
        )
        act, returns = [0, 2, 1, 2], [1.5, 3.0, 2.0, 5.0]
        batch = Batch(
            obs=np.zeros((4, 2)),
            act=np.array(act),
            returns=torch.tensor(returns).reshape(-1, 1),
            info=Batch(),
        )
        stats = algorithm._update_with_batch(batch)
        actor, critic, cql = naive_crr_losses(act, returns, mode, beta, bound)
        assert isinstance(stats, DiscreteCRRTrainingStats)
        assert stats.actor_loss == pytest.approx(actor, rel=1e-5)
        assert stats.critic_loss == pytest.approx(critic, rel=1e-5)
        assert stats.cql_loss == pytest.approx(cql, rel=1e-5)
        assert stats.loss == pytest.approx(actor + critic + 0.7 * cql, rel=1e-5)
        assert set(stats.get_loss_stats_dict()) == {"loss", "actor_loss", "critic_loss", "cql_loss"}

    def test_no_gradient_flows_through_the_weights(self) -> None:
        # targets equal the critic's values and no regulariser: the critic's only gradient
        # would come through the advantage inside the weights, which must be a constant
        critic = ObsCritic(CRITIC_Q)
        algorithm = make_crr(critic, min_q_weight=0.0)
        batch = Batch(
            obs=np.zeros((2, 2)),
            act=np.array([2, 0]),
            returns=torch.tensor([[4.0], [1.0]]),
            info=Batch(),
        )
        actor_before = algorithm.policy.actor.row.detach().clone()
        algorithm._update_with_batch(batch)
        torch.testing.assert_close(critic.row.detach(), torch.tensor(CRITIC_Q))
        assert not torch.equal(algorithm.policy.actor.row.detach(), actor_before)

    def test_exp_weights_move_the_actor_towards_the_better_action(self) -> None:
        # the data holds actions 0 and 2 equally often; the critic prefers 2
        algorithm = make_crr(min_q_weight=0.0, beta=0.5)
        batch = Batch(
            obs=np.zeros((2, 2)),
            act=np.array([0, 2]),
            returns=torch.tensor([[1.0], [4.0]]),
            info=Batch(),
        )
        for _ in range(50):
            algorithm._update_with_batch(batch)
        logits = algorithm.policy.actor.row.detach()
        assert logits[2] > logits[0] + 1.0


def chain_buffer(truncate_last: bool) -> ReplayBuffer:
    """One episode of 3 steps with observations 0, 1, 2 and rewards 1; the last step ends it by
    termination or by truncation."""
    buffer = ReplayBuffer(8)
    for t in range(3):
        buffer.add(
            Batch(
                obs=np.array([t, 0.0], dtype=np.float32),
                act=t % NUM_ACTIONS,
                rew=1.0,
                terminated=t == 2 and not truncate_last,
                truncated=t == 2 and truncate_last,
                obs_next=np.array([t + 1, 0.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


class TestDiscreteCRRTargets:
    def expected_value(self, obs_first: float, critic_row: list[float]) -> float:
        probs = np.exp(ACTOR_LOGITS) / np.exp(ACTOR_LOGITS).sum()
        return float(np.dot(probs, np.array(critic_row) + obs_first))

    @pytest.mark.parametrize("truncate_last", [False, True])
    def test_targets_are_the_expected_next_value_under_the_policy(
        self, truncate_last: bool
    ) -> None:
        algorithm = make_crr(ObsCritic(CRITIC_Q, slope=1.0), gamma=0.5)
        buffer = chain_buffer(truncate_last)
        indices = np.array([0, 2])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        last = 1.0 + 0.5 * self.expected_value(3.0, CRITIC_Q) if truncate_last else 1.0
        expected = [1.0 + 0.5 * self.expected_value(1.0, CRITIC_Q), last]
        np.testing.assert_allclose(batch.returns.reshape(-1).numpy(), expected, rtol=1e-6)

    def test_targets_come_from_the_lagged_networks(self) -> None:
        critic = ObsCritic(CRITIC_Q, slope=1.0)
        algorithm = make_crr(critic, gamma=0.5, target_update_freq=10)
        with torch.no_grad():
            critic.row.add_(10.0)
            algorithm.policy.actor.row.copy_(torch.tensor([5.0, 0.0, 0.0]))
        buffer = chain_buffer(truncate_last=False)
        indices = np.array([0])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        expected = 1.0 + 0.5 * self.expected_value(1.0, CRITIC_Q)
        assert batch.returns.reshape(-1).item() == pytest.approx(expected, rel=1e-6)

    def test_lagged_networks_are_refreshed_every_target_update_freq_updates(self) -> None:
        critic = ObsCritic(CRITIC_Q)
        algorithm = make_crr(critic, target_update_freq=2)
        buffer = chain_buffer(truncate_last=False)
        rows = []
        for _ in range(3):
            with policy_within_training_step(algorithm.policy):
                algorithm.update(buffer, 2)
            rows.append(critic.row.detach().clone())
        # copies happen before updates 0 and 2: the target holds the critic after update 1
        torch.testing.assert_close(algorithm.critic_old.row.detach(), rows[1])

    def test_without_target_networks_there_are_no_copies(self) -> None:
        algorithm = make_crr(target_update_freq=0)
        assert not hasattr(algorithm, "critic_old")
        assert not any("_old" in key for key in algorithm.state_dict())


def test_published_set_up_with_a_logits_actor_and_the_default_dist_fn_updates() -> None:
    """The published example's networks: actor (``softmax_output=False``, so it outputs logits,
    some negative) and critic heads on one body, and a policy left with its default ``dist_fn``."""
    torch.manual_seed(0)
    body = Net(state_shape=4, hidden_sizes=[16, 16])
    actor = DiscreteActor(preprocess_net=body, action_shape=2, softmax_output=False)
    policy = DiscreteActorPolicy(actor=actor, action_space=gym.spaces.Discrete(2))
    algorithm = DiscreteCRR(
        policy=policy,
        critic=DiscreteCritic(preprocess_net=body, last_size=2),
        optim=AdamOptimizerFactory(lr=1e-3),
        target_update_freq=2,
    )
    rng = np.random.default_rng(0)
    terminated = rng.random(32) < 0.1
    buffer = ReplayBuffer.from_data(
        obs=rng.normal(size=(32, 4)).astype(np.float32),
        act=rng.integers(0, 2, size=32),
        rew=np.ones(32, dtype=np.float32),
        terminated=terminated,
        truncated=np.zeros(32, dtype=bool),
        done=terminated,
        obs_next=rng.normal(size=(32, 4)).astype(np.float32),
    )
    result = policy(Batch(obs=buffer.obs[:8], info=Batch()))
    assert (result.logits < 0).any()
    torch.testing.assert_close(result.dist.probs, torch.softmax(result.logits, -1))
    with policy_within_training_step(policy):
        for _ in range(3):
            stats = algorithm.update(buffer, sample_size=16)
    assert all(np.isfinite(v) for v in stats.get_loss_stats_dict().values())


class TestDiscreteCRRConstruction:
    def test_is_an_offline_algorithm_run_by_the_offline_trainer(self) -> None:
        algorithm = make_crr()
        assert isinstance(algorithm, OfflineAlgorithm)
        params = OfflineTrainerParams(buffer=ReplayBuffer(1), max_epochs=1, epoch_num_steps=1)
        assert isinstance(algorithm.create_trainer(params), OfflineTrainer)

    def test_one_optimizer_trains_actor_and_critic(self) -> None:
        critic = ObsCritic(CRITIC_Q)
        algorithm = make_crr(critic)
        trained = {id(p) for g in algorithm.optim.torch_optimizer.param_groups for p in g["params"]}
        assert trained == {id(algorithm.policy.actor.row), id(critic.row)}

    def test_defaults(self) -> None:
        algorithm = DiscreteCRR(
            policy=logits_policy(), critic=ObsCritic(CRITIC_Q), optim=AdamOptimizerFactory()
        )
        assert (algorithm.gamma, algorithm.policy_improvement_mode) == (0.99, "exp")
        assert (algorithm.ratio_upper_bound, algorithm.beta) == (20.0, 1.0)
        assert (algorithm.min_q_weight, algorithm.target_update_freq) == (10.0, 0)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"policy_improvement_mode": "softmax"}, "policy_improvement_mode"),
            ({"beta": 0.0}, "beta"),
            ({"ratio_upper_bound": 0.0}, "ratio_upper_bound"),
            ({"min_q_weight": -1.0}, "min_q_weight"),
            ({"target_update_freq": -1}, "target_update_freq"),
            ({"gamma": 2.0}, "gamma"),
        ],
    )
    def test_invalid_parameters_are_refused(self, kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_crr(**kwargs)

    def test_a_non_actor_policy_is_refused(self) -> None:
        policy = ImitationPolicy(
            actor=FixedActor(ACTOR_LOGITS), action_space=gym.spaces.Discrete(NUM_ACTIONS)
        )
        with pytest.raises(TypeError, match="needs a DiscreteActorPolicy"):
            DiscreteCRR(
                policy=policy,  # type: ignore[arg-type]
                critic=ObsCritic(CRITIC_Q),
                optim=AdamOptimizerFactory(),
            )

    def test_a_critic_of_the_wrong_width_is_refused(self) -> None:
        algorithm = make_crr(ObsCritic([0.0, 0.0]))
        batch = Batch(obs=np.zeros((2, 2)), act=np.array([0, 1]), info=Batch())
        batch.returns = torch.zeros(2, 1)
        with pytest.raises(ValueError, match=r"shape \(batch_size, 3\), got \(2, 2\)"):
            algorithm._update_with_batch(batch)

    def test_a_non_categorical_distribution_is_refused(self) -> None:
        policy = DiscreteActorPolicy(
            actor=FixedActor(ACTOR_LOGITS),
            dist_fn=lambda x: Normal(x, 1.0),
            action_space=gym.spaces.Discrete(NUM_ACTIONS),
        )
        algorithm = DiscreteCRR(
            policy=policy, critic=ObsCritic(CRITIC_Q), optim=AdamOptimizerFactory()
        )
        batch = Batch(obs=np.zeros((1, 2)), act=np.array([0]), info=Batch())
        batch.returns = torch.zeros(1, 1)
        with pytest.raises(TypeError, match="build a Categorical"):
            algorithm._update_with_batch(batch)


# ---------------------------------------------------------------- learning CartPole offline
def cartpole_crr() -> DiscreteCRR:
    """Actor (logits) and critic heads on a shared 64x64 body, as in the published example."""
    env = gym.make("CartPole-v1")
    body = Net(state_shape=4, hidden_sizes=[64, 64])
    actor = DiscreteActor(preprocess_net=body, action_shape=2, softmax_output=False)
    policy = DiscreteActorPolicy(
        actor=actor, deterministic_eval=True, action_space=env.action_space
    )
    return DiscreteCRR(
        policy=policy,
        critic=DiscreteCritic(preprocess_net=body, last_size=2),
        optim=AdamOptimizerFactory(lr=7e-4),
        target_update_freq=320,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_discrete_crr_learns_cartpole_from_the_expert_data() -> None:
    """Budget: at most 10 epochs of 200 updates (batch 64) on the CartPole expert buffer, stopping
    at a mean test return of 180 (the published bar); seeds 0-7 needed 400, 400, 600, 400, 600,
    400, 400 and 400 updates (best mean returns 184 to 293)."""
    result = train_offline_on_cartpole(
        cartpole_crr,
        expert_cartpole_buffer(),
        seed=0,
        max_epochs=10,
        epoch_num_steps=200,
        stop_at=180.0,
    )
    assert result.best_reward >= 180.0


@pytest.mark.usefixtures("one_thread")
def test_discrete_crr_training_repeats_its_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(cartpole_crr, "discrete_crr", tmp_path)
