"""Tests of sequence sampling from replay buffers (tianshou/data/buffer/sequence.py)."""

import numpy as np
import pytest

from tianshou.data import Batch, ReplayBuffer, VectorReplayBuffer
from tianshou.data.buffer.sequence import gather_sequences, sample_sequences, sequence_rows


def step(t: int, done: bool, envs: int | None = None) -> Batch:
    """Step ``t`` of one env (``envs`` None) or of ``envs`` envs stepped together."""
    rows = () if envs is None else (envs,)
    return Batch(
        obs=np.full((*rows, 2), t, dtype=np.float32),
        act=np.full(rows, t),
        rew=np.full(rows, float(t)),
        terminated=np.full(rows, done),
        truncated=np.zeros(rows, dtype=bool),
        obs_next=np.full((*rows, 2), t + 1, dtype=np.float32),
        info={} if envs is None else [{}] * envs,
    )


def test_sequences_stop_at_episode_ends_and_the_newest_step() -> None:
    buffer = VectorReplayBuffer(20, 2)
    for t in range(6):
        buffer.add(step(t, done=t == 1, envs=2))
    # env 0 lives in rows 0-9, env 1 in rows 10-19
    rows, valid = sequence_rows(buffer, np.array([0, 2, 14]), seq_len=4)
    assert rows.tolist() == [[0, 1, 1, 1], [2, 3, 4, 5], [14, 15, 15, 15]]
    assert valid.tolist() == [
        [True, True, False, False],
        [True, True, True, True],
        [True, True, False, False],
    ]


def test_sequences_follow_a_wrapped_circular_buffer() -> None:
    buffer = ReplayBuffer(4)
    for t in range(6):
        buffer.add(step(t, done=False))
    # rows now hold steps 4, 5, 2, 3: the step after row 3 (step 3) is row 0 (step 4)
    rows, valid = sequence_rows(buffer, np.array([2]), seq_len=4)
    assert rows.tolist() == [[2, 3, 0, 1]]
    assert valid.all()


def test_gathered_sequences_have_two_leading_axes() -> None:
    buffer = ReplayBuffer(10)
    for t in range(8):
        buffer.add(step(t, done=False))
    batch = gather_sequences(buffer, np.array([[0, 1, 2], [4, 5, 6]]))
    assert batch.obs.shape == (2, 3, 2)
    assert batch.rew.tolist() == [[0.0, 1.0, 2.0], [4.0, 5.0, 6.0]]


def test_sample_sequences_starts_anywhere_stored() -> None:
    buffer = ReplayBuffer(10)
    for t in range(8):
        buffer.add(step(t, done=t % 3 == 2))
    np.random.seed(0)
    batch, rows, valid = sample_sequences(buffer, batch_size=16, seq_len=3)
    assert batch.obs.shape == (16, 3, 2) and rows.shape == valid.shape == (16, 3)
    assert valid[:, 0].all()
    # within a sequence, real steps are consecutive steps of one episode
    steps = batch.act
    consecutive = steps[:, 1:] == steps[:, :-1] + 1
    assert np.all(consecutive[valid[:, 1:]])


def test_bad_requests_are_clear_errors() -> None:
    buffer = ReplayBuffer(4)
    with pytest.raises(ValueError, match="empty"):
        sample_sequences(buffer, batch_size=2, seq_len=2)
    buffer.add(step(0, done=False))
    with pytest.raises(ValueError, match="seq_len"):
        sequence_rows(buffer, np.array([0]), seq_len=0)
    with pytest.raises(ValueError, match="batch_size"):
        sample_sequences(buffer, batch_size=0, seq_len=2)
