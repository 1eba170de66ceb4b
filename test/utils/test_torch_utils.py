from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Categorical, Uniform

from tianshou.algorithm import Policy
from tianshou.data import Batch
from tianshou.utils.torch_utils import (
    create_uniform_action_dist,
    policy_within_training_step,
    torch_device,
    torch_threads,
    torch_train_mode,
)


class ConstantPolicy(Policy):
    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=torch.zeros(len(batch.obs), dtype=torch.long))


def test_train_mode_is_restored() -> None:
    module = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    module.eval()
    with torch_train_mode(module):
        assert module.training and module[1].training
        with torch_train_mode(module, enabled=False):
            assert not module.training
        assert module.training
    assert not module.training


def test_training_step_flag_is_scoped() -> None:
    policy = ConstantPolicy(action_space=gym.spaces.Discrete(2))
    assert not policy.is_within_training_step
    with policy_within_training_step(policy):
        assert policy.is_within_training_step
        with policy_within_training_step(policy, enabled=False):
            assert not policy.is_within_training_step
        assert policy.is_within_training_step
    assert not policy.is_within_training_step


def test_device_of_module() -> None:
    assert torch_device(nn.Linear(1, 1)) == torch.device("cpu")
    assert torch_device(nn.Identity()) == torch.device("cpu")


def test_uniform_dist_over_box_has_batch_shape_and_bounds() -> None:
    low = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    high = np.array([1.0, 0.5, 5.0], dtype=np.float32)
    dist = create_uniform_action_dist(gym.spaces.Box(low=low, high=high), batch_size=4)
    assert isinstance(dist, Uniform)
    assert dist.batch_shape == (4, 3)
    torch.manual_seed(0)
    samples = dist.sample((500,))
    assert samples.shape == (500, 4, 3)
    low_t, high_t = torch.as_tensor(low), torch.as_tensor(high)
    assert bool((samples >= low_t).all()) and bool((samples <= high_t).all())
    torch.testing.assert_close(dist.mean[0], (low_t + high_t) / 2)
    expected_log_prob = -torch.log(high_t - low_t)
    torch.testing.assert_close(dist.log_prob(dist.mean), expected_log_prob.expand(4, 3))


def test_uniform_dist_over_multidim_box_keeps_action_shape() -> None:
    space = gym.spaces.Box(low=-2.0, high=2.0, shape=(2, 3))
    assert create_uniform_action_dist(space).batch_shape == (1, 2, 3)


def test_uniform_dist_over_discrete_has_equal_probabilities() -> None:
    dist = create_uniform_action_dist(gym.spaces.Discrete(5), batch_size=3)
    assert isinstance(dist, Categorical)
    assert dist.probs.shape == (3, 5)
    torch.testing.assert_close(dist.probs, torch.full((3, 5), 0.2))
    assert dist.sample().shape == (3,)


def test_uniform_dist_rejects_unsupported_and_unbounded_spaces() -> None:
    with pytest.raises(ValueError, match="MultiDiscrete"):
        create_uniform_action_dist(gym.spaces.MultiDiscrete([2, 3]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bounded Box"):
        create_uniform_action_dist(gym.spaces.Box(low=-np.inf, high=np.inf, shape=(2,)))


def test_torch_threads_sets_the_count_for_the_body_and_restores_it() -> None:
    before = torch.get_num_threads()
    wanted = 2 if before == 1 else 1
    with torch_threads(wanted) as chosen:
        assert chosen == wanted == torch.get_num_threads()
    assert torch.get_num_threads() == before


def test_torch_threads_restores_the_count_after_an_error() -> None:
    before = torch.get_num_threads()
    with pytest.raises(KeyError), torch_threads(2 if before == 1 else 1):
        raise KeyError("interrupted")
    assert torch.get_num_threads() == before


def test_torch_threads_none_leaves_torch_as_it_is() -> None:
    before = torch.get_num_threads()
    with torch_threads(None) as chosen:
        assert chosen == before == torch.get_num_threads()


def test_torch_threads_refuses_a_count_below_one() -> None:
    with pytest.raises(ValueError, match="at least 1"), torch_threads(0):
        pass
