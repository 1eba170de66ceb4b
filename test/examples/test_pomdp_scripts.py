"""The partially observed tasks and the recurrent example scripts of ``examples/pomdp/``.

Each script trains end to end on a tiny budget and ends with ``final test return: <float>``.
"""

import importlib
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch


@pytest.fixture(autouse=True)
def single_threaded() -> Iterator[None]:
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous_threads)


def test_cartpole_hides_both_velocities() -> None:
    pomdp_envs = importlib.import_module("examples.pomdp.pomdp_envs")
    env = pomdp_envs.cartpole_without_velocities()
    full = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=3)
    full_obs, _ = full.reset(seed=3)
    assert env.observation_space.shape == (2,)
    assert np.array_equal(obs, full_obs[[0, 2]])
    obs, *_ = env.step(1)
    full_obs, *_ = full.step(1)
    assert np.array_equal(obs, full_obs[[0, 2]])


def test_pendulum_hides_the_angular_velocity() -> None:
    pomdp_envs = importlib.import_module("examples.pomdp.pomdp_envs")
    env = pomdp_envs.pendulum_without_velocity()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (2,)
    assert obs[0] ** 2 + obs[1] ** 2 == pytest.approx(1.0, rel=1e-5)  # cos and sin only


def test_bad_visible_components_are_clear_errors() -> None:
    pomdp_envs = importlib.import_module("examples.pomdp.pomdp_envs")
    with pytest.raises(ValueError, match="visible"):
        pomdp_envs.HiddenComponents(gym.make("CartPole-v1"), [4])
    with pytest.raises(ValueError, match="flat Box"):
        pomdp_envs.HiddenComponents(gym.make("FrozenLake-v1"), [0])


@pytest.mark.parametrize(
    ("script", "argv"),
    [
        ("recurrent_ppo", ["--epoch-num-steps", "128", "--cell", "gru"]),
        ("recurrent_dqn", ["--epoch-num-steps", "200", "--batch-size", "8"]),
        (
            "recurrent_dqn",
            ["--epoch-num-steps", "200", "--batch-size", "8", "--prioritized-replay"],
        ),
        ("recurrent_sac", ["--epoch-num-steps", "100", "--batch-size", "8"]),
    ],
)
def test_script_trains_and_reports_the_final_test_return(
    script: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"examples.pomdp.{script}")
    common = ["--seed", "1", "--epoch", "1", "--num-test-envs", "2", "--logdir", str(tmp_path)]
    result = module.main([*common, "--logger", "tensorboard", *argv])
    last_line = capsys.readouterr().out.strip().splitlines()[-1]
    assert last_line == f"final test return: {result}"
    assert np.isfinite(result)
    assert any(tmp_path.rglob("events.out.tfevents.*"))
