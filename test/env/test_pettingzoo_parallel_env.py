"""Tests of PettingZooParallelEnv: stacking simultaneous moves into one row per agent, agents
that leave early, episode ends, and clear errors."""

import functools
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from mpe2 import simple_spread_v3
from pettingzoo.utils.env import ParallelEnv

from tianshou.env import DummyVectorEnv, PettingZooParallelEnv


class Relay(ParallelEnv):
    """Agent ``a`` leaves after one step, ``b`` after three; each gets its action as reward and
    sees the step count. The last step terminates ``b`` unless ``truncate`` is set."""

    metadata = {"name": "relay"}  # noqa: RUF012

    def __init__(self, truncate: bool = False, act_space: spaces.Space | None = None) -> None:
        self.possible_agents = ["a", "b"]
        self.truncate = truncate
        self._act_space = act_space or spaces.Discrete(3)
        self.received: list[dict[str, Any]] = []

    @functools.cache  # noqa: B019
    def observation_space(self, agent: str) -> spaces.Space:
        return spaces.Box(0, 10, shape=(2,), dtype=np.float32)

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        self.t = 0
        self.agents = list(self.possible_agents)
        return {a: np.full(2, 0.0, np.float32) for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict) -> tuple[dict, dict, dict, dict, dict]:
        self.received.append(dict(actions))
        self.t += 1
        leaving = {"a"} if self.t == 1 else ({"b"} if self.t == 3 else set())
        obs = {a: np.full(2, self.t, np.float32) for a in self.agents}
        rew = {a: float(np.sum(actions[a])) for a in self.agents}
        term = {a: a in leaving and not self.truncate for a in self.agents}
        trunc = {a: a in leaving and self.truncate for a in self.agents}
        self.agents = [a for a in self.agents if a not in leaving]
        return obs, rew, term, trunc, {a: {} for a in obs}


def test_rows_per_agent_and_agents_that_leave_early() -> None:
    raw = Relay()
    env = PettingZooParallelEnv(raw)
    assert env.agents == ["a", "b"]
    assert env.observation_space.shape == (2, 2)
    assert env.action_space == spaces.MultiDiscrete([3, 3])
    obs, info = env.reset(seed=0)
    assert obs.shape == (2, 2) and info["alive"].tolist() == [True, True]
    obs, rew, terminated, truncated, info = env.step(np.array([1, 2]))
    assert rew.tolist() == [1.0, 2.0] and not terminated and not truncated
    assert info["alive"].tolist() == [False, True]
    obs, rew, terminated, truncated, info = env.step(np.array([2, 1]))
    assert raw.received[-1] == {"b": 1}  # the action of the agent that left is dropped
    assert obs[0].tolist() == [0.0, 0.0] and obs[1].tolist() == [2.0, 2.0]
    assert rew.tolist() == [0.0, 1.0]
    _, _, terminated, truncated, info = env.step(np.array([0, 2]))
    assert terminated and not truncated and not info["alive"].any()


def test_an_episode_ending_by_truncation_is_truncated() -> None:
    env = PettingZooParallelEnv(Relay(truncate=True))
    env.reset()
    for _ in range(2):
        env.step(np.array([0, 0]))
    _, _, terminated, truncated, _ = env.step(np.array([0, 0]))
    assert truncated and not terminated


def test_continuous_actions_stack_into_a_box() -> None:
    env = PettingZooParallelEnv(Relay(act_space=spaces.Box(-1, 1, shape=(2,))))
    assert env.action_space.shape == (2, 2)
    env.reset()
    _, rew, *_ = env.step(np.zeros((2, 2)))
    assert rew.shape == (2,)


def test_wrong_number_of_actions_is_a_clear_error() -> None:
    env = PettingZooParallelEnv(Relay())
    env.reset()
    with pytest.raises(ValueError, match="one action per agent"):
        env.step(np.array([1]))


def test_agents_must_share_spaces() -> None:
    class Mixed(Relay):
        def action_space(self, agent: str) -> spaces.Space:
            return spaces.Discrete(3 if agent == "a" else 4)

    with pytest.raises(ValueError, match="another action space"):
        PettingZooParallelEnv(Mixed())


def test_mpe_simple_spread_runs_in_a_vector_env_with_seeded_resets() -> None:
    def make() -> PettingZooParallelEnv:
        return PettingZooParallelEnv(simple_spread_v3.parallel_env(N=3, max_cycles=5))

    envs = DummyVectorEnv([make, make])
    envs.seed(3)
    first, _ = envs.reset()
    envs.seed(3)
    again, _ = envs.reset()
    assert first.shape == (2, 3, 18) and np.array_equal(first, again)
    for _ in range(5):
        _, rew, terminated, truncated, _ = envs.step(np.ones((2, 3), dtype=np.int64))
        assert rew.shape == (2, 3)
    assert truncated.all() and not terminated.any()
