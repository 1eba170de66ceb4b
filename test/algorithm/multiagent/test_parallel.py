"""Tests of the simultaneous-move multi-agent layer: grouping agents by shared algorithm,
per-agent views of aligned rows, per-agent returns, and action mapping per group."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from mpe2 import simple_spread_v3

from tianshou.algorithm import PPO
from tianshou.algorithm.algorithm_base import Policy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.multiagent.parallel import (
    ParallelMultiAgentOnPolicyAlgorithm,
    ParallelMultiAgentPolicy,
    _fold,
    _unfold,
)
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooParallelEnv
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import policy_within_training_step


def spread(num_agents: int = 3, max_cycles: int = 10) -> PettingZooParallelEnv:
    return PettingZooParallelEnv(simple_spread_v3.parallel_env(N=num_agents, max_cycles=max_cycles))


def ppo(env: PettingZooParallelEnv, seed: int = 0) -> PPO:
    torch.manual_seed(seed)
    obs_dim = env.agent_observation_space.shape[0]
    actor = DiscreteActor(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[16]), action_shape=5
    )
    critic = DiscreteCritic(preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[16]))
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=env.agent_action_space
    )
    return PPO(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.9)


class CountingPolicy(Policy):
    """Acts with ``offset + obs[:, 0]`` and counts its calls and rows."""

    def __init__(self, offset: int, space: gym.Space) -> None:
        super().__init__(action_space=space)
        self.offset = offset
        self.calls: list[int] = []

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        self.calls.append(len(batch.obs))
        return Batch(act=self.offset + np.asarray(batch.obs)[:, 0].astype(int))


def test_fold_and_unfold_are_inverse_and_agent_major() -> None:
    values = np.arange(2 * 3 * 4).reshape(2, 3, 4)
    folded = _fold(values, np.array([0, 2]))
    assert folded.shape == (4, 4)
    assert np.array_equal(folded[:2], values[:, 0]) and np.array_equal(folded[2:], values[:, 2])
    assert np.array_equal(_unfold(folded, 2), values[:, [0, 2]])
    tensor = torch.as_tensor(values)
    assert torch.equal(_fold(tensor, np.array([1])), tensor[:, 1])


def test_a_shared_policy_acts_once_for_all_its_agents() -> None:
    env = spread()
    space = env.agent_action_space
    shared, alone = CountingPolicy(0, space), CountingPolicy(100, space)
    policy = ParallelMultiAgentPolicy([shared, alone, shared], env)
    obs = np.zeros((4, 3, 18), np.float32)
    obs[:, :, 0] = [[1, 2, 3]] * 4
    act = policy(Batch(obs=obs, info={})).act
    assert act.shape == (4, 3)
    assert act[0].tolist() == [1, 102, 3]
    assert shared.calls == [8] and alone.calls == [4]
    with policy_within_training_step(policy):
        assert shared.is_within_training_step and alone.is_within_training_step
    with pytest.raises(ValueError, match="recurrent"):
        policy(Batch(obs=obs, info={}), state=Batch(h=np.zeros(4)))


def test_continuous_actions_are_mapped_by_each_agents_policy() -> None:
    env = spread()

    class Scaled(CountingPolicy):
        def __init__(self, high: float) -> None:
            Policy.__init__(
                self, action_space=gym.spaces.Box(-high, high, shape=(2,)), action_scaling=True
            )

    policy = ParallelMultiAgentPolicy([Scaled(1.0), Scaled(2.0), Scaled(1.0)], env)
    raw = np.full((5, 3, 2), 0.5)
    mapped = policy.map_action(raw)
    assert np.allclose(mapped[:, 0], 0.5) and np.allclose(mapped[:, 1], 1.0)
    assert np.allclose(policy.map_action_inverse(mapped), raw)


def test_each_agent_gets_its_own_returns_and_a_shared_group_updates_once() -> None:
    env = spread(max_cycles=4)
    shared = ppo(env)
    algorithm = ParallelMultiAgentOnPolicyAlgorithm(algorithms=[shared] * 3, env=env)
    envs = DummyVectorEnv([lambda: spread(max_cycles=4) for _ in range(2)])
    envs.seed(0)
    collector = Collector(algorithm, envs, VectorReplayBuffer(16, 2))
    collector.reset()
    with policy_within_training_step(algorithm.policy):
        collector.collect(n_step=16)
        buffer = collector.buffer
        batch, indices = buffer.sample(0)
        processed = algorithm._preprocess_batch(batch, buffer, indices)
    group = processed[env.agents[0]]
    assert len(group) == 3 * len(batch)
    # each agent's slice is preprocessed alone, as if it were the only agent
    for column in range(3):
        rows = slice(column * len(batch), (column + 1) * len(batch))
        alone = shared._preprocess_batch(
            ParallelMultiAgentOnPolicyAlgorithm._agent_view(batch, column), buffer, indices
        )
        assert np.allclose(np.asarray(group.returns[rows]), np.asarray(alone.returns))
    with policy_within_training_step(algorithm.policy):
        stats = algorithm.update(buffer, batch_size=16, repeat=1)
    assert list(stats.agent_id_to_stats) == [env.agents[0]]
    assert algorithm.get_algorithm("agent_2") is shared
    with pytest.raises(KeyError, match="no agent"):
        algorithm.get_algorithm("agent_9")


def test_agent_view_slices_observations_actions_and_rewards() -> None:
    batch = Batch(
        obs=np.arange(12).reshape(2, 3, 2),
        act=np.array([[0, 1, 2], [3, 4, 0]]),
        rew=np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]),
        terminated=np.array([False, True]),
        truncated=np.array([False, False]),
        obs_next=np.arange(12, 24).reshape(2, 3, 2),
        info={},
    )
    view = ParallelMultiAgentOnPolicyAlgorithm._agent_view(batch, 1)
    assert view.obs.tolist() == [[2, 3], [8, 9]]
    assert view.act.tolist() == [1, 4] and view.rew.tolist() == [2.0, 5.0]
    assert view.obs_next.tolist() == [[14, 15], [20, 21]]
    assert view.terminated.tolist() == [False, True]


def test_independent_learners_keep_separate_parameters() -> None:
    env = spread(max_cycles=4)
    learners = [ppo(env, seed) for seed in range(3)]
    algorithm = ParallelMultiAgentOnPolicyAlgorithm(algorithms=learners, env=env)
    envs = DummyVectorEnv([lambda: spread(max_cycles=4) for _ in range(2)])
    envs.seed(1)
    collector = Collector(algorithm, envs, VectorReplayBuffer(16, 2))
    collector.reset()
    before = [[p.clone() for p in learner.parameters()] for learner in learners]
    with policy_within_training_step(algorithm.policy):
        collector.collect(n_step=16)
        stats = algorithm.update(collector.buffer, batch_size=8, repeat=2)
    assert sorted(stats.agent_id_to_stats) == env.agents
    assert "agent_0/loss" in " ".join(stats.get_loss_stats_dict())
    for learner, old in zip(learners, before, strict=True):
        assert any(not torch.equal(a, b) for a, b in zip(learner.parameters(), old, strict=True))
    with pytest.raises(ValueError, match="one per agent"):
        ParallelMultiAgentOnPolicyAlgorithm(algorithms=learners[:2], env=env)
