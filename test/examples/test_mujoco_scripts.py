"""The MuJoCo example scripts and their helpers (``examples.mujoco``: envs, command line,
persistence, video).

Every script trains end to end on tiny budgets, saves its state, resumes from it and watches it
(headless: as a video); the helper's command line, statistics files and video recording are
tested on their own.
"""

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pytest
import torch
from PIL import Image

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import CollectStats, InfoStats
from tianshou.env import VectorEnvNormObs, obs_norm_file
from tianshou.evaluation import video
from tianshou.scripts.mujoco import cli, training
from tianshou.utils.statistics import RunningMeanStd

TASK = "Hopper-v5"


@pytest.fixture(autouse=True)
def headless(monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(1)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):  # these tests run headless
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MUJOCO_GL", os.environ.get("MUJOCO_GL", "egl"))


def script(algo: str) -> Any:
    return importlib.import_module(f"examples.mujoco.mujoco_{algo}")


TINY = ["--hidden-sizes", "16", "--num-test-envs", "2", "--no-progress", "--epoch", "1"]
TINY += ["--num-train-envs", "2", "--backend", "dummy", "--task", TASK]
OFF_POLICY = ["--epoch_num_steps", "32", "--start-timesteps", "64", "--batch-size", "32"]
OFF_POLICY += ["--update-per-step", "1"]
ON_POLICY = ["--epoch_num_steps", "64", "--collection_step_num_env_steps", "32"]
ON_POLICY += ["--batch-size", "32"]
SCRIPTS = {
    "ddpg": OFF_POLICY,
    "td3": OFF_POLICY,
    "sac": OFF_POLICY,
    "redq": [*OFF_POLICY, "--ensemble-size", "3"],
    "reinforce": ON_POLICY,
    "a2c": ON_POLICY,
    "ppo": ON_POLICY,
    "npg": [*ON_POLICY, "--optim-critic-iters", "2"],
    "trpo": [*ON_POLICY, "--optim-critic-iters", "2"],
}
NORMALISING = {"reinforce", "a2c", "ppo", "npg", "trpo"}
WATCH_STEPS = 3


def assert_same_state(actual: Any, expected: Any, where: str = "state") -> None:
    """Equal module tensors and optimizer states (nested dicts/lists of tensors and numbers)."""
    if isinstance(expected, torch.Tensor):
        assert torch.equal(actual, expected), where
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys(), where
        for key, value in expected.items():
            assert_same_state(actual[key], value, f"{where}[{key!r}]")
    elif isinstance(expected, list | tuple):
        assert len(actual) == len(expected), where
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_same_state(a, e, f"{where}[{index}]")
    else:
        assert actual == expected, where


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("algo", list(SCRIPTS))
def test_script_trains_resumes_and_watches(
    algo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = script(algo)
    args = [*TINY, *SCRIPTS[algo], "--logdir", str(tmp_path)]
    result = module.main(args)
    assert isinstance(result, InfoStats)
    assert result.train_step >= 32
    run_dir = tmp_path / TASK / algo / "0"
    saved = run_dir / "policy.pth"
    assert saved.exists()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run_dir))
    assert (run_dir / "obs_rms.npz").exists() == (algo in NORMALISING)

    # resuming starts training from the saved networks, optimizers and observation statistics
    seen: list[bool] = []
    run_training = Algorithm.run_training

    def checked_run_training(self: Algorithm, params: Any) -> InfoStats:
        assert_same_state(self.state_dict(), torch.load(saved, weights_only=True))
        train_envs = params.training_collector.env
        if algo in NORMALISING:
            assert isinstance(train_envs, VectorEnvNormObs)
            with np.load(run_dir / "obs_rms.npz") as data:
                np.testing.assert_array_equal(train_envs.get_obs_rms().mean, data["mean"])
        seen.append(True)
        return run_training(self, params)

    monkeypatch.setattr(Algorithm, "run_training", checked_run_training)
    resumed = module.main([*args, "--resume_path", str(saved)])
    assert seen == [True]
    assert isinstance(resumed, InfoStats)
    assert resumed.train_step >= 32

    # --watch without a display evaluates and records a (short, here) video of one episode
    def short_video(*a: Any, **kw: Any) -> str:
        return video.record_video(*a, **{**kw, "max_steps": WATCH_STEPS})

    monkeypatch.setattr(training, "record_video", short_video)
    watched = module.main([*args, "--watch", "--resume-path", str(saved)])
    assert isinstance(watched, CollectStats)
    assert watched.n_collected_episodes == 2
    frames = imageio.mimread(run_dir / "watch.mp4")
    assert len(frames) == WATCH_STEPS
    assert frames[0].shape == (240, 240, 3)


# ---------------------------------------------------------------------------- record_video
class CountdownEnv(gym.Env):
    """Terminates after ``length`` steps; renders the step number as a 50x30 grey frame."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}
    length = 7

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.observation_space = gym.spaces.Box(-10.0, 10.0, (3,))
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,))
        self.t = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.full(3, 5.0, dtype=np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        return np.full(3, 5.0, dtype=np.float32), 0.0, self.t >= self.length, False, {}

    def render(self) -> np.ndarray:
        return np.full((50, 30, 3), 20 * self.t, dtype=np.uint8)


@pytest.fixture
def countdown_task() -> Iterator[str]:
    task = "CountdownVideoTest-v0"
    gym.register(task, entry_point=CountdownEnv)
    try:
        yield task
    finally:
        del gym.registry[task]


def sac_for(env: gym.Env) -> Algorithm:
    module = script("sac")
    return module.build_sac(module.get_args(["--hidden-sizes", "8", "--device", "cpu"]), env)


def test_record_video_writes_one_frame_per_step(countdown_task: str, tmp_path: Path) -> None:
    algorithm = sac_for(gym.make(countdown_task))
    algorithm.train()
    path = video.record_video(algorithm, countdown_task, str(tmp_path / "ep.gif"))
    assert path == str(tmp_path / "ep.mp4")
    frames = imageio.mimread(path)
    assert len(frames) == CountdownEnv.length
    assert frames[0].shape == (50, 30, 3)
    assert [int(f.mean()) for f in frames[:3]] == pytest.approx([20, 40, 60], abs=3)
    assert algorithm.training, "the algorithm's training mode is restored"


def test_record_video_stops_at_max_steps_and_normalises_observations(
    countdown_task: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    algorithm = sac_for(gym.make(countdown_task))
    seen: list[tuple[np.ndarray, bool]] = []
    compute_action = algorithm.policy.compute_action

    def spy(obs: np.ndarray, info: Any = None) -> Any:
        seen.append((obs, algorithm.policy.training))
        return compute_action(obs, info)

    monkeypatch.setattr(algorithm.policy, "compute_action", spy)
    obs_rms = RunningMeanStd(mean=np.full(3, 4.0), std=np.full(3, 4.0))
    path = video.record_video(
        algorithm, countdown_task, str(tmp_path / "ep"), obs_rms=obs_rms, max_steps=4
    )
    assert len(imageio.mimread(path)) == 4
    assert len(seen) == 4
    np.testing.assert_allclose(seen[0][0], np.full(3, 0.5), rtol=1e-5)  # (5 - 4) / sqrt(4)
    assert not seen[0][1], "the policy acts in eval mode"


def test_record_video_falls_back_to_gif_without_ffmpeg(
    countdown_task: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(video, "_ffmpeg_available", lambda: False)
    algorithm = sac_for(gym.make(countdown_task))
    path = video.record_video(algorithm, countdown_task, str(tmp_path / "ep.mp4"))
    assert path == str(tmp_path / "ep.gif")
    assert len(imageio.mimread(path)) == CountdownEnv.length  # 10 fps: every frame is kept
    fast = video.record_video(algorithm, countdown_task, str(tmp_path / "fast"), fps=100)
    frames = imageio.mimread(fast)
    assert len(frames) == 2  # every 4th frame, 25 per second: steps 1 and 5
    assert [int(f.mean()) for f in frames] == [20, 100]
    with Image.open(fast) as gif:
        gif.seek(1)
        assert gif.info["duration"] == 40


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_record_video_of_a_mujoco_task_is_small(tmp_path: Path) -> None:
    algorithm = sac_for(gym.make(TASK))
    path = video.record_video(algorithm, TASK, str(tmp_path / "hopper.mp4"), max_steps=5)
    frames = imageio.mimread(path)
    assert len(frames) <= 5
    assert frames[0].shape == (240, 240, 3)
    assert frames[0].std() > 0, "the frame shows a scene, not a blank image"
    assert os.path.getsize(path) < 200_000


# ---------------------------------------------------------------------------- command line
def test_parser_accepts_the_published_spellings() -> None:
    parser = cli.common_parser("doc")
    current = parser.parse_args(["--epoch-num-steps", "7", "--num-train-envs", "3"])
    for argv in (
        ["--epoch_num_steps", "7", "--num_training_envs", "3"],  # 2.x
        ["--step-per-epoch", "7", "--training-num", "3"],  # 1.x
    ):
        assert parser.parse_args(argv) == current
    assert (current.epoch_num_steps, current.num_training_envs) == (7, 3)
    assert parser.parse_args(["--no_progress"]).no_progress is True


def test_parser_has_the_published_logger_options() -> None:
    args = cli.common_parser("doc").parse_args([])
    assert (args.logger_type, args.wandb_project, args.resume_id) == (
        "tensorboard",
        "mujoco.benchmark",
        None,
    )


def test_parser_rejects_defaults_of_undeclared_options() -> None:
    with pytest.raises(ValueError, match="epoch_num_stepz"):
        cli.common_parser("doc", epoch_num_stepz=3)


@pytest.mark.parametrize("algo", list(SCRIPTS))
def test_script_defaults_are_the_benchmark_ones(algo: str) -> None:
    args = script(algo).get_args([])
    # env counts of the on-policy scripts: the published benchmark's (Table 1 of the Tianshou
    # paper: 64 for REINFORCE and PPO, 16 for A2C, NPG and TRPO)
    expected = {
        "ddpg": {"actor_lr": 1e-3, "exploration_noise": 0.1, "start_timesteps": 25_000},
        "td3": {"policy_noise": 0.2, "noise_clip": 0.5, "update_actor_freq": 2},
        "sac": {"auto_alpha": False, "alpha": 0.2, "start_timesteps": 10_000},
        "redq": {"ensemble_size": 10, "subset_size": 2, "actor_delay": 20, "auto_alpha": False},
        "reinforce": {
            "lr": 1e-3,
            "num_training_envs": 64,
            "return_scaling": True,
            "lr_decay": True,
        },
        "a2c": {
            "lr": 7e-4,
            "collection_step_num_env_steps": 80,
            "rmsprop_eps": 1e-5,
            "num_training_envs": 16,
        },
        "ppo": {
            "lr": 3e-4,
            "collection_step_num_env_steps": 2048,
            "eps_clip": 0.2,
            "num_training_envs": 64,
        },
        "npg": {
            "collection_step_num_env_steps": 1024,
            "optim_critic_iters": 20,
            "num_training_envs": 16,
        },
        "trpo": {
            "max_kl": 0.01,
            "backtrack_coeff": 0.8,
            "max_backtracks": 10,
            "num_training_envs": 16,
        },
    }[algo]
    assert {key: getattr(args, key) for key in expected} == expected
    off_policy = algo in {"ddpg", "td3", "sac", "redq"}
    assert args.hidden_sizes == ([256, 256] if off_policy else [64, 64])
    if off_policy:
        assert (args.batch_size, args.tau) == (256, 0.005)


# ---------------------------------------------------------------------------- statistics files
def test_obs_rms_round_trips_without_pickle(tmp_path: Path) -> None:
    rms = RunningMeanStd(clip_max=5.0)
    rms.update(np.arange(12.0).reshape(4, 3))
    path = str(tmp_path / "obs_rms.npz")
    obs_norm_file.save_obs_rms(rms, path)
    with np.load(path, allow_pickle=False) as data:  # plain arrays only
        assert set(data.files) == {"mean", "var", "count", "clip_max", "eps"}
    loaded = obs_norm_file.load_obs_rms(path)
    np.testing.assert_array_equal(loaded.mean, rms.mean)
    np.testing.assert_array_equal(loaded.var, rms.var)
    assert (loaded.count, loaded.clip_max, loaded.eps) == (rms.count, rms.clip_max, rms.eps)
    sample = np.array([100.0, -3.0, 1.0])
    np.testing.assert_array_equal(loaded.norm(sample), rms.norm(sample))
