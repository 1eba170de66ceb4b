"""The Atari scripts' environments: seeded training and test envs of uint8 frame stacks,
episodes optionally cut short, and test envs that render to a window when watching.

Observations stay uint8 everywhere: the environments never scale them, and networks built with
``--scale-obs`` divide by 255 inside (:func:`scale_obs_if`).
"""

import argparse
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tianshou.env import BaseVectorEnv, DummyVectorEnv
from tianshou.env.atari.atari_network import ScaledObsInputActionReprNet
from tianshou.env.atari.atari_wrapper import AtariEnvFactory, make_atari_env
from tianshou.highlevel.env import EnvMode
from tianshou.utils.net.action_repr import ActionReprNetWithVectorOutput


@dataclass
class AtariEnvs:
    """A single env (for its spaces), the training and test vector envs, and the seconds
    between rendered frames when watching with ``--render`` (None: no rendering)."""

    env: gym.Env
    train_envs: BaseVectorEnv
    test_envs: BaseVectorEnv
    render: float | None = None

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        """The observation shape ``(c, h, w)``: stacked frames, channels first."""
        c, h, w = self.env.observation_space.shape  # type: ignore[misc]
        return c, h, w

    @property
    def num_actions(self) -> int:
        return int(self.env.action_space.n)  # type: ignore[attr-defined]


class EpisodeStepLimit:
    """Truncates every episode of a vector env after ``max_steps`` agent steps.

    Works with the vector envs :func:`make_atari_env` returns (gymnasium-based or EnvPool);
    everything but ``reset`` and ``step`` is read from the wrapped env.

    :param venv: the vector env.
    :param max_steps: the steps after which an episode is reported as truncated.
    """

    def __init__(self, venv: BaseVectorEnv, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError(f"--max-episode-steps must be at least 1, got {max_steps}")
        self.venv = venv
        self.max_steps = max_steps
        self._steps = np.zeros(len(venv), dtype=np.int64)

    def __getattr__(self, key: str) -> Any:
        if key == "venv":  # not set yet, e.g. while unpickling
            raise AttributeError(key)
        return getattr(self.venv, key)

    def __len__(self) -> int:
        return len(self.venv)

    def _ids(self, env_id: Any) -> np.ndarray:
        return np.arange(len(self)) if env_id is None else np.atleast_1d(np.asarray(env_id))

    def reset(self, env_id: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        self._steps[self._ids(env_id)] = 0
        return self.venv.reset(env_id, **kwargs)

    def step(self, action: Any, env_id: Any = None) -> tuple[Any, Any, Any, np.ndarray, Any]:
        obs, rew, terminated, truncated, info = self.venv.step(action, env_id)
        ids = self._ids(env_id)
        self._steps[ids] += 1
        truncated = np.logical_or(truncated, self._steps[ids] >= self.max_steps)
        return obs, rew, terminated, truncated, info


@contextmanager
def atari_envs(args: argparse.Namespace) -> Iterator[AtariEnvs]:
    """Seed numpy and torch with ``--seed`` and build the unscaled (uint8) environments,
    with episodes cut at ``--max-episode-steps`` if given. With ``--watch --render`` and a
    display, the test envs render to a window (see :func:`render_interval`).

    The vector envs are closed when the block ends.
    """
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    env, train_envs, test_envs = make_atari_env(
        args.task,
        args.seed,
        args.num_training_envs,
        args.num_test_envs,
        scale=0,
        frame_stack=args.frames_stack,
    )
    render = render_interval(args.render) if args.watch else None
    if render is not None:
        test_envs.close()
        test_envs = _rendering_envs(args)
    if args.max_episode_steps is not None:
        train_envs = EpisodeStepLimit(train_envs, args.max_episode_steps)  # type: ignore[assignment]
        test_envs = EpisodeStepLimit(test_envs, args.max_episode_steps)  # type: ignore[assignment]
    try:
        yield AtariEnvs(env, train_envs, test_envs, render)
    finally:
        train_envs.close()
        test_envs.close()


def _rendering_envs(args: argparse.Namespace) -> BaseVectorEnv:
    """``--num-test-envs`` gymnasium test envs rendering to a window (EnvPool cannot render),
    stepped in this process, which owns the window."""
    factory = AtariEnvFactory(args.task, args.frames_stack)
    seeds = range(args.seed, args.seed + args.num_test_envs)
    return DummyVectorEnv([partial(factory.create_env, EnvMode.WATCH, seed) for seed in seeds])


def render_interval(render: float) -> float | None:
    """``--render`` (seconds between frames), or None: when it is 0, or (with a warning) when
    there is no display to render to, so that watching a policy on a headless machine still
    evaluates it instead of failing to open a window."""
    if render <= 0:
        return None
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        warnings.warn(
            "--render needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set: "
            "evaluating without rendering",
            stacklevel=2,
        )
        return None
    return render


def scale_obs_if(scale: bool, net: ActionReprNetWithVectorOutput) -> ActionReprNetWithVectorOutput:
    """``net`` dividing its uint8 input by 255 first when ``scale`` (``--scale-obs 1``)."""
    return ScaledObsInputActionReprNet(net) if scale else net
