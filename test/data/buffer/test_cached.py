"""Tests for CachedReplayBuffer (tianshou/data/buffer/cached.py)."""

import pickle

import numpy as np
import pytest

from tianshou.data import Batch, CachedReplayBuffer, ReplayBuffer, VectorReplayBuffer


def steps(values: list[int], terminated: list[bool], **extra: object) -> Batch:
    n = len(values)
    return Batch(
        obs=np.array(values),
        act=np.array(values),
        rew=np.array(values, dtype=float),
        terminated=np.array(terminated),
        truncated=np.zeros(n, bool),
        obs_next=np.array(values) + 100,
        **extra,
    )


def test_layout_and_attributes() -> None:
    main = ReplayBuffer(10, stack_num=2)
    buf = CachedReplayBuffer(main, 2, 4)
    assert buf.main_buffer is main and buf.cached_buffer_num == 2
    assert len(buf.cached_buffers) == 2
    assert all(c.maxsize == 4 and c.options == main.options for c in buf.cached_buffers)
    assert np.array_equal(buf.subbuffer_edges, [0, 10, 14, 18])
    with pytest.raises(NotImplementedError):
        buf.update(buf)


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((ReplayBuffer(5), 0, 3), ValueError),
        ((ReplayBuffer(5), 2, 0), ValueError),
        ((VectorReplayBuffer(4, 2), 2, 3), TypeError),
        (("buffer", 2, 3), TypeError),
    ],
)
def test_constructor_validation(args: tuple, error: type[Exception]) -> None:
    with pytest.raises(error):
        CachedReplayBuffer(*args)


def test_finished_episodes_move_to_main_buffer() -> None:
    buf = CachedReplayBuffer(ReplayBuffer(10), 2, 4)
    rows, ep_rew, ep_len, ep_idx = buf.add(steps([1, 10], [False, False]))
    assert np.array_equal(rows, [10, 14]) and np.array_equal(ep_idx, [10, 14])
    rows, ep_rew, ep_len, ep_idx = buf.add(steps([2, 11], [True, False]))
    assert np.array_equal(rows, [1, 15]) and np.array_equal(ep_idx, [0, 14])
    assert np.array_equal(ep_len, [2, 0]) and np.array_equal(ep_rew, [3.0, 0.0])
    assert np.array_equal(buf.main_buffer[:].obs, [1, 2])
    assert len(buf.cached_buffers[0]) == 0 and len(buf) == 4
    assert np.array_equal(buf.sample_indices(0), [0, 1, 14, 15])
    assert np.array_equal(buf.last_index, [1, 10, 15])
    rows, ep_rew, ep_len, ep_idx = buf.add(steps([3, 12], [False, True]))
    assert np.array_equal(rows, [10, 4]) and np.array_equal(ep_idx, [10, 2])
    assert np.array_equal(ep_len, [0, 3]) and np.array_equal(ep_rew, [0.0, 33.0])
    assert np.array_equal(buf.main_buffer[:].obs, [1, 2, 10, 11, 12])
    assert np.array_equal(buf.main_buffer[:].obs_next, [101, 102, 110, 111, 112])
    assert np.array_equal(buf.next(np.arange(5)), [1, 1, 3, 4, 4])
    assert np.array_equal(buf.unfinished_index(), [10])


def test_buffer_ids_name_environments() -> None:
    buf = CachedReplayBuffer(ReplayBuffer(6), 3, 3)
    rows, *_ = buf.add(steps([7], [False]), buffer_ids=[2])
    assert np.array_equal(rows, [12])
    for bad in ([3], [-1], [1.0], np.array([0.7])):
        with pytest.raises(ValueError, match="buffer_ids"):
            buf.add(steps([8], [False]), buffer_ids=bad)
    assert len(buf) == 1
    rows, *_ = buf.add(steps([8], [False]), buffer_ids=np.array([1], dtype=np.uint8))
    assert np.array_equal(rows, [9])


def test_long_episode_keeps_its_last_steps() -> None:
    buf = CachedReplayBuffer(ReplayBuffer(10), 1, 3)
    for i in range(5):
        rows, ep_rew, ep_len, ep_idx = buf.add(steps([i], [i == 4]), buffer_ids=[0])
    assert ep_len[0] == 5 and ep_rew[0] == 10.0
    assert np.array_equal(buf.main_buffer[:].obs, [2, 3, 4])
    assert (ep_idx[0], rows[0]) == (0, 2)


def test_frame_stack_with_ignore_obs_next() -> None:
    size, bufsize, stack_num, cached_num = 5, 9, 4, 3
    plain = CachedReplayBuffer(
        ReplayBuffer(bufsize, stack_num=stack_num, ignore_obs_next=True), cached_num, size
    )
    avail = CachedReplayBuffer(
        ReplayBuffer(bufsize, stack_num=stack_num, ignore_obs_next=True, sample_avail=True),
        cached_num,
        size,
    )
    state = 1
    for _ in range(18):
        state_next = state + 1
        done = state_next == size
        obs = np.array([state + size * i for i in range(cached_num)])
        batch = Batch(
            obs=obs,
            act=[1] * cached_num,
            rew=[int(done)] * cached_num,
            terminated=[done] * cached_num,
            truncated=[False] * cached_num,
            obs_next=-obs,
            info=[{}] * cached_num,
        )
        plain.add(batch)
        avail.add(batch)
        assert np.array_equal(plain.obs, avail.obs)
        state = 1 if done else state_next
    assert np.array_equal(
        plain.obs,
        [12, 13, 14, 4, 6, 7, 8, 9, 11, 1, 2, 3, 4, 0, 6, 7, 8, 9, 0, 11, 12, 13, 14, 0],
    )
    done_rows = np.flatnonzero(plain.done)
    assert np.array_equal(done_rows, [2, 3, 7, 12, 17, 22])
    indices = plain.sample_indices(0)
    assert np.array_equal(indices, [3, 4, 5, 6, 7, 8, 0, 1, 2, 9, 10, 14, 15, 19, 20])
    assert np.array_equal(
        plain[indices[:4]].obs, [[4, 4, 4, 4], [6, 6, 6, 6], [6, 6, 6, 7], [6, 6, 7, 8]]
    )
    assert np.array_equal(plain[np.array([0, 10])].obs_next, [[11, 11, 12, 13], [1, 1, 1, 2]])
    assert np.array_equal(sorted(avail.sample_indices(0)), [2, 7])
    assert np.all(np.isin(avail.sample_indices(100), [2, 7]))
    avail.stack_num = 2
    for sub in avail.buffers:
        sub.stack_num = 2
    assert np.array_equal(sorted(avail.sample_indices(0)), [0, 1, 2, 5, 6, 7, 10, 15, 20])


def test_save_only_last_obs_and_pickle() -> None:
    buf = CachedReplayBuffer(
        ReplayBuffer(9, stack_num=4, save_only_last_obs=True, ignore_obs_next=True), 3, 5
    )
    frames = np.random.default_rng(0).random((5, 4, 8, 8))
    buf.add(
        Batch(
            obs=[frames[2], frames[0]],
            act=[1, 1],
            rew=[0, 0],
            terminated=[0, 1],
            truncated=[0, 0],
            obs_next=[frames[3], frames[1]],
            info=[{}, {}],
        ),
        buffer_ids=[1, 2],
    )
    assert buf.obs.shape == (buf.maxsize, 8, 8)
    assert np.allclose(buf.obs[0], frames[0, -1]) and np.allclose(buf.obs[14], frames[2, -1])
    assert len(buf) == 2 and np.array_equal(buf.sample_indices(0), [0, 14])
    clone = pickle.loads(pickle.dumps(buf))
    assert clone.main_buffer is clone.buffers[0] and clone.cached_buffer_num == 3
    assert np.shares_memory(clone.main_buffer.obs, clone.obs)
    clone.add(
        Batch(obs=[frames[4]], act=[1], rew=[1], terminated=[1], truncated=[0], info=[{}]),
        buffer_ids=[1],
    )
    assert len(clone.main_buffer) == 3 and len(buf.main_buffer) == 1
    assert np.allclose(clone.main_buffer.obs[:3], [frames[0, -1], frames[2, -1], frames[4, -1]])
