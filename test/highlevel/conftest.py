"""Small real environments shared by the high-level tests."""

from collections.abc import Iterator

import pytest
import torch

from tianshou.highlevel.env import EnvFactoryRegistered, Environments, VectorEnvType


def make_envs(task: str, seed: int = 0) -> Environments:
    factory = EnvFactoryRegistered(task=task, venv_type=VectorEnvType.DUMMY)
    return factory.create_envs(num_training_envs=2, num_test_envs=2, seed=seed)


@pytest.fixture
def cartpole() -> Iterator[Environments]:
    envs = make_envs("CartPole-v1")
    yield envs
    envs.training_envs.close()
    envs.test_envs.close()


@pytest.fixture
def pendulum() -> Iterator[Environments]:
    envs = make_envs("Pendulum-v1")
    yield envs
    envs.training_envs.close()
    envs.test_envs.close()


@pytest.fixture(autouse=True)
def _seed_torch() -> None:
    torch.manual_seed(0)
