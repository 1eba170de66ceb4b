"""Tests for ReplayBufferManager (tianshou/data/buffer/manager.py)."""

import copy
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tianshou.data import Batch, ReplayBuffer, ReplayBufferManager


def steps(values: list[int], terminated: list[bool] | None = None, **extra: Any) -> Batch:
    n = len(values)
    return Batch(
        obs=np.array(values),
        act=np.array(values),
        rew=np.array(values, dtype=float),
        terminated=np.array(terminated if terminated is not None else [False] * n),
        truncated=np.zeros(n, bool),
        obs_next=np.array(values) + 1,
        **extra,
    )


def make(sizes: tuple[int, ...] = (3, 4, 2), **kwargs: Any) -> ReplayBufferManager:
    return ReplayBufferManager([ReplayBuffer(s, **kwargs) for s in sizes])


def test_layout() -> None:
    buf = make()
    assert buf.buffer_num == 3 and buf.maxsize == 9 and len(buf) == 0
    assert np.array_equal(buf._offset, [0, 3, 7])
    assert np.array_equal(buf._extend_offset, [0, 3, 7, 9])
    assert np.array_equal(buf.subbuffer_edges, [0, 3, 7, 9])
    assert isinstance(buf.buffers, np.ndarray) and buf.buffers.dtype == object
    assert np.array_equal(buf.last_index, [0, 3, 7])
    assert np.array_equal(buf._lengths, [0, 0, 0])
    assert buf.options == buf.buffers[0].options


def test_construction_errors() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ReplayBufferManager([])
    with pytest.raises(ValueError, match="options"):
        ReplayBufferManager([ReplayBuffer(3), ReplayBuffer(3, stack_num=2)])
    used = ReplayBuffer(3)
    used.add(Batch(obs=1, act=1, rew=1, terminated=False, truncated=False))
    with pytest.raises(ValueError, match="already holds data"):
        ReplayBufferManager([ReplayBuffer(3), used])

    class Other(ReplayBuffer):
        pass

    with pytest.raises(TypeError, match="Other"):
        ReplayBufferManager([Other(3), ReplayBuffer(3)])


def test_add_returns_global_rows_and_episode_stats() -> None:
    buf = make()
    rows, ep_rew, ep_len, ep_idx = buf.add(steps([1, 2]), buffer_ids=[0, 2])
    assert np.array_equal(rows, [0, 7]) and np.array_equal(ep_idx, [0, 7])
    rows, ep_rew, ep_len, ep_idx = buf.add(steps([3, 4], [False, True]), buffer_ids=[0, 2])
    assert np.array_equal(rows, [1, 8])
    assert np.array_equal(ep_rew, [0.0, 6.0]) and np.array_equal(ep_len, [0, 2])
    assert np.array_equal(ep_idx, [0, 7])
    rows, *_ = buf.add(steps([5, 6, 7]))  # buffer_ids=None: one row per sub-buffer
    assert np.array_equal(rows, [2, 3, 7])
    assert np.array_equal(buf._lengths, [3, 1, 2]) and len(buf) == 6
    assert np.array_equal(buf.last_index, [2, 3, 7])
    assert np.array_equal(buf.obs, [1, 3, 5, 6, 0, 0, 0, 7, 4])


def test_sub_buffers_stay_consistent() -> None:
    buf = make()
    for i in range(5):
        buf.add(steps([i, 10 + i], [i == 1, False]), buffer_ids=[0, 1])
    first, second = buf.buffers[0], buf.buffers[1]
    assert len(first) == 3 and first._insertion_idx == 2 and first.last_index[0] == 1
    assert first._ep_len == 3 and first._ep_return == 2 + 3 + 4 and first._ep_start_idx == 2
    assert len(second) == 4 and second._insertion_idx == 1 and second._ep_len == 5
    assert np.array_equal(first.obs, [3, 4, 2]) and np.array_equal(second.obs, [14, 11, 12, 13])
    assert np.shares_memory(first.obs, buf.obs)
    assert np.array_equal(first[:].obs, [2, 3, 4])
    assert np.array_equal(buf[:].obs, [2, 3, 4, 11, 12, 13, 14])
    assert np.array_equal(buf.sample_indices(0), [2, 0, 1, 4, 5, 6, 3])


def test_new_and_extra_keys_reach_sub_buffers() -> None:
    buf = make((2, 2))
    buf.add(steps([1, 2]), buffer_ids=[0, 1])
    buf.add(steps([3], info={"x": np.array([7])}, weight=np.array([0.5])), buffer_ids=[1])
    assert np.array_equal(buf.info.x, [0, 0, 0, 7])
    assert np.array_equal(buf.weight, [0, 0, 0, 0.5])
    assert np.array_equal(buf.buffers[1].info.x, [0, 7])
    assert np.shares_memory(buf.buffers[1].weight, buf.weight)
    assert np.array_equal(buf[np.array([3])].weight, [0.5])


def test_duplicate_buffer_ids_get_consecutive_rows() -> None:
    buf = make((3, 3))
    rows, _, ep_len, _ = buf.add(steps([1, 2, 3], [False, True, False]), buffer_ids=[1, 1, 0])
    assert np.array_equal(rows, [3, 4, 0]) and np.array_equal(ep_len, [0, 2, 0])
    assert np.array_equal(buf.obs, [3, 0, 0, 1, 2, 0])


def test_invalid_buffer_ids_change_nothing() -> None:
    buf = make((2, 2))
    buf.add(steps([1, 2]))
    state, obs = buf._istate.copy(), buf.obs.copy()
    for ids in ([0, 2], [-1, 0]):
        with pytest.raises(ValueError, match="buffer_ids"):
            buf.add(steps([5, 6]), buffer_ids=ids)
    with pytest.raises(ValueError, match="leading dimension"):
        buf.add(steps([5, 6, 7]), buffer_ids=[0, 1])
    assert np.array_equal(buf._istate, state) and np.array_equal(buf.obs, obs)
    zero = ReplayBufferManager([ReplayBuffer(0), ReplayBuffer(2)])
    with pytest.raises(ValueError, match="buffer_ids"):
        zero.add(steps([1]), buffer_ids=[0])


def test_prev_next_unfinished_per_sub_buffer() -> None:
    buf = make((3, 3))
    buf.add(steps([1, 10]), buffer_ids=[0, 1])
    buf.add(steps([2, 11], [True, False]), buffer_ids=[0, 1])
    buf.add(steps([3, 12]), buffer_ids=[0, 1])
    buf.add(steps([4]), buffer_ids=[0])
    # sub-buffer 0 holds [4, 2, 3] (episode [.., 2] ended at row 1), sub-buffer 1 [10, 11, 12]
    index = np.arange(6)
    assert np.array_equal(buf.prev(index), [2, 1, 2, 3, 3, 4])
    assert np.array_equal(buf.next(index), [0, 1, 0, 4, 5, 5])
    assert buf.prev(4) == 3 and buf.next(9) == 4  # indices wrap over the total size
    assert np.array_equal(buf.unfinished_index(), [0, 5])
    assert np.array_equal(buf.get(index, "obs", stack_num=3)[[0, 5]], [[3, 3, 4], [10, 11, 12]])


def test_sampling_is_uniform_over_transitions() -> None:
    buf = make((10, 2))
    for i in range(10):
        buf.add(steps([i]), buffer_ids=[0])
    buf.add(steps([100, 101]), buffer_ids=[1, 1])
    indices = buf.sample_indices(12000)
    counts = np.bincount(indices, minlength=12)
    assert counts.min() > 800 and counts.max() < 1200  # about 1000 each
    assert len(buf.sample_indices(None)) == 12
    assert len(buf.sample_indices(-2)) == 0
    batch, indices = buf.sample(7)
    assert batch == buf[indices]
    a, b = make((4, 4), random_seed=9), make((4, 4), random_seed=9)
    for m in (a, b):
        m.add(steps([1, 2]))
    assert np.array_equal(a.sample_indices(20), b.sample_indices(20))
    empty = make()
    assert len(empty.sample_indices(5)) == 0
    assert len(empty.sample(5)[0]) == 0


def test_sample_avail_uses_each_sub_buffer() -> None:
    buf = make((4, 4), stack_num=2, sample_avail=True)
    buf.add(steps([1, 5]), buffer_ids=[0, 1])
    buf.add(steps([2, 6], [True, False]), buffer_ids=[0, 1])
    buf.add(steps([3]), buffer_ids=[0])
    assert np.array_equal(buf.sample_indices(0), [1, 5])
    assert set(buf.sample_indices(20)) <= {1, 5}


def test_update_is_not_supported() -> None:
    buf = make()
    with pytest.raises(NotImplementedError):
        buf.update(ReplayBuffer(3))


def test_reset_clears_every_sub_buffer() -> None:
    buf = make((2, 2))
    buf.add(steps([1, 2]))
    buf.reset(keep_statistics=True)
    assert len(buf) == 0 and np.array_equal(buf.last_index, [0, 2])
    assert buf.buffers[1]._ep_len == 1 and len(buf.buffers[1]) == 0
    _, ep_rew, ep_len, _ = buf.add(steps([3, 4], [True, True]))
    assert np.array_equal(ep_len, [2, 2]) and np.array_equal(ep_rew, [4.0, 6.0])
    buf.reset()
    assert buf.buffers[0]._ep_len == 0


def test_get_buffer_indices_stays_in_one_sub_buffer() -> None:
    buf = make((5, 5))
    assert np.array_equal(buf.get_buffer_indices(2, 4), [2, 3])
    assert np.array_equal(buf.get_buffer_indices(4, 2), [4, 0, 1])
    assert np.array_equal(buf.get_buffer_indices(8, 7), [8, 9, 5, 6])
    assert np.array_equal(buf.get_buffer_indices(7, 10), [7, 8, 9])
    assert np.array_equal(buf.get_buffer_indices(6, 6), [6, 7, 8, 9, 5])
    for start, stop in ((1, 6), (8, 1), (5, 5 - 5)):
        with pytest.raises(ValueError, match="same sub-buffer"):
            buf.get_buffer_indices(start, stop)


def test_pickle_relinks_sub_buffers(tmp_path: Path) -> None:
    buf = make((3, 3), stack_num=2)
    for i in range(4):
        buf.add(steps([i, 10 + i], [i == 2, False]))
    for clone in (pickle.loads(pickle.dumps(buf)), copy.deepcopy(buf)):
        assert clone[:] == buf[:]
        assert np.array_equal(clone.prev(np.arange(6)), buf.prev(np.arange(6)))
        assert np.shares_memory(clone.buffers[1].obs, clone.obs)
        clone.add(steps([50, 60]))
        assert len(clone.buffers[0]) == 3 and clone.buffers[1].obs[1] == 60
        assert 60 not in buf.obs
    path = str(tmp_path / "manager.hdf5")
    buf.save_hdf5(path)
    loaded = ReplayBufferManager.load_hdf5(path)
    assert loaded[:] == buf[:] and loaded.buffer_num == 2
    assert np.array_equal(loaded.last_index, buf.last_index)
    loaded.add(steps([7, 8]), buffer_ids=[0, 1])
    assert loaded.buffers[0]._ep_len == buf.buffers[0]._ep_len + 1


class RowTaggingBuffer(ReplayBuffer):
    """Like a prioritized buffer: keeps per-row data outside the storage, set after add."""

    def __init__(self, size: int, tag: float = 1.0, **kwargs: Any) -> None:
        ReplayBuffer.__init__(self, size, **kwargs)
        self.tags = np.zeros(size)
        self._tag = tag
        self.options.update(tag=tag)

    def add(self, batch: Batch, buffer_ids: Any = None) -> tuple[np.ndarray, ...]:
        rows, ep_rew, ep_len, ep_idx = super().add(batch, buffer_ids)
        self.tags[rows] = self._tag
        return rows, ep_rew, ep_len, ep_idx


class RowTaggingManager(RowTaggingBuffer, ReplayBufferManager):
    """Combined the way the published PrioritizedReplayBufferManager is."""

    def __init__(self, buffer_list: list[RowTaggingBuffer]) -> None:
        ReplayBufferManager.__init__(self, buffer_list)
        RowTaggingBuffer.__init__(self, self.maxsize, **buffer_list[0].options)


def test_cooperative_subclass_with_manager() -> None:
    buf = RowTaggingManager([RowTaggingBuffer(3, tag=2.0) for _ in range(2)])
    assert buf.maxsize == 6 and buf.buffer_num == 2 and len(buf.tags) == 6
    rows, *_ = buf.add(steps([1, 2]))
    buf.add(steps([3]), buffer_ids=[1])
    assert np.array_equal(rows, [0, 3])
    assert np.array_equal(buf.tags, [2, 0, 0, 2, 2, 0])
    assert np.array_equal(buf[:].obs, [1, 2, 3])
    assert len(buf.buffers[1]) == 2


def test_state_pickled_with_published_layout() -> None:
    def legacy_sub(obs: list[int], insertion: int, last: int, ep_len: int) -> ReplayBuffer:
        sub = ReplayBuffer.__new__(ReplayBuffer)
        sub.__setstate__(
            {
                "maxsize": 2,
                "options": {},
                "_meta": Batch(obs=np.array(obs), done=np.zeros(2, bool)),
                "_insertion_idx": insertion,
                "_size": 2,
                "last_index": np.array([last]),
                "_ep_return": 1.0,
                "_ep_len": ep_len,
                "_ep_start_idx": 0,
            },
        )
        return sub

    buffers = np.empty(2, dtype=object)
    buffers[0], buffers[1] = legacy_sub([1, 2], 0, 1, 2), legacy_sub([4, 3], 1, 0, 5)
    state = {
        "maxsize": 4,
        "options": {},
        "buffer_num": 2,
        "buffers": buffers,
        "_offset": np.array([0, 2]),
        "_extend_offset": np.array([0, 2, 4]),
        "_lengths": np.array([2, 2]),
        "last_index": np.array([1, 2]),
        "_meta": Batch(obs=np.array([1, 2, 4, 3]), done=np.zeros(4, bool)),
        "_insertion_idx": 0,
        "_size": 0,
    }
    buf = ReplayBufferManager.__new__(ReplayBufferManager)
    buf.__setstate__(state)
    assert len(buf) == 4 and np.array_equal(buf.last_index, [1, 2])
    assert np.array_equal(buf.sample_indices(0), [0, 1, 3, 2])
    assert buf.buffers[1]._ep_len == 5 and np.shares_memory(buf.buffers[1].obs, buf.obs)
    assert len(buf.sample_indices(None)) == 4


def test_float_buffer_ids_are_refused() -> None:
    buf = ReplayBufferManager([ReplayBuffer(3), ReplayBuffer(3)])
    batch = Batch(
        obs=np.zeros(2),
        act=np.zeros(2),
        rew=np.zeros(2),
        terminated=np.zeros(2, bool),
        truncated=np.zeros(2, bool),
    )
    for ids in (np.array([0.0, 1.0]), [0.5, 1.0], np.array([True, False])):
        with pytest.raises(ValueError, match="buffer_ids must be integers"):
            buf.add(batch, buffer_ids=ids)
    assert len(buf) == 0
    for dtype in (np.int8, np.uint16, np.int32, np.uint64):
        buf.add(batch, buffer_ids=np.array([1, 0], dtype=dtype))
    assert buf._lengths.tolist() == [3, 3]
