from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm import Policy
from tianshou.data import Batch


class LinearPolicy(Policy):
    """A deterministic policy whose raw action is the observation times a fixed weight."""

    def __init__(self, action_space: gym.Space, weight: float = 1.0, **kwargs: Any) -> None:
        super().__init__(action_space=action_space, **kwargs)
        self.weight = weight

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=torch.as_tensor(batch.obs, dtype=torch.float32) * self.weight)


BOX = gym.spaces.Box(low=np.array([0.0, -2.0]), high=np.array([10.0, 2.0]))


def test_action_type_follows_the_space() -> None:
    assert LinearPolicy(gym.spaces.Discrete(3)).action_type == "discrete"
    assert LinearPolicy(gym.spaces.MultiDiscrete([2, 3])).action_type == "discrete"
    assert LinearPolicy(BOX).action_type == "continuous"


def test_bad_configuration_is_rejected() -> None:
    with pytest.raises(ValueError, match="action_bound_method"):
        LinearPolicy(BOX, action_bound_method="sigmoid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Box"):
        LinearPolicy(gym.spaces.Discrete(3), action_scaling=True)
    with pytest.raises(ValueError, match="unsupported action space"):
        LinearPolicy(gym.spaces.Text(5))


def test_map_action_clips_then_scales() -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method="clip")
    raw = np.array([[-1.0, 1.0], [0.0, 0.5], [3.0, -7.0]])
    mapped = policy.map_action(raw)
    np.testing.assert_allclose(mapped, [[0.0, 2.0], [5.0, 1.0], [10.0, -2.0]])


def test_map_action_tanh_bound() -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method="tanh")
    raw = np.array([[0.3, -0.4]])
    expected = BOX.low + (BOX.high - BOX.low) * (np.tanh(raw) + 1) / 2
    np.testing.assert_allclose(policy.map_action(raw), expected)


@pytest.mark.parametrize("bound", ["clip", "tanh", None])
def test_map_action_inverse_round_trip(bound: Any) -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method=bound)
    raw = np.array([[-0.9, 0.2], [0.5, 0.99]])
    np.testing.assert_allclose(policy.map_action_inverse(policy.map_action(raw)), raw, atol=1e-6)


def test_scaling_without_bounding_rejects_out_of_range_actions() -> None:
    policy = LinearPolicy(BOX, action_scaling=True, action_bound_method=None)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        policy.map_action(np.array([[2.0, 0.0]]))


def test_discrete_actions_pass_through_as_numpy() -> None:
    policy = LinearPolicy(gym.spaces.Discrete(4), action_bound_method=None)
    mapped = policy.map_action(torch.tensor([1, 3]))
    assert isinstance(mapped, np.ndarray)
    np.testing.assert_array_equal(mapped, [1, 3])


def test_compute_action_on_one_observation() -> None:
    policy = LinearPolicy(BOX, weight=2.0, action_scaling=True)
    act = policy.compute_action(np.array([0.25, -3.0]))
    assert act.shape == (2,)
    np.testing.assert_allclose(act, [7.5, -2.0])


def test_exploration_noise_is_identity_by_default() -> None:
    policy = LinearPolicy(BOX)
    act = np.ones((2, 2))
    assert policy.add_exploration_noise(act, Batch()) is act
    assert policy.is_within_training_step is False
