"""A tiny CartPole PPO search shared by the hpo tests: two epochs of 100 env steps per seed,
so that a trial of two seeds trains in about a second."""

import pytest
import torch

from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import ExperimentConfig
from tianshou.highlevel.hpo.binding import PPO_BINDING
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.space import (
    CategoricalDimension,
    FloatDimension,
    SearchSpace,
)


def tiny_cartpole_ppo_template(seed: int = 1, max_epochs: int = 2) -> ExperimentTemplate:
    return ExperimentTemplate(
        binding=PPO_BINDING,
        env_factory=EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY),
        experiment_config=ExperimentConfig(seed=seed, persistence_enabled=False, device="cpu"),
        training_config=OnPolicyTrainingConfig(
            max_epochs=max_epochs,
            epoch_num_steps=100,
            num_training_envs=2,
            num_test_envs=2,
            collection_step_num_env_steps=50,
            buffer_size=100,
            batch_size=50,
        ),
    )


def tiny_space() -> SearchSpace:
    return SearchSpace(
        [
            FloatDimension("lr", 1e-4, 1e-2, log=True),
            CategoricalDimension("hidden_sizes", [(16,), (32, 32)]),
        ]
    )


@pytest.fixture(autouse=True)
def single_thread() -> None:
    torch.set_num_threads(1)
