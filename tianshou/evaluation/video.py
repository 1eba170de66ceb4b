"""Watching a policy: in a window when there is a display, otherwise as a video file of one
episode, rendered off-screen.

Used by the MuJoCo example scripts' ``--watch`` and by ``make demo``; any gymnasium task that
renders ``rgb_array`` frames can be recorded.

Without a display MuJoCo must render through EGL, a choice it reads once, when gymnasium first
imports it (on the first ``gym.make`` of a MuJoCo task). :func:`select_offscreen_rendering`
makes that choice; the scripts call it at the start of their ``main``, so importing this module
changes nothing.
"""

import os

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.utils.statistics import RunningMeanStd


def has_display() -> bool:
    """Whether a window can be opened (an X11 or Wayland display is set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def select_offscreen_rendering() -> None:
    """Without a display, make MuJoCo render off-screen through EGL (``MUJOCO_GL=egl``).

    A choice already made in the environment is kept. It takes effect only before the first
    MuJoCo env of the process is made, so call it at the start of a script's ``main``.
    """
    if not has_display():
        os.environ.setdefault("MUJOCO_GL", "egl")


def record_video(
    algorithm: Algorithm,
    task: str,
    path: str,
    seed: int = 0,
    obs_rms: RunningMeanStd | None = None,
    max_steps: int = 1000,
    fps: int | None = None,
) -> str:
    """Record one deterministic episode of ``algorithm``'s policy on ``task`` as a video file.

    The policy acts in eval mode without exploration noise (its ``deterministic_eval`` mean or
    mode action, as in testing). An MP4 has one frame per env step, rendered after the step;
    frames are at most 240 pixels a side, so that a 1000-step episode is well under 1 MB.

    :param path: where to write; the extension becomes ``.mp4`` (H.264 through imageio-ffmpeg)
        or, when ffmpeg is unavailable, ``.gif``. A GIF keeps every k-th frame, for at most 25
        frames per second (about 2 MB for a 1000-step Hopper episode).
    :param seed: the seed of the episode's reset.
    :param obs_rms: the observation statistics the policy was trained with (the training envs'
        ``get_obs_rms()``, or :func:`~tianshou.env.obs_norm_file.load_obs_rms`); applied
        frozen, as the test envs do.
    :param max_steps: the episode is cut after this many steps.
    :param fps: frames per second of the video; by default the env's real-time rate.
    :return: the path actually written.
    """
    path = os.path.splitext(path)[0] + (".mp4" if _ffmpeg_available() else ".gif")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    env = _make_rendering_env(task)
    fps = fps or int(env.metadata.get("render_fps") or 30)
    was_training = algorithm.training
    algorithm.eval()
    try:
        frames = _play_episode(algorithm, env, seed, obs_rms, max_steps)
    finally:
        env.close()
        algorithm.train(was_training)
    _write_video(frames, path, fps)
    return path


def _make_rendering_env(task: str, size: int = 240) -> gym.Env:
    """``task`` rendering ``rgb_array`` frames, at ``size`` pixels a side if the env supports it
    (MuJoCo envs do; rendering small is faster than downscaling later).

    The view is the model's ``track`` camera, which follows the body (the locomotion tasks
    have one; without it MuJoCo's free camera is used), so that a hopper does not hop out of
    the picture. Shadows and reflections are switched off: without a GPU, EGL renders in
    software, where they make every frame 5-8x slower. Only the looks change, not the physics."""
    try:
        env = gym.make(task, render_mode="rgb_array", width=size, height=size, camera_name="track")
    except TypeError:
        return gym.make(task, render_mode="rgb_array")
    model = getattr(env.unwrapped, "model", None)
    if model is not None and hasattr(model, "light_castshadow"):
        model.light_castshadow[:] = 0
        model.mat_reflectance[:] = 0
    return env


def _play_episode(
    algorithm: Algorithm,
    env: gym.Env,
    seed: int,
    obs_rms: RunningMeanStd | None,
    max_steps: int,
) -> list[np.ndarray]:
    frames = []
    obs, info = env.reset(seed=seed)
    for _ in range(max_steps):
        policy_obs = obs_rms.norm(obs) if obs_rms is not None else obs
        act = algorithm.policy.compute_action(policy_obs, info)
        obs, _, terminated, truncated, info = env.step(act)
        frames.append(_small_frame(env.render()))  # type: ignore[arg-type]
        if terminated or truncated:
            break
    return frames


def _small_frame(frame: np.ndarray, max_side: int = 240) -> np.ndarray:
    """``frame`` subsampled to at most ``max_side`` pixels a side, cropped to even sizes (H.264)."""
    stride = -(-max(frame.shape[:2]) // max_side)
    small = frame[::stride, ::stride]
    height, width = small.shape[0] // 2 * 2, small.shape[1] // 2 * 2
    return np.ascontiguousarray(small[:height, :width])


def _ffmpeg_available() -> bool:
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return False
    return True


GIF_MAX_FPS = 25


def _write_video(frames: list[np.ndarray], path: str, fps: int) -> None:
    if path.endswith(".gif"):
        # GIF delays are whole centiseconds and players slow down very short ones, so a GIF
        # keeps every k-th frame, for at most GIF_MAX_FPS frames per second of real time.
        stride = -(-fps // GIF_MAX_FPS)
        duration = 1000 * stride / fps
        imageio.mimsave(path, frames[::stride], duration=duration, loop=0)  # type: ignore[arg-type]
        return
    with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=2) as writer:
        for frame in frames:
            writer.append_data(frame)  # type: ignore[attr-defined]
