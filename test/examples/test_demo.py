"""``make demo`` (``examples.mujoco.demo``) runs end to end on a tiny budget and writes what its
table promises: a TensorBoard log, a learning-curve PNG and a video; a failing renderer costs
only the video; the demo ends with the best-testing policy and its observation statistics."""

import os
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import mujoco
import numpy as np
import pytest
import torch

from tianshou.env import DummyVectorEnv, VectorEnvNormObs
from tianshou.evaluation.video import _make_rendering_env

from examples.mujoco import demo as demo_module

TINY = [
    "--epoch", "1", "--epoch-num-steps", "128", "--collection-step-num-env-steps", "64",
    "--num-train-envs", "2", "--batch-size", "32", "--hidden-sizes", "16",
    "--num-test-envs", "2", "--backend", "dummy", "--video-max-steps", "30",
]  # fmt: skip


@pytest.fixture
def demo() -> ModuleType:
    return demo_module


def table_value(out: str, name: str) -> str:
    """The value printed next to ``name`` in the demo's table."""
    (line,) = [line for line in out.splitlines() if line.startswith(name + "  ")]
    return line[len(name) :].strip()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_demo_prints_table_and_writes_log_curve_and_video(
    demo: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = demo.main([*TINY, "--logdir", str(tmp_path), "--seed", "3"])
    out = capsys.readouterr().out
    log_path = tmp_path / "Hopper-v5" / "ppo" / "3"
    assert result.log_path == str(log_path)
    assert result.env_steps >= 128
    assert 0 < result.wall_s <= result.total_s
    assert result.final_episode_length > 0
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(log_path))
    curve = Path(result.curve_path)
    assert curve == log_path / "curve.png"
    assert curve.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert result.video is not None, result.video_note
    video = Path(result.video)
    assert video.parent == log_path and video.suffix in (".mp4", ".gif")
    assert video.stat().st_size > 1000
    rows = ("task", "env steps", "wall time", "total time", "random policy", "last epoch's test")
    for row in rows:
        assert row in out
    assert table_value(out, "best epoch's test return").startswith(f"{result.best_return:.1f}")
    final = table_value(out, "final test return, best policy (2 new episodes)")
    assert final.startswith(f"{result.final_return:.1f}")
    assert "final test episode length" in out
    assert str(curve) in out and str(video) in out and str(log_path) in out


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_demo_finishes_with_table_when_video_fails(
    demo: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_renderer(*args: object, **kwargs: object) -> str:
        raise RuntimeError("no EGL display")

    monkeypatch.setattr(demo, "record_video", no_renderer)
    result = demo.main([*TINY, "--logdir", str(tmp_path), "--no-progress"])
    out = capsys.readouterr().out
    assert result.video is None
    assert "not recorded: RuntimeError: no EGL display" in result.video_note
    assert "final test return" in out
    assert Path(result.curve_path).exists()
    assert not list((tmp_path / "Hopper-v5" / "ppo" / "0").glob("*.mp4"))


def test_best_policy_restores_the_saved_weights_and_frozen_obs_statistics(
    demo: ModuleType,
) -> None:
    train_envs = VectorEnvNormObs(DummyVectorEnv([lambda: gym.make("Pendulum-v1")]))
    test_envs = VectorEnvNormObs(
        DummyVectorEnv([lambda: gym.make("Pendulum-v1")]), update_obs_rms=False
    )
    train_envs.reset(seed=0)
    curve = demo.LearningCurve()
    curve.points.append((4096, 1.0, 0.0, 10.0))
    best = demo.BestPolicy(train_envs, curve)
    net = torch.nn.Linear(3, 1)
    best.save(net)
    saved_weight = net.weight.detach().clone()
    saved_mean = np.array(train_envs.get_obs_rms().mean)
    with torch.no_grad():
        net.weight.add_(1.0)
    train_envs.step(np.zeros((1, 1)))  # the live statistics move on
    assert not np.allclose(train_envs.get_obs_rms().mean, saved_mean)
    best.restore(net, test_envs)
    assert torch.equal(net.weight, saved_weight)
    assert np.allclose(test_envs.get_obs_rms().mean, saved_mean)
    assert test_envs.get_obs_rms() is not train_envs.get_obs_rms()
    assert best.env_step == 4096


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_video_camera_follows_the_hopper_and_skips_costly_effects() -> None:
    env = _make_rendering_env("Hopper-v5")
    try:
        env.reset(seed=0)
        model, data = env.unwrapped.model, env.unwrapped.data  # type: ignore[attr-defined]
        assert not model.light_castshadow.any() and not model.mat_reflectance.any()
        data.qpos[0] = 4.0  # the hopper moved 4 m forward: a fixed camera would lose it
        mujoco.mj_forward(model, data)
        frame = env.render().astype(int)  # type: ignore[union-attr]
    finally:
        env.close()
    body = (frame[..., 0] > frame[..., 2] + 60).sum()  # the hopper is orange, the scene is not
    assert body > 100, f"only {body} hopper-coloured pixels in the frame"
