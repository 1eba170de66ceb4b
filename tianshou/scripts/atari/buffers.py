"""The Atari scripts' replay buffers, which store each uint8 frame once.

The buffers keep only each observation's newest frame (``save_only_last_obs``) and re-stack
``--frames-stack`` frames when sampling, so a 100k-transition buffer holds about
100k x 84 x 84 bytes (0.7 GB) instead of 100k x 2 x 4 x 84 x 84 floats.
"""

import argparse
from typing import Any

from tianshou.data import (
    PrioritizedVectorReplayBuffer,
    VectorReplayBuffer,
)


def _frame_buffer_options(args: argparse.Namespace) -> dict[str, Any]:
    """Store only each observation's newest frame, re-stack ``--frames-stack`` frames when
    sampling, and read ``obs_next`` from the next row: one uint8 frame per transition."""
    return {"ignore_obs_next": True, "save_only_last_obs": True, "stack_num": args.frames_stack}


def replay_buffer(args: argparse.Namespace, num_envs: int) -> VectorReplayBuffer:
    """A uniform buffer of ``--buffer-size`` transitions, one sub-buffer per env, storing each
    uint8 frame once."""
    return VectorReplayBuffer(args.buffer_size, num_envs, **_frame_buffer_options(args))


def prioritized_replay_buffer(
    args: argparse.Namespace, num_envs: int, alpha: float, beta: float, weight_norm: bool
) -> PrioritizedVectorReplayBuffer:
    """Like :func:`replay_buffer`, with prioritized sampling (see
    :class:`~tianshou.data.PrioritizedReplayBuffer` for ``alpha``, ``beta``, ``weight_norm``)."""
    return PrioritizedVectorReplayBuffer(
        args.buffer_size,
        num_envs,
        alpha=alpha,
        beta=beta,
        weight_norm=weight_norm,
        **_frame_buffer_options(args),
    )
