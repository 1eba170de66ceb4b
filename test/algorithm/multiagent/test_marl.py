"""Tests of the turn-based multi-agent layer: dispatching rows, rewards and updates to each
agent's algorithm, per-agent exploration, the stats map, and a real tic-tac-toe collection."""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from pettingzoo.classic import tictactoe_v3

from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, Policy, TrainingStats
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.multiagent.marl import (
    MapTrainingStats,
    MARLDispatcher,
    MultiAgentOffPolicyAlgorithm,
    MultiAgentPolicy,
)
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.algorithm.random import (
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MARLRandomTrainingStats,
)
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step


def tictactoe() -> PettingZooEnv:
    return PettingZooEnv(tictactoe_v3.env())


def dqn_agent(env: PettingZooEnv, eps: float = 0.0) -> DQN:
    torch.manual_seed(0)
    net = Net(state_shape=env.observation_space["observation"].shape, action_shape=9)
    policy = DiscreteQLearningPolicy(
        model=net, action_space=env.action_space, eps_training=eps, eps_inference=eps
    )
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), n_step_return_horizon=1)


class Recorder(OffPolicyAlgorithm):
    """Remembers what it was given to preprocess and to learn from."""

    class ConstPolicy(Policy):
        def __init__(self, action: int, space: Any) -> None:
            super().__init__(action_space=space)
            self.action = action

        def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
            return Batch(act=np.full(len(batch.obs), self.action))

    def __init__(self, action: int, space: Any) -> None:
        super().__init__(policy=self.ConstPolicy(action, space))
        self.preprocessed: list[tuple[Batch, np.ndarray, np.ndarray]] = []
        self.updated: list[Batch] = []

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        self.preprocessed.append((batch, indices, buffer.rew.copy()))
        return batch

    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        self.updated.append(batch)
        return TrainingStats(train_time=float(len(batch)))


def two_agent_buffer() -> ReplayBuffer:
    """Six alternating transitions of agents a and b with reward vectors [r_a, r_b]."""
    buffer = ReplayBuffer(10)
    agents = ["a", "b", "a", "b", "a", "b"]
    for t, agent in enumerate(agents):
        buffer.add(
            Batch(
                obs=Batch(agent_id=agent, obs=np.full(2, t), mask=np.ones(3, bool)),
                act=t % 3,
                rew=np.array([10.0 * t, -10.0 * t]),
                terminated=t == 5,
                truncated=False,
                obs_next=Batch(
                    agent_id="b" if agent == "a" else "a",
                    obs=np.full(2, t + 1),
                    mask=np.ones(3, bool),
                ),
                info={},
            )
        )
    return buffer


class FakeEnv:
    """The two things a dispatcher reads of a PettingZooEnv."""

    def __init__(self) -> None:
        self.agents = ["a", "b"]
        self.agent_idx = {"a": 0, "b": 1}


def test_dispatcher_gives_each_agent_its_rows_and_its_reward_column() -> None:
    buffer = two_agent_buffer()
    space = tictactoe().action_space
    first, second = Recorder(0, space), Recorder(1, space)
    dispatcher = MARLDispatcher([first, second], FakeEnv())  # type: ignore[arg-type]
    indices = np.arange(6)
    batch = dispatcher.dispatch_process_fn(buffer[indices], buffer, indices)
    (a_batch, a_idx, a_buffer_rew), (b_batch, b_idx, b_buffer_rew) = (
        first.preprocessed[0],
        second.preprocessed[0],
    )
    assert a_idx.tolist() == [0, 2, 4] and b_idx.tolist() == [1, 3, 5]
    assert a_batch.rew.tolist() == [0.0, 20.0, 40.0]
    assert b_batch.rew.tolist() == [-10.0, -30.0, -50.0]
    # while preprocessing, the buffer reads as the agent's own rewards (n-step returns use it)
    assert a_buffer_rew[:6].tolist() == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert b_buffer_rew[:6].tolist() == [0.0, -10.0, -20.0, -30.0, -40.0, -50.0]
    assert buffer.rew.ndim == 2  # restored afterwards
    # masked observations stay whole for mask-aware policies
    assert a_batch.obs.mask.shape == (3, 3)
    stats = dispatcher.dispatch_update_with_batch(batch, lambda alg, b: alg._update_with_batch(b))
    assert isinstance(stats, MapTrainingStats)
    assert len(first.updated[0]) == 3 and len(second.updated[0]) == 3
    assert stats.train_time == 3.0


def test_dispatcher_strips_unmasked_observations_and_skips_agents_without_rows() -> None:
    buffer = ReplayBuffer(4)
    for t in range(2):
        buffer.add(
            Batch(
                obs=Batch(agent_id="a", obs=np.full(2, t)),
                act=0,
                rew=np.array([1.0, 2.0]),
                terminated=False,
                truncated=False,
                obs_next=Batch(agent_id="a", obs=np.full(2, t + 1)),
                info={},
            )
        )
    space = tictactoe().action_space
    first, second = Recorder(0, space), Recorder(1, space)
    dispatcher = MARLDispatcher([first, second], FakeEnv())  # type: ignore[arg-type]
    batch = dispatcher.dispatch_process_fn(buffer[np.arange(2)], buffer, np.arange(2))
    seen = first.preprocessed[0][0]
    assert isinstance(seen.obs, np.ndarray) and seen.obs.tolist() == [[0, 0], [1, 1]]
    assert seen.obs_next.tolist() == [[1, 1], [2, 2]]
    assert not second.preprocessed
    stats = dispatcher.dispatch_update_with_batch(batch, lambda alg, b: alg._update_with_batch(b))
    assert list(stats.agent_id_to_stats) == ["a"] and not second.updated


def test_dispatcher_needs_one_algorithm_per_agent() -> None:
    space = tictactoe().action_space
    with pytest.raises(ValueError, match="one algorithm per agent"):
        MARLDispatcher([Recorder(0, space)], FakeEnv())  # type: ignore[arg-type]


def test_multi_agent_policy_acts_row_by_row_and_passes_the_training_flag() -> None:
    space = tictactoe().action_space
    policy = MultiAgentPolicy(
        {"a": Recorder.ConstPolicy(3, space), "b": Recorder.ConstPolicy(7, space)}
    )
    obs = Batch(
        agent_id=np.array(["b", "a", "b"]), obs=np.zeros((3, 2)), mask=np.ones((3, 9), bool)
    )
    out = policy(Batch(obs=obs, info={}))
    assert out.act.tolist() == [7, 3, 7]
    assert set(out.out.get_keys()) == {"a", "b"}
    assert policy.policies["a"].agent_id == "a"
    with policy_within_training_step(policy):
        assert all(p.is_within_training_step for p in policy.policies.values())
    assert not any(p.is_within_training_step for p in policy.policies.values())


def test_exploration_noise_is_each_agents_own_and_respects_masks() -> None:
    env = tictactoe()
    greedy, explorer = dqn_agent(env, eps=0.0), dqn_agent(env, eps=1.0)
    policy = MultiAgentPolicy({"player_1": greedy.policy, "player_2": explorer.policy})
    n = 200
    mask = np.zeros((n, 9), bool)
    mask[:, [2, 5]] = True
    obs = Batch(
        agent_id=np.array(["player_1", "player_2"] * (n // 2)),
        obs=np.zeros((n, 3, 3, 2), np.float32),
        mask=mask,
    )
    batch = Batch(obs=obs, info={})
    act = np.full(n, 2)
    noisy = policy.add_exploration_noise(act, batch)
    assert np.all(noisy[::2] == 2)  # eps 0: untouched
    assert set(noisy[1::2].tolist()) == {2, 5}  # eps 1: random, but only legal actions


@dataclass(kw_only=True)
class Loss(TrainingStats):
    loss: float


def test_map_training_stats_names_losses_by_agent() -> None:
    stats = MapTrainingStats(
        {"a": Loss(loss=1.0, train_time=2.0), "b": Loss(loss=3.0, train_time=4.0)},
        train_time_aggregator="mean",
    )
    assert stats.get_loss_stats_dict() == {"a/loss": 1.0, "b/loss": 3.0}
    assert stats.train_time == 3.0
    with pytest.raises(ValueError, match="train_time_aggregator"):
        MapTrainingStats({}, train_time_aggregator="median")  # type: ignore[arg-type]


def test_random_agent_plays_only_legal_moves_and_learns_nothing() -> None:
    env = tictactoe()
    agent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    agent.policy.action_space.seed(0)
    mask = np.zeros((500, 9), bool)
    mask[:, [0, 4, 8]] = True
    act = agent.policy(Batch(obs=Batch(obs=np.zeros((500, 1)), mask=mask), info={})).act
    assert set(act.tolist()) == {0, 4, 8}
    assert isinstance(agent._update_with_batch(Batch()), MARLRandomTrainingStats)
    with pytest.raises(ValueError, match="mask"):
        agent.policy(Batch(obs=np.zeros((2, 3)), info={}))
    with pytest.raises(ValueError, match="Discrete"):
        MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=gym.spaces.Box(-1, 1))


def test_tictactoe_collection_and_update_through_the_whole_stack() -> None:
    env = tictactoe()
    learner = dqn_agent(env, eps=0.1)
    opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
    opponent.policy.action_space.seed(1)
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, opponent], env=env)
    assert algorithm.get_algorithm("player_1") is learner
    envs = DummyVectorEnv([tictactoe for _ in range(4)])
    envs.seed(0)
    collector = Collector(algorithm, envs, VectorReplayBuffer(400, 4), exploration_noise=True)
    collector.reset()
    with policy_within_training_step(algorithm.policy):
        stats = collector.collect(n_step=200)
        assert stats.n_collected_steps == 200
        buffer = collector.buffer
        # every stored move was legal for the agent that made it
        rows = buffer.sample_indices(0)
        legal = buffer.obs.mask[rows, buffer.act[rows]]
        assert legal.all()
        before = [p.clone() for p in learner.policy.model.parameters()]
        update = algorithm.update(buffer, sample_size=64)
    assert set(update.agent_id_to_stats) == {"player_1", "player_2"}
    assert "player_1/loss" in update.get_loss_stats_dict()
    after = list(learner.policy.model.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
