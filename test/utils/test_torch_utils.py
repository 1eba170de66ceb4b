from typing import Any

import gymnasium as gym
import torch
from torch import nn

from tianshou.algorithm import Policy
from tianshou.data import Batch
from tianshou.utils.torch_utils import policy_within_training_step, torch_device, torch_train_mode


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
