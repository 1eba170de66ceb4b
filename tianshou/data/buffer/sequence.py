"""Sequences of consecutive transitions from a replay buffer, for recurrent off-policy learning.

A recurrent Q-learner (R2D2) trains on short sequences rather than single transitions: it samples
start positions like any transition, then follows each start's episode forward through the
buffer's ``next`` links. A sequence never leaves its episode: steps after the episode's end (or
after the newest stored step) are padding, marked invalid, and repeat the last real step so that
every index stays in range.

>>> from tianshou.data import Batch, ReplayBuffer
>>> buffer = ReplayBuffer(8)
>>> for t in range(5):
...     _ = buffer.add(Batch(obs=t, act=0, rew=0.0, terminated=t == 2, truncated=False,
...                          obs_next=t + 1, info={}))
>>> rows, valid = sequence_rows(buffer, np.array([1, 3]), seq_len=3)
>>> rows.tolist(), valid.tolist()
([[1, 2, 2], [3, 4, 4]], [[True, True, False], [True, True, False]])
"""

import numpy as np

from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer


def sequence_rows(
    buffer: ReplayBuffer, starts: np.ndarray, seq_len: int
) -> tuple[np.ndarray, np.ndarray]:
    """The buffer indices of ``seq_len`` consecutive steps from every start.

    :param buffer: the buffer (a vector buffer's ``next`` keeps each env's steps apart).
    :param starts: buffer indices of the first steps, shape ``(B,)``.
    :param seq_len: steps per sequence.
    :return: ``(rows, valid)`` of shape ``(B, seq_len)``: buffer indices, and whether each is
        a real step of the start's episode (False for padding after its end).
    """
    if seq_len < 1:
        raise ValueError(f"seq_len must be a positive int, got {seq_len}")
    starts = np.asarray(starts, dtype=np.int64)
    rows = np.empty((len(starts), seq_len), dtype=np.int64)
    valid = np.ones((len(starts), seq_len), dtype=bool)
    rows[:, 0] = starts
    for t in range(1, seq_len):
        rows[:, t] = buffer.next(rows[:, t - 1])
        # ``next`` stays put at an episode's end and at the newest step
        valid[:, t] = valid[:, t - 1] & (rows[:, t] != rows[:, t - 1])
    return rows, valid


def sample_sequences(
    buffer: ReplayBuffer, batch_size: int, seq_len: int
) -> tuple[Batch, np.ndarray, np.ndarray]:
    """Sample ``batch_size`` sequences of ``seq_len`` steps with uniformly drawn starts.

    :return: ``(batch, rows, valid)``: ``batch`` holds the steps with a ``(batch_size,
        seq_len)`` leading shape, ``rows`` and ``valid`` are as in :func:`sequence_rows`.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size}")
    if len(buffer) == 0:
        raise ValueError("cannot sample sequences from an empty buffer")
    rows, valid = sequence_rows(buffer, buffer.sample_indices(batch_size), seq_len)
    return gather_sequences(buffer, rows), rows, valid


def gather_sequences(buffer: ReplayBuffer, rows: np.ndarray) -> Batch:
    """The steps at ``rows``, ``(B, T)`` buffer indices, as a Batch of leading shape ``(B, T)``."""
    flat = buffer[rows.reshape(-1)]
    return _reshape_leading(flat, rows.shape)


def _reshape_leading(batch: Batch, shape: tuple[int, ...]) -> Batch:
    out = Batch()
    for key, value in batch.items():
        if isinstance(value, Batch):
            out[key] = _reshape_leading(value, shape) if not value.is_empty() else value
        else:
            out[key] = value.reshape(*shape, *value.shape[1:])
    return out
