"""Tests of the linear learning-rate schedule: it reaches 0 exactly after the number of
updates the training config implies, for on-policy, off-policy and offline configs."""

import pytest
import torch
from torch import nn

from tianshou.algorithm.optim import LRSchedulerFactoryLinear
from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.highlevel.params.lr_scheduler import LRSchedulerFactoryFactoryLinear


def num_steps(config: TrainingConfig) -> int:
    factory = LRSchedulerFactoryFactoryLinear(config).create_lr_scheduler_factory()
    assert isinstance(factory, LRSchedulerFactoryLinear)
    return factory.num_scheduler_steps


def test_on_policy_one_update_per_collection() -> None:
    config = OnPolicyTrainingConfig(
        max_epochs=10, epoch_num_steps=5000, collection_step_num_env_steps=2000, num_training_envs=1
    )
    assert num_steps(config) == 10 * 3  # ceil(5000 / 2000) collections per epoch


def test_off_policy_counts_gradient_steps() -> None:
    config = OffPolicyTrainingConfig(
        max_epochs=4,
        epoch_num_steps=100,
        collection_step_num_env_steps=10,
        update_step_num_gradient_steps_per_sample=0.5,
        num_training_envs=1,
    )
    assert num_steps(config) == 4 * 10 * 5


def test_offline_counts_epoch_steps() -> None:
    assert num_steps(TrainingConfig(max_epochs=3, epoch_num_steps=7, num_training_envs=1)) == 21


def test_learning_rate_decays_linearly_to_zero() -> None:
    config = OnPolicyTrainingConfig(
        max_epochs=2, epoch_num_steps=4, collection_step_num_env_steps=2, num_training_envs=1
    )
    optim = torch.optim.SGD(nn.Linear(1, 1).parameters(), lr=1.0)
    scheduler = (
        LRSchedulerFactoryFactoryLinear(config)
        .create_lr_scheduler_factory()
        .create_scheduler(optim)
    )
    lrs = []
    for _ in range(4):
        lrs.append(optim.param_groups[0]["lr"])
        optim.step()
        scheduler.step()
    assert lrs == pytest.approx([1.0, 0.75, 0.5, 0.25])
    assert optim.param_groups[0]["lr"] == 0.0


def test_episode_collection_and_zero_gradient_steps_are_rejected() -> None:
    episodes = OnPolicyTrainingConfig(
        num_training_envs=1, collection_step_num_env_steps=None, collection_step_num_episodes=2
    )
    with pytest.raises(ValueError, match="collection_step_num_episodes"):
        num_steps(episodes)
    no_updates = OffPolicyTrainingConfig(
        num_training_envs=1,
        collection_step_num_env_steps=10,
        update_step_num_gradient_steps_per_sample=0.01,
    )
    with pytest.raises(ValueError, match="no gradient steps"):
        num_steps(no_updates)
