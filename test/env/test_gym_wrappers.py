"""Action-space adapters and TruncatedAsTerminated."""

import gymnasium as gym
import numpy as np
import pytest

from test.env.toy_envs import CountEnv
from tianshou.env import ContinuousToDiscrete, MultiDiscreteToDiscrete, TruncatedAsTerminated


class RecordingEnv(gym.Env):
    """Stores the last action it was given."""

    def __init__(self, action_space: gym.Space) -> None:
        self.action_space = action_space
        self.observation_space = gym.spaces.Box(0, 1, (1,))
        self.last_action = None

    def reset(self, *, seed=None, options=None):  # type: ignore[no-untyped-def]
        return np.zeros(1, np.float32), {}

    def step(self, action):  # type: ignore[no-untyped-def]
        self.last_action = action
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_continuous_to_discrete_maps_indices_to_grid_values() -> None:
    box = gym.spaces.Box(np.array([-1.0, 0.0]), np.array([1.0, 10.0]), dtype=np.float64)
    env = ContinuousToDiscrete(RecordingEnv(box), [3, 5])
    assert env.action_space == gym.spaces.MultiDiscrete([3, 5])
    env.step(np.array([0, 4]))
    np.testing.assert_array_equal(env.unwrapped.last_action, [-1.0, 10.0])
    np.testing.assert_array_equal(env.action(np.array([1, 1])), [0.0, 2.5])
    batch = env.action(np.array([[2, 0], [0, 2]]))
    np.testing.assert_array_equal(batch, [[1.0, 0.0], [-1.0, 5.0]])
    single = ContinuousToDiscrete(RecordingEnv(box), 2)
    assert single.action_space == gym.spaces.MultiDiscrete([2, 2])
    with pytest.raises(ValueError, match="3 entries for 2"):
        ContinuousToDiscrete(RecordingEnv(box), [2, 2, 2])
    with pytest.raises(TypeError, match="Box"):
        ContinuousToDiscrete(RecordingEnv(gym.spaces.Discrete(3)), 2)


def test_multidiscrete_to_discrete_is_row_major() -> None:
    nvec = [2, 3, 4]
    env = MultiDiscreteToDiscrete(RecordingEnv(gym.spaces.MultiDiscrete(nvec)))
    assert env.action_space == gym.spaces.Discrete(24)
    for flat in range(24):
        np.testing.assert_array_equal(env.action(flat), np.unravel_index(flat, nvec))
    batch = env.action(np.arange(24))
    assert batch.shape == (24, 3)
    np.testing.assert_array_equal(batch, np.stack(np.unravel_index(np.arange(24), nvec), axis=1))
    env.step(23)
    np.testing.assert_array_equal(env.unwrapped.last_action, [1, 2, 3])
    with pytest.raises(TypeError, match="MultiDiscrete"):
        MultiDiscreteToDiscrete(RecordingEnv(gym.spaces.Discrete(3)))


def test_truncated_as_terminated() -> None:
    env = TruncatedAsTerminated(gym.wrappers.TimeLimit(CountEnv(size=100), max_episode_steps=2))
    env.reset(seed=0)
    assert env.step(1)[2:4] == (False, False)
    assert env.step(1)[2:4] == (True, True)
