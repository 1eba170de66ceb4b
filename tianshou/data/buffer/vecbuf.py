"""Replay buffers for vectorised environments: equal sub-buffers behind one manager."""

import math
from typing import Any

from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.manager import ReplayBufferManager


def subbuffer_size(total_size: int, buffer_num: int) -> int:
    """Size of each of ``buffer_num`` equal sub-buffers holding at least ``total_size`` rows.

    :raises ValueError: if ``buffer_num`` is not positive or ``total_size`` is negative.
    """
    if isinstance(buffer_num, bool) or not isinstance(buffer_num, int) or buffer_num <= 0:
        raise ValueError(f"buffer_num must be a positive integer, got {buffer_num!r}")
    if total_size < 0:
        raise ValueError(f"total_size must be non-negative, got {total_size!r}")
    return math.ceil(total_size / buffer_num)


class VectorReplayBuffer(ReplayBufferManager):
    """``buffer_num`` replay buffers of ``ceil(total_size / buffer_num)`` rows each, one per
    environment of a vectorised env, so each environment's episodes stay contiguous.

    Use it with a collector over ``buffer_num`` (or fewer) environments; ``add`` takes one row per
    environment with ``buffer_ids`` set to the environments' ids.

    :param total_size: total capacity over all sub-buffers (rounded up to a multiple of
        ``buffer_num``).
    :param buffer_num: number of sub-buffers; must be positive.
    :param kwargs: options of every sub-buffer (see :class:`~tianshou.data.ReplayBuffer`).
    """

    def __init__(self, total_size: int, buffer_num: int, **kwargs: Any) -> None:
        size = subbuffer_size(total_size, buffer_num)
        super().__init__([ReplayBuffer(size, **kwargs) for _ in range(buffer_num)])


# --- prioritized and hindsight variants ---

from tianshou.data.buffer.her import HERReplayBuffer  # noqa: E402
from tianshou.data.buffer.manager import (  # noqa: E402
    HERReplayBufferManager,
    PrioritizedReplayBufferManager,
)
from tianshou.data.buffer.prio import PrioritizedReplayBuffer  # noqa: E402


class PrioritizedVectorReplayBuffer(PrioritizedReplayBufferManager):
    """``buffer_num`` prioritized sub-buffers of ``ceil(total_size / buffer_num)`` rows, one per
    environment, sampled by priority across all of them.

    :param total_size: total capacity over all sub-buffers.
    :param buffer_num: number of sub-buffers; must be positive.
    :param kwargs: ``alpha``, ``beta`` and the other options of
        :class:`~tianshou.data.PrioritizedReplayBuffer`.
    """

    def __init__(self, total_size: int, buffer_num: int, **kwargs: Any) -> None:
        size = subbuffer_size(total_size, buffer_num)
        super().__init__([PrioritizedReplayBuffer(size, **kwargs) for _ in range(buffer_num)])

    def set_beta(self, beta: float) -> None:
        """Change the importance-sampling exponent (of the manager and every sub-buffer)."""
        super().set_beta(beta)
        for buf in self.buffers:
            buf.set_beta(beta)


class HERVectorReplayBuffer(HERReplayBufferManager):
    """``buffer_num`` hindsight-relabelling sub-buffers of ``ceil(total_size / buffer_num)`` rows,
    one per environment of a vectorised goal-conditioned env.

    :param total_size: total capacity over all sub-buffers.
    :param buffer_num: number of sub-buffers; must be positive.
    :param kwargs: ``compute_reward_fn``, ``horizon``, ``future_k`` and the other options of
        :class:`~tianshou.data.HERReplayBuffer`.
    """

    def __init__(self, total_size: int, buffer_num: int, **kwargs: Any) -> None:
        size = subbuffer_size(total_size, buffer_num)
        super().__init__([HERReplayBuffer(size, **kwargs) for _ in range(buffer_num)])
