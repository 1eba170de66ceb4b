"""Tests of the recurrent algorithms' sequence chunking (tianshou/algorithm/_sequences.py)."""

import numpy as np
import pytest
import torch

from tianshou.algorithm._sequences import (
    chunk_rows,
    masked_mean,
    run_ends,
    segment_starts,
    state_rows,
)
from tianshou.data import Batch, VectorReplayBuffer


def two_env_buffer(steps: int, done_at: int) -> VectorReplayBuffer:
    """Two envs stepped together; env 0 ends an episode at step ``done_at``."""
    buffer = VectorReplayBuffer(2 * steps + 4, 2)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=np.full((2, 1), t),
                act=np.zeros(2),
                rew=np.zeros(2),
                terminated=np.array([t == done_at, False]),
                truncated=np.zeros(2, dtype=bool),
                obs_next=np.zeros((2, 1)),
                info=[{}, {}],
            )
        )
    return buffer


def test_runs_start_after_episode_ends_and_at_other_envs() -> None:
    buffer = two_env_buffer(steps=5, done_at=2)
    batch, indices = buffer.sample(0)
    starts = segment_starts(buffer, indices, batch.terminated | batch.truncated)
    # env 0: steps 0-2 then 3-4; env 1: steps 0-4
    assert starts.tolist() == [True, False, False, True, False, True, False, False, False, False]
    assert run_ends(starts).tolist() == [
        False, False, True, False, True, False, False, False, False, True,
    ]  # fmt: skip


def test_chunks_never_cross_a_run_and_pad_with_the_last_row() -> None:
    starts = np.array([True, False, False, False, False, True, False])
    rows, valid = chunk_rows(starts, chunk_len=3)
    assert rows.tolist() == [[0, 1, 2], [3, 4, 4], [5, 6, 6]]
    assert valid.tolist() == [[True, True, True], [True, True, False], [True, True, False]]
    # every row appears exactly once among the valid entries
    assert sorted(rows[valid].tolist()) == list(range(7))


def test_chunking_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="chunk_len"):
        chunk_rows(np.array([True]), chunk_len=0)
    with pytest.raises(ValueError, match="first row"):
        chunk_rows(np.array([False, True]), chunk_len=2)
    rows, valid = chunk_rows(np.zeros(0, dtype=bool), chunk_len=4)
    assert rows.shape == valid.shape == (0, 4)


def test_state_rows_keeps_the_nesting() -> None:
    stored = Batch(actor={"hidden": np.arange(12.0).reshape(4, 1, 3)})
    picked = state_rows(stored, np.array([3, 1]), device=None)
    assert torch.equal(picked["actor"]["hidden"][:, 0, 0], torch.tensor([9.0, 3.0]))


def test_masked_mean_ignores_padding() -> None:
    values = torch.tensor([[1.0, 3.0, 100.0], [5.0, -50.0, -50.0]])
    valid = torch.tensor([[True, True, False], [True, False, False]])
    assert masked_mean(values, valid).item() == pytest.approx(3.0)
