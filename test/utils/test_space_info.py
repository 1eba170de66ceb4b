"""SpaceInfo read from Box, Discrete and MultiDiscrete spaces and from real environments."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from tianshou.utils.space_info import ActionSpaceInfo, ObservationSpaceInfo, SpaceInfo


def test_box_action_space() -> None:
    low = np.array([[-1.0, -3.0, 0.0]] * 2, dtype=np.float32)
    high = np.array([[1.0, 2.0, 5.0]] * 2, dtype=np.float32)
    info = ActionSpaceInfo.from_space(spaces.Box(low=low, high=high))
    assert info.action_shape == (2, 3) and info.action_dim == 6
    assert info.min_action == -3.0 and info.max_action == 5.0
    assert isinstance(info.min_action, float)


def test_discrete_and_multidiscrete_action_spaces() -> None:
    info = ActionSpaceInfo.from_space(spaces.Discrete(4, start=2))
    assert (info.action_shape, info.action_dim) == (4, 4)
    assert (info.min_action, info.max_action) == (2.0, 5.0)
    multi = ActionSpaceInfo.from_space(spaces.MultiDiscrete([3, 5], start=[1, 0]))
    assert multi.action_shape == (2,) and multi.action_dim == 2
    assert (multi.min_action, multi.max_action) == (0.0, 4.0)


def test_observation_spaces() -> None:
    assert ObservationSpaceInfo.from_space(spaces.Box(0, 1, shape=(3, 4))).obs_dim == 12
    discrete = ObservationSpaceInfo.from_space(spaces.Discrete(7))
    assert discrete.obs_shape == 7 and discrete.obs_dim == 7
    assert ObservationSpaceInfo.from_space(spaces.MultiDiscrete([2, 2, 2])).obs_shape == (3,)


def test_from_env_and_from_spaces() -> None:
    cartpole = SpaceInfo.from_env(gym.make("CartPole-v1"))
    assert cartpole.action_info.action_shape == 2 and cartpole.action_info.action_dim == 2
    assert (cartpole.action_info.min_action, cartpole.action_info.max_action) == (0.0, 1.0)
    assert cartpole.observation_info.obs_shape == (4,) and cartpole.observation_info.obs_dim == 4
    env = gym.make("Pendulum-v1")
    pendulum = SpaceInfo.from_spaces(env.action_space, env.observation_space)
    assert pendulum.action_info.action_shape == (1,)
    assert (pendulum.action_info.min_action, pendulum.action_info.max_action) == (-2.0, 2.0)
    assert pendulum.observation_info.obs_dim == 3


def test_unsupported_space_is_named() -> None:
    tuple_space = spaces.Tuple([spaces.Discrete(2), spaces.Discrete(3)])
    with pytest.raises(ValueError, match="unsupported action space Tuple"):
        ActionSpaceInfo.from_space(tuple_space)
    with pytest.raises(ValueError, match="unsupported observation space Tuple"):
        SpaceInfo.from_spaces(spaces.Discrete(2), tuple_space)


def test_a_masked_observation_is_described_by_its_obs_entry_and_mask() -> None:
    masked = spaces.Dict(
        {"obs": spaces.Box(-1.0, 1.0, shape=(5,)), "mask": spaces.Box(0, 1, (4,), dtype=bool)}
    )
    info = SpaceInfo.from_spaces(spaces.Discrete(4), masked).observation_info
    assert (info.obs_shape, info.obs_dim, info.mask_shape) == ((5,), 5, (4,))
    assert info.entries is None


def test_a_dict_observation_is_described_flat_and_per_entry() -> None:
    space = spaces.Dict(
        {
            "pos": spaces.Box(-1.0, 1.0, shape=(2,)),
            "goal": spaces.Discrete(4),
            "camera": spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8),
        }
    )
    info = ObservationSpaceInfo.from_space(space)
    assert info.obs_shape == (2 + 4 + 192,) and info.obs_dim == 198  # Discrete: one-hot
    assert info.entries is not None and info.mask_shape is None
    assert {key: entry.obs_shape for key, entry in info.entries.items()} == {
        "pos": (2,),
        "goal": 4,
        "camera": (8, 8, 3),
    }


def test_a_masked_dict_observation_keeps_the_entries_of_its_obs() -> None:
    inner = spaces.Dict({"a": spaces.Box(0.0, 1.0, (3,)), "b": spaces.MultiBinary(2)})
    info = ObservationSpaceInfo.from_space(
        spaces.Dict({"obs": inner, "mask": spaces.MultiBinary(6)})
    )
    assert info.obs_shape == (5,) and info.mask_shape == (6,)
    assert info.entries is not None and set(info.entries) == {"a", "b"}


def test_an_unsupported_entry_of_a_dict_is_named() -> None:
    space = spaces.Dict({"ok": spaces.Discrete(2), "bad": spaces.Text(5)})
    with pytest.raises(ValueError, match="unsupported observation space Text"):
        ObservationSpaceInfo.from_space(space)
