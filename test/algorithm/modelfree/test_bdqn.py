"""Tests of BDQNPolicy and BDQN: per-branch acting and exploration, the shared branch-mean
target and the per-branch TD loss (against naive loops), learning Pendulum through
ContinuousToDiscrete, and determinism."""

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm.modelfree.bdqn import BDQN, BDQNPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, InfoStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import ContinuousToDiscrete, DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLog, TraceLoggerContext
from tianshou.utils.net.common import BranchingNet
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
BRANCHES = 2
VALUES = 4
GAMMA = 0.9


def make_net(seed: int = 0) -> BranchingNet:
    torch.manual_seed(seed)
    return BranchingNet(
        state_shape=OBS_DIM,
        num_branches=BRANCHES,
        action_per_branch=VALUES,
        common_hidden_sizes=[8],
        value_hidden_sizes=[8],
        action_hidden_sizes=[8],
    )


def make_policy(**kwargs) -> BDQNPolicy:
    space = gym.spaces.MultiDiscrete([VALUES] * BRANCHES)
    return BDQNPolicy(model=make_net(), action_space=space, **kwargs)


def make_bdqn(lr: float = 0.1, **kwargs) -> BDQN:
    return BDQN(
        policy=make_policy(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        gamma=GAMMA,
        **kwargs,
    )


def filled_buffer(steps: int = 12) -> ReplayBuffer:
    """Episodes of length 4; the first ends terminated, the second truncated, the third is
    still running. Observations and actions vary so that every row has its own target."""
    rng = np.random.default_rng(0)
    buffer = ReplayBuffer(32)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=rng.normal(size=OBS_DIM).astype(np.float32),
                act=rng.integers(0, VALUES, size=BRANCHES),
                rew=float(t + 1),
                terminated=t == 3,
                truncated=t == 7,
                obs_next=rng.normal(size=OBS_DIM).astype(np.float32),
                info={},
            )
        )
    return buffer


def q_of(net: torch.nn.Module, obs: np.ndarray) -> np.ndarray:
    """Q-values ``(num_branches, action_per_branch)`` of one observation."""
    with torch.no_grad():
        return net(obs[None])[0][0].numpy().astype(np.float64)


def naive_targets(bdqn: BDQN, buffer: ReplayBuffer, indices: np.ndarray) -> np.ndarray:
    """r + gamma * mean over branches of the bootstrapped branch value, one row at a time."""
    online = bdqn.policy.model
    target = bdqn.model_old if bdqn.model_old is not None else online
    targets = []
    for i in indices:
        q_online, q_target = q_of(online, buffer.obs_next[i]), q_of(target, buffer.obs_next[i])
        branch_values = []
        for d in range(BRANCHES):
            chooser = q_online[d] if bdqn.is_double else q_target[d]
            branch_values.append(q_target[d][int(np.argmax(chooser))])
        bootstrap = 0.0 if buffer.terminated[i] else GAMMA * np.mean(branch_values)
        targets.append(buffer.rew[i] + bootstrap)
    return np.array(targets)


def update(algorithm: BDQN, buffer: ReplayBuffer, sample_size: int | None = None):
    with policy_within_training_step(algorithm.policy):
        return algorithm.update(buffer, sample_size)


class TestPolicy:
    def test_forward_takes_each_branchs_arg_max(self) -> None:
        policy = make_policy()
        obs = np.random.default_rng(1).normal(size=(5, OBS_DIM)).astype(np.float32)
        result = policy(Batch(obs=obs, info=Batch()))
        assert result.logits.shape == (5, BRANCHES, VALUES)
        assert isinstance(result.act, np.ndarray) and result.act.shape == (5, BRANCHES)
        for row in range(5):
            q = q_of(policy.model, obs[row])
            assert result.act[row].tolist() == [int(np.argmax(q[d])) for d in range(BRANCHES)]

    def test_exploration_replaces_whole_actions_with_valid_sub_actions(self) -> None:
        policy = make_policy(eps_training=0.5)
        np.random.seed(0)
        greedy = np.full((2000, BRANCHES), VALUES - 1, dtype=np.int64)
        batch = Batch(obs=np.zeros((2000, OBS_DIM)), info=Batch())
        assert policy.add_exploration_noise(greedy, batch) is greedy  # eps_inference is 0
        with policy_within_training_step(policy):
            explored = policy.add_exploration_noise(greedy, batch)
        assert (greedy == VALUES - 1).all()  # the input array is not modified
        assert explored.min() == 0 and explored.max() == VALUES - 1
        changed = (explored != greedy).any(axis=1)
        # half the rows are re-drawn; a re-drawn row keeps the greedy action w.p. 1/VALUES**2
        assert 0.5 * (1 - VALUES**-BRANCHES) - 0.05 < changed.mean() < 0.5 + 0.05

    @pytest.mark.parametrize(
        "space", [gym.spaces.Discrete(4), gym.spaces.MultiDiscrete([4, 5]), gym.spaces.Box(-1, 1)]
    )
    def test_rejects_action_spaces_without_equal_branches(self, space: gym.Space) -> None:
        with pytest.raises(ValueError, match="ContinuousToDiscrete"):
            BDQNPolicy(model=make_net(), action_space=space)

    def test_rejects_a_network_of_another_shape(self) -> None:
        policy = BDQNPolicy(model=make_net(), action_space=gym.spaces.MultiDiscrete([4, 4, 4]))
        with pytest.raises(ValueError, match=r"\(batch_size, 3, 4\).*num_branches"):
            policy(Batch(obs=np.zeros((2, OBS_DIM)), info=Batch()))


class TestTargets:
    @pytest.mark.parametrize("is_double", [True, False])
    @pytest.mark.parametrize("target_update_freq", [0, 3])
    def test_branch_mean_targets_match_a_naive_loop(
        self, is_double: bool, target_update_freq: int
    ) -> None:
        bdqn = make_bdqn(is_double=is_double, target_update_freq=target_update_freq)
        if bdqn.model_old is not None:
            # make the online model differ from the target network
            with torch.no_grad():
                for param in bdqn.policy.model.parameters():
                    param.add_(torch.randn_like(param))
        buffer = filled_buffer()
        indices = np.arange(12)
        batch = bdqn._preprocess_batch(buffer[indices], buffer, indices)
        assert batch.returns.shape == (12, 1)
        expected = naive_targets(bdqn, buffer, indices)
        np.testing.assert_allclose(batch.returns.numpy()[:, 0], expected, rtol=1e-5)

    def test_terminal_rows_keep_the_reward_and_truncated_rows_bootstrap(self) -> None:
        bdqn = make_bdqn()
        buffer = filled_buffer()
        indices = np.array([3, 7])
        returns = bdqn._preprocess_batch(buffer[indices], buffer, indices).returns[:, 0]
        assert returns[0].item() == pytest.approx(4.0)
        assert returns[1].item() != pytest.approx(8.0)

    def test_double_and_plain_targets_differ_when_the_networks_disagree(self) -> None:
        buffer = filled_buffer()
        indices = np.arange(12)
        results = []
        for is_double in (True, False):
            bdqn = make_bdqn(is_double=is_double, target_update_freq=1)
            with torch.no_grad():
                for param in bdqn.policy.model.parameters():
                    param.add_(torch.randn_like(param, generator=torch.Generator().manual_seed(5)))
            results.append(bdqn._preprocess_batch(buffer[indices], buffer, indices).returns)
        assert not torch.allclose(results[0], results[1])


class TestLoss:
    def naive_loss_and_td(
        self, bdqn: BDQN, batch: Batch, weight: np.ndarray
    ) -> tuple[float, np.ndarray]:
        losses, td_sums = [], []
        for i in range(len(batch.act)):
            q = q_of(bdqn.policy.model, batch.obs[i])
            target = float(batch.returns[i, 0])
            td = [target - q[d][batch.act[i][d]] for d in range(BRANCHES)]
            losses.append(weight[i] * np.mean(np.square(td)))
            td_sums.append(sum(td))
        return float(np.mean(losses)), np.array(td_sums)

    @pytest.mark.parametrize("weighted", [False, True])
    def test_loss_and_priorities_match_a_naive_loop(self, weighted: bool) -> None:
        bdqn = make_bdqn(lr=0.0)
        buffer = filled_buffer()
        indices = np.arange(12)
        batch = bdqn._preprocess_batch(buffer[indices], buffer, indices)
        weight = np.linspace(0.2, 2.0, 12) if weighted else np.ones(12)
        if weighted:
            batch.weight = weight
        expected_loss, expected_td = self.naive_loss_and_td(bdqn, batch, weight)
        with policy_within_training_step(bdqn.policy):
            stats = bdqn._update_with_batch(batch)
        assert stats.loss == pytest.approx(expected_loss, rel=1e-5)
        np.testing.assert_allclose(batch.weight.numpy(), expected_td, rtol=1e-5, atol=1e-6)

    def test_update_lowers_the_loss_on_a_fixed_batch(self) -> None:
        bdqn = make_bdqn(lr=0.01)
        buffer = filled_buffer()
        indices = np.arange(12)
        batch = bdqn._preprocess_batch(buffer[indices], buffer, indices)
        with policy_within_training_step(bdqn.policy):
            losses = [bdqn._update_with_batch(copy.deepcopy(batch)).loss for _ in range(30)]
        assert losses[-1] < 0.5 * losses[0]

    def test_actions_of_the_wrong_shape_are_refused(self) -> None:
        bdqn = make_bdqn()
        buffer = filled_buffer()
        batch = bdqn._preprocess_batch(buffer[np.arange(4)], buffer, np.arange(4))
        batch.act = batch.act[:, 0]
        with pytest.raises(ValueError, match=r"batch.act has shape \(4,\)"):
            bdqn._update_with_batch(batch)

    def test_update_from_buffer_and_nan_guard(self) -> None:
        bdqn = make_bdqn(target_update_freq=2)
        buffer = filled_buffer()
        assert np.isfinite(update(bdqn, buffer, 8).loss)
        buffer.rew[2] = np.nan
        with pytest.raises(FloatingPointError, match="loss"):
            update(bdqn, buffer, 0)


def make_pendulum_envs(count: int, action_per_branch: int) -> DummyVectorEnv:
    return DummyVectorEnv(
        [
            lambda: ContinuousToDiscrete(gym.make("Pendulum-v1"), action_per_branch)
            for _ in range(count)
        ]
    )


def pendulum_bdqn(space: gym.Space, action_per_branch: int, lr: float) -> BDQN:
    net = BranchingNet(
        state_shape=3,
        num_branches=1,
        action_per_branch=action_per_branch,
        common_hidden_sizes=[64, 64],
        value_hidden_sizes=[32],
        action_hidden_sizes=[32],
    )
    policy = BDQNPolicy(model=net, action_space=space, eps_training=0.5)
    return BDQN(policy=policy, optim=AdamOptimizerFactory(lr=lr), gamma=0.9, target_update_freq=200)


def train_pendulum(seed: int, max_epochs: int, stop_at: float | None) -> InfoStats:
    """BDQN on Pendulum-v1 with 15 discrete torques; stops once the test return reaches
    ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs, test_envs = make_pendulum_envs(4, 15), make_pendulum_envs(10, 15)
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    algorithm = pendulum_bdqn(training_envs.action_space[0], 15, lr=1e-3)
    policy = algorithm.policy
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 4), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    training_collector.reset()
    test_collector.reset()

    def decay_eps(epoch: int, env_step: int) -> None:
        policy.set_eps_training(max(0.05, 0.5 * (1 - env_step / 8000)))

    return algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=max_epochs,
            epoch_num_steps=1000,
            collection_step_num_env_steps=8,
            test_step_num_episodes=10,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.5,
            training_fn=decay_eps,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_bdqn_learns_pendulum_through_continuous_to_discrete() -> None:
    result = train_pendulum(seed=0, max_epochs=20, stop_at=-250.0)
    assert result.best_reward >= -250.0


def train_traced(seed: int) -> TraceLog:
    """One epoch of 200 env steps on Pendulum (5 torques), traced."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs, test_envs = make_pendulum_envs(2, 5), make_pendulum_envs(1, 5)
    training_envs.seed(seed)
    test_envs.seed(seed + 100)
    algorithm = pendulum_bdqn(training_envs.action_space[0], 5, lr=1e-3)
    params = OffPolicyTrainerParams(
        training_collector=Collector(
            algorithm, training_envs, VectorReplayBuffer(1000, 2), exploration_noise=True
        ),
        test_collector=Collector(algorithm, test_envs),
        max_epochs=1,
        epoch_num_steps=200,
        collection_step_num_env_steps=20,
        test_step_num_episodes=1,
        batch_size=32,
        update_step_num_gradient_steps_per_sample=0.25,
        show_progress=False,
        verbose=False,
    )
    with TraceLoggerContext() as trace:
        algorithm.run_training(params)
    return trace.get_log()


def test_training_twice_with_one_seed_leaves_the_same_trace(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    first = train_traced(seed=0)
    snapshot.check(first, "bdqn", create_reference_result=True)
    result = snapshot.check(train_traced(seed=0), "bdqn")
    assert result.success and result.first_difference is None
    updates = first.filter_messages(required_messages=["update on"]).log_lines
    assert len(updates) >= 2
    assert len({line.rsplit(" ", 1)[1] for line in updates}) == len(updates)
    with pytest.raises(AssertionError, match="first difference at line 1"):
        snapshot.check(train_traced(seed=1), "bdqn")
