"""The partially observed tasks and the recurrent example scripts of ``examples/pomdp/``.

Each script trains end to end on a tiny budget and ends with ``final test return: <float>``.
"""

import importlib
import json
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
    pomdp_envs = importlib.import_module("tianshou.env.pomdp")
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
    pomdp_envs = importlib.import_module("tianshou.env.pomdp")
    env = pomdp_envs.pendulum_without_velocity()
    obs, _ = env.reset(seed=0)
    assert env.observation_space.shape == (2,)
    assert obs[0] ** 2 + obs[1] ** 2 == pytest.approx(1.0, rel=1e-5)  # cos and sin only


def test_bad_visible_components_are_clear_errors() -> None:
    pomdp_envs = importlib.import_module("tianshou.env.pomdp")
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
def test_script_trains_saves_reports_resumes_and_watches(
    script: str, argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"examples.pomdp.{script}")
    common = ["--seed", "1", "--epoch", "1", "--num-test-envs", "2", "--logdir", str(tmp_path)]
    result = module.main([*common, "--logger", "tensorboard", *argv])
    out = capsys.readouterr().out
    assert np.isfinite(result)
    assert out.splitlines()[0] == "torch: 1 intra-op thread (--torch-threads)"
    (log_dir,) = {path.parent for path in tmp_path.rglob("events.out.tfevents.*")}
    assert log_dir.parts[-3:-1][1].startswith(script)
    policy = log_dir / "policy.pth"
    assert policy.is_file(), "the best policy is saved"
    summary = out[out.index("Run summary") :]
    for line in (
        f"final test return  {result:.2f}",
        f"policy             {policy}",
        f"result file        {log_dir / 'result.json'}",
    ):
        assert line in summary
    saved = json.loads((log_dir / "result.json").read_text())
    assert set(saved) == {
        "task", "algorithm", "env_steps", "update_steps", "wall_time_s", "best_test_return",
        "final_test_return", "log_dir", "policy_path", "video_path", "result_path", "config",
    }  # fmt: skip
    assert saved["final_test_return"] == pytest.approx(result)
    assert saved["env_steps"] >= 100 and saved["wall_time_s"] > 0
    assert saved["config"]["seed"] == 1 and saved["config"]["torch_threads"] == 1
    assert saved["policy_path"] == str(policy) and saved["video_path"] is None

    loaded = module.main([*common, "--resume-path", str(policy), "--watch", *argv])
    out = capsys.readouterr().out
    assert f"loaded {policy}" in out
    assert out.strip().splitlines()[-1] == f"mean return {loaded:.2f} over 2 episodes"
    assert "Run summary" not in out, "watching does not train"
