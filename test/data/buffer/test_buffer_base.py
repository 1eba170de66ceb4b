"""Tests for ReplayBuffer (tianshou/data/buffer/buffer_base.py)."""

import copy
import pickle
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch

from tianshou.data import (
    Batch,
    HERReplayBuffer,
    HERVectorReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    ReplayBufferManager,
    VectorReplayBuffer,
)
from tianshou.data.buffer.buffer_base import MalformedBufferError


def step(i: int, terminated: bool = False, truncated: bool = False, **extra: Any) -> Batch:
    return Batch(
        obs=i,
        act=i,
        rew=float(i),
        terminated=terminated,
        truncated=truncated,
        obs_next=i + 1,
        **extra,
    )


def fill(buf: ReplayBuffer, n: int, every: int = 0) -> None:
    for i in range(n):
        buf.add(step(i, terminated=bool(every) and i % every == every - 1))


def snapshot(buf: ReplayBuffer) -> tuple[Any, ...]:
    return (
        buf._istate.copy(),
        buf._ep_ret.copy(),
        copy.deepcopy(buf._meta),
        len(buf),
    )


def assert_unchanged(buf: ReplayBuffer, before: tuple[Any, ...]) -> None:
    istate, ep_ret, meta, length = before
    assert np.array_equal(buf._istate, istate)
    assert np.array_equal(buf._ep_ret, ep_ret)
    assert buf._meta == meta
    assert len(buf) == length


class MoveToRightEnv:
    """Walks right from ``state``; the episode terminates on reaching ``size``."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.index = 0

    def reset(self, state: int = 0) -> tuple[int, dict]:
        self.index = state
        return self.index, {}

    def step(self, action: int) -> tuple[int, int, bool, bool, dict]:
        self.index = max(self.index - 1, 0) if action == 0 else self.index + 1
        done = self.index == self.size
        return self.index, int(done), done, False, {}


# ---------------------------------------------------------------------------- construction


def test_constructor_options_and_state() -> None:
    buf = ReplayBuffer(
        7, stack_num=2, ignore_obs_next=True, sample_avail=True, random_seed=3, foo=1
    )
    assert buf.maxsize == 7
    assert buf.stack_num == 2
    assert buf.options == {
        "stack_num": 2,
        "ignore_obs_next": True,
        "save_only_last_obs": False,
        "sample_avail": True,
        "random_seed": 3,
        "foo": 1,
    }
    assert len(buf) == 0
    assert buf._insertion_idx == 0 and buf._size == 0
    assert np.array_equal(buf.last_index, [0])
    assert buf._ep_return == 0.0 and buf._ep_len == 0 and buf._ep_start_idx == 0
    assert np.array_equal(buf._indices, np.arange(7))
    assert np.array_equal(buf.subbuffer_edges, [0, 7])
    assert str(buf) == "ReplayBuffer()"


@pytest.mark.parametrize("size", [-1, 2.5, "3", True])
def test_invalid_size(size: Any) -> None:
    with pytest.raises(ValueError, match="size"):
        ReplayBuffer(size)


def test_invalid_stack_num() -> None:
    with pytest.raises(ValueError, match="stack_num"):
        ReplayBuffer(3, stack_num=0)


def test_size_zero_is_an_empty_buffer() -> None:
    buf = ReplayBuffer(0)
    assert len(buf) == 0
    batch, indices = buf.sample(5)
    assert len(indices) == 0 and len(batch) == 0
    assert len(buf.sample_indices(0)) == 0
    with pytest.raises(ValueError, match="size 0"):
        buf.add(step(0))
    assert len(buf.update(ReplayBuffer(3))) == 0


# ---------------------------------------------------------------------------- add


def test_add_single_transition_returns_arrays() -> None:
    buf = ReplayBuffer(10)
    ptr, ep_rew, ep_len, ep_idx = buf.add(
        Batch(
            obs=1,
            act=1,
            rew=1,
            terminated=1,
            truncated=0,
            obs_next="str",
            info={"a": 3, "b": {"c": 5.0}},
        ),
    )
    for arr, value in ((ptr, 0), (ep_rew, 1.0), (ep_len, 1), (ep_idx, 0)):
        assert arr.shape == (1,) and arr[0] == value
    assert ep_rew.dtype == np.float64
    assert buf.obs[0] == 1 and buf.done[0] and buf.terminated[0] and not buf.truncated[0]
    assert buf.obs_next[0] == "str"
    assert all(x is None for x in buf.obs_next[1:])
    assert buf.info.a[0] == 3 and buf.info.a.dtype == np.int64
    assert buf.info.b.c[0] == 5.0 and buf.info.b.c.dtype == np.float64
    assert buf.rew.dtype == np.float64 and buf.terminated.dtype == bool


def test_new_keys_are_allocated_and_missing_keys_zeroed() -> None:
    buf = ReplayBuffer(10)
    buf.add(Batch(obs=1, act=1, rew=1, terminated=1, truncated=0, info={"a": 3, "b": {"c": 5.0}}))
    batch = Batch(
        obs=2,
        act=2,
        rew=2,
        terminated=0,
        truncated=0,
        obs_next="str2",
        info={"a": 4, "d": {"e": -np.inf}},
    )
    buf.add(batch)
    assert set(buf.info.keys()) == {"a", "b", "d"}
    assert buf.info.a[1] == 4 and buf.info.b.c[1] == 0 and buf.info.d.e[1] == -np.inf
    assert buf.info.d.e[0] == 0
    assert buf.obs_next[0] is None and buf.obs_next[1] == "str2"
    batch.terminated, batch.truncated, batch.done = [0], [1], [0]
    batch.info.e = np.zeros([1, 4])
    batch = Batch.stack([batch])
    ptr, ep_rew, ep_len, ep_idx = buf.add(batch, buffer_ids=[0])
    assert (ptr[0], ep_rew[0], ep_len[0], ep_idx[0]) == (2, 4.0, 2, 1)
    assert buf.done[2]  # recomputed from truncated, the given done is ignored
    assert buf.info.e.shape == (10, 1, 4)
    assert np.array_equal(buf.prev(np.array([0, 1, 2])), [0, 1, 1])
    assert np.array_equal(buf.next(np.array([0, 1, 2])), [0, 2, 2])


def test_extra_keys_are_stored_and_read() -> None:
    buf = ReplayBuffer(4)
    buf.add(step(0, returns=np.array([1.5, 2.5])))
    buf.add(step(1, returns=np.array([3.5, 4.5])))
    assert np.array_equal(buf.returns[:2], [[1.5, 2.5], [3.5, 4.5]])
    assert np.array_equal(buf[1].returns, [3.5, 4.5])
    assert list(buf[:].keys())[:9] == [
        "obs",
        "act",
        "rew",
        "terminated",
        "truncated",
        "done",
        "obs_next",
        "info",
        "policy",
    ]


def test_obs_next_is_optional() -> None:
    buf = ReplayBuffer(4)
    buf.add(Batch(obs=1, act=0, rew=0, terminated=False, truncated=False))
    assert "obs_next" not in buf._meta
    assert buf[0].obs_next.is_empty()


def test_multi_dimensional_reward() -> None:
    buf = ReplayBuffer(5)
    for i in range(3):
        _, ep_rew, ep_len, _ = buf.add(
            Batch(obs=i, act=i, rew=np.array([1, 2]), terminated=i == 2, truncated=False),
        )
    assert ep_rew.shape == (1, 2) and np.array_equal(ep_rew, [[3.0, 6.0]])
    assert ep_len[0] == 3
    assert np.array_equal(buf._ep_return, [0.0, 0.0])


@pytest.mark.parametrize("missing", ["obs", "act", "rew", "terminated", "truncated"])
def test_missing_required_key(missing: str) -> None:
    buf = ReplayBuffer(3)
    data = {"obs": 1, "act": 1, "rew": 1.0, "terminated": False, "truncated": False}
    del data[missing]
    with pytest.raises(ValueError, match=f"'{missing}'"):
        buf.add(Batch(data))
    assert len(buf) == 0


def test_buffer_ids_validation() -> None:
    buf = ReplayBuffer(3)
    batch = Batch.stack([step(0)])
    with pytest.raises(ValueError, match="buffer_ids"):
        buf.add(batch, buffer_ids=[1])
    assert len(buf) == 0 and buf._meta.is_empty()
    buf.add(batch, buffer_ids=[0])
    before = snapshot(buf)
    with pytest.raises(ValueError, match="buffer_ids"):
        buf.add(batch, buffer_ids=[-1])
    with pytest.raises(ValueError, match="leading dimension"):
        buf.add(Batch.stack([step(1), step(2)]), buffer_ids=[0])
    with pytest.raises(ValueError, match="one-dimensional"):
        buf.add(batch, buffer_ids=[[0]])
    assert_unchanged(buf, before)


def test_rejected_add_changes_nothing_when_full() -> None:
    buf = ReplayBuffer(3)
    for i in range(5):
        buf.add(
            Batch(obs=np.full(2, i, np.float32), act=i, rew=1.0, terminated=False, truncated=False)
        )
    before = snapshot(buf)
    bad_inputs = [
        Batch(obs=np.zeros(3, np.float32), act=1, rew=1.0, terminated=False, truncated=False),
        Batch(obs=np.zeros(2), act=1.5, rew=1.0, terminated=False, truncated=False),
        Batch(obs=np.array(["a", "b"]), act=1, rew=1.0, terminated=False, truncated=False),
        Batch(obs={"x": 1}, act=1, rew=1.0, terminated=False, truncated=False),
        Batch(obs=np.zeros(2), act=1, rew=1.0, terminated=[False, True], truncated=False),
    ]
    for bad in bad_inputs:
        with pytest.raises(ValueError, match=r"obs|act|terminated|flags"):
            buf.add(bad)
        assert_unchanged(buf, before)


def test_lossless_casts_are_accepted() -> None:
    buf = ReplayBuffer(3)
    buf.add(Batch(obs=np.zeros(2, np.float32), act=1.0, rew=1, terminated=0, truncated=0))
    buf.add(Batch(obs=np.ones(2), act=2, rew=np.float32(2), terminated=1, truncated=False))
    assert buf.obs.dtype == np.float32 and np.array_equal(buf.obs[1], [1, 1])
    assert buf.act[1] == 2.0 and buf.done[1]


def test_tensor_leaves_stay_tensors() -> None:
    buf = ReplayBuffer(4)
    for i in range(3):
        buf.add(step(i, info={"t": torch.tensor([float(i)])}))
    assert isinstance(buf.info.t, torch.Tensor) and buf.info.t.shape == (4, 1)
    assert torch.equal(buf[np.array([2, 1])].info.t, torch.tensor([[2.0], [1.0]]))
    with pytest.raises(ValueError, match=r"info\.t"):
        buf.add(step(3, info={"t": torch.zeros(2)}))


def test_save_only_last_obs() -> None:
    buf = ReplayBuffer(5, stack_num=3, save_only_last_obs=True)
    ref = ReplayBuffer(5, stack_num=3)
    for i in range(7):
        frames = np.stack([np.full(2, i - 2), np.full(2, i - 1), np.full(2, i)])
        buf.add(
            Batch(obs=frames, act=i, rew=1, terminated=i == 3, truncated=False, obs_next=frames + 1)
        )
        ref.add(
            Batch(
                obs=np.full(2, i),
                act=i,
                rew=1,
                terminated=i == 3,
                truncated=False,
                obs_next=np.full(2, i + 1),
            )
        )
    assert buf.obs.shape == (5, 2)
    index = np.arange(5)
    assert np.array_equal(buf.get(index, "obs"), ref.get(index, "obs"))
    assert np.array_equal(buf[index].obs_next, ref[index].obs_next)


# ---------------------------------------------------------------------------- reading


def test_wrap_around_order_and_indexing() -> None:
    buf = ReplayBuffer(5)
    fill(buf, 8)
    assert np.array_equal(buf.obs, [5, 6, 7, 3, 4])
    assert buf._insertion_idx == 3 and np.array_equal(buf.last_index, [2])
    assert np.array_equal(buf[:].obs, [3, 4, 5, 6, 7])
    assert np.array_equal(buf[:2].obs, [5, 6])  # other slices select physical rows
    assert np.array_equal(buf[[4, 0]].obs, [4, 5])
    assert buf[-1].obs == 4 and buf[3].act == 3
    assert np.array_equal(buf[np.array([True, False, False, False, True])].obs, [5, 4])
    assert np.array_equal(buf[torch.tensor([1, 2])].obs, [6, 7])
    with pytest.raises(IndexError):
        buf[10]


def test_getitem_int_gives_scalars_and_keys() -> None:
    buf = ReplayBuffer(3)
    fill(buf, 2)
    item = buf[1]
    assert item.obs == 1 and item.obs_next == 2 and item.rew == 1.0 and not item.done
    assert item.info.is_empty() and item.policy.is_empty()


def test_get_with_default_and_stack() -> None:
    buf = ReplayBuffer(6, stack_num=3)
    fill(buf, 4, every=2)  # episodes [0, 1], [2, 3]
    assert buf.get(1, "missing", default_value=7) == 7
    with pytest.raises(KeyError, match="missing"):
        buf.get(1, "missing")
    assert np.array_equal(buf.get(np.array([0, 1, 3]), "obs"), [[0, 0, 0], [0, 0, 1], [2, 2, 3]])
    assert np.array_equal(buf.get(3, "obs"), [2, 2, 3])
    assert np.array_equal(buf.get(np.array([1, 3]), "obs", stack_num=1), [1, 3])
    assert np.array_equal(buf.get([1, 3], "act", stack_num=2), [[0, 1], [2, 3]])


def test_prev_next_with_episode_ending_at_index_zero() -> None:
    buf = ReplayBuffer(4)
    # 5 steps: the episode ending with step 4 sits at row 0 after wrapping
    for i in range(5):
        buf.add(step(i, terminated=i == 4))
    assert np.array_equal(buf.obs, [4, 1, 2, 3])
    index = np.arange(4)
    assert np.array_equal(buf.prev(index), [3, 1, 1, 2])
    assert np.array_equal(buf.next(index), [0, 2, 3, 0])
    assert buf.prev(1) == 1 and buf.next(0) == 0
    assert len(buf.unfinished_index()) == 0
    buf.add(step(5))  # rows hold [4, 5, 2, 3]; time order 2, 3, 4 (done), 5
    assert np.array_equal(buf.prev(index), [3, 1, 2, 2])
    assert np.array_equal(buf.next(index), [0, 1, 3, 0])
    assert np.array_equal(buf.unfinished_index(), [1])


def test_prev_next_on_empty_buffer() -> None:
    buf = ReplayBuffer(3)
    assert buf.prev(2) == 0
    assert np.array_equal(buf.next(np.array([1, 2])), [0, 0])
    assert len(buf.unfinished_index()) == 0


def test_sample_indices_semantics() -> None:
    buf = ReplayBuffer(10)
    fill(buf, 13)
    assert np.array_equal(buf.sample_indices(0), [3, 4, 5, 6, 7, 8, 9, 0, 1, 2])
    assert len(buf.sample_indices(-1)) == 0
    assert len(buf.sample_indices(None)) == 10
    draws = buf.sample_indices(1000)
    assert draws.min() >= 0 and draws.max() < 10 and len(np.unique(draws)) == 10
    a, b = ReplayBuffer(10, random_seed=5), ReplayBuffer(10, random_seed=5)
    fill(a, 10)
    fill(b, 10)
    assert np.array_equal(a.sample_indices(64), b.sample_indices(64))
    batch, indices = a.sample(16)
    assert batch == a[indices]
    batch, indices = a.sample(-1)
    assert len(indices) == 0 and len(batch) == 0


def test_sample_avail_with_frame_stack() -> None:
    env = MoveToRightEnv(5)
    buf = ReplayBuffer(9, stack_num=4)
    avail = ReplayBuffer(9, stack_num=4, sample_avail=True)
    obs, _ = env.reset(1)
    for _ in range(16):
        obs_next, rew, terminated, truncated, info = env.step(1)
        for b in (buf, avail):
            b.add(
                Batch(
                    obs=obs, act=1, rew=rew, terminated=terminated, truncated=truncated, info=info
                )
            )
        obs = obs_next
        if terminated:
            obs, _ = env.reset(1)
    assert np.array_equal(
        buf.get(np.arange(9), "obs"),
        [
            [1, 1, 1, 2],
            [1, 1, 2, 3],
            [1, 2, 3, 4],
            [1, 1, 1, 1],
            [1, 1, 1, 2],
            [1, 1, 2, 3],
            [1, 2, 3, 4],
            [4, 4, 4, 4],
            [1, 1, 1, 1],
        ],
    )
    _, indices = avail.sample(0)
    assert indices.tolist() == [2, 6]
    _, indices = avail.sample(1)
    assert indices[0] in (2, 6)
    batch, indices = avail.sample(-1)
    assert indices.tolist() == [] and len(batch) == 0
    with pytest.raises(IndexError):
        buf[18]


def test_ignore_obs_next_rebuilds_from_next_obs() -> None:
    buf = ReplayBuffer(10, ignore_obs_next=True)
    for i in range(10):
        buf.add(
            Batch(
                obs={"mask1": np.array([i, 1, 1, 0, 0]), "mask": i},
                act={"act_id": i, "position_id": i + 3},
                rew=i,
                terminated=i % 3 == 0,
                truncated=False,
                info={"if": i},
            ),
        )
    data = buf[np.arange(10)]
    assert np.array_equal(data.obs_next.mask, [0, 2, 3, 3, 5, 6, 6, 8, 9, 9])
    buf.stack_num = 4
    data = buf[np.arange(10)]
    assert np.array_equal(
        data.obs_next.mask,
        [
            [0, 0, 0, 0],
            [1, 1, 1, 2],
            [1, 1, 2, 3],
            [1, 1, 2, 3],
            [4, 4, 4, 5],
            [4, 4, 5, 6],
            [4, 4, 5, 6],
            [7, 7, 7, 8],
            [7, 7, 8, 9],
            [7, 7, 8, 9],
        ],
    )
    assert np.array_equal(data.info["if"], data.obs.mask)  # info is stacked like obs
    assert np.array_equal(data.act.act_id, np.arange(10))  # act is not


@pytest.mark.parametrize(
    "make",
    [
        lambda: ReplayBuffer(7),
        lambda: ReplayBuffer(7, ignore_obs_next=True),
        lambda: ReplayBuffer(7, stack_num=3),
        lambda: ReplayBuffer(7, stack_num=3, ignore_obs_next=True),
        lambda: VectorReplayBuffer(12, 3),
        lambda: PrioritizedReplayBuffer(7, alpha=0.6, beta=0.4),
    ],
)
def test_obs_next_at_is_the_obs_next_of_getitem(make: Any) -> None:
    buf = make()
    for i in range(10):
        data = step(i, terminated=i % 4 == 3)
        if isinstance(buf, VectorReplayBuffer):
            buf.add(Batch.stack([data, data]), buffer_ids=[i % 3, (i + 1) % 3])
        else:
            buf.add(data)
    rows = np.random.default_rng(0).integers(0, buf.maxsize, 20)
    rows = rows[np.isin(rows, buf.sample_indices(0))]
    np.testing.assert_array_equal(buf._obs_next_at(rows), buf[rows].obs_next)


def test_nstep_sums_follow_next_until_it_stays_put() -> None:
    buf = VectorReplayBuffer(30, 3)
    rng = np.random.default_rng(1)
    for i in range(25):
        ends = rng.random(2) < 0.2
        buf.add(
            Batch(
                obs=np.array([i, i]),
                act=np.array([0, 0]),
                rew=rng.standard_normal(2).astype(np.float32),
                terminated=ends,
                truncated=np.array([False, False]),
                obs_next=np.array([i + 1, i + 1]),
            ),
            buffer_ids=[i % 3, (i + 2) % 3],
        )
    rows = buf.sample_indices(40)
    gamma, n_step = 0.7, 4
    reward_sum, discount, last = buf._nstep_sums(rows, buf.rew, gamma, n_step)
    for j, row in enumerate(rows):
        total, power = float(buf.rew[row]), gamma
        for _ in range(n_step - 1):
            following = int(buf.next(row))
            if following == row:
                break
            total += power * float(buf.rew[following])
            power *= gamma
            row = following
        assert (reward_sum[j], discount[j], last[j]) == (total, power, row)


# ---------------------------------------------------------------------------- update / reset


def test_update_copies_in_chronological_order() -> None:
    buf1, buf2 = ReplayBuffer(4, stack_num=2), ReplayBuffer(4, stack_num=2)
    for i in range(5):
        buf1.add(
            Batch(
                obs=np.array([i]),
                act=float(i),
                rew=i * i,
                terminated=i % 2 == 0,
                truncated=False,
                info={"incident": "found"},
            ),
        )
    ep_before = (buf2._ep_len, buf2._ep_return)
    indices = buf2.update(buf1)
    assert np.array_equal(indices, [0, 1, 2, 3])
    assert len(buf1) == len(buf2) == 4 and buf1.stack_num == 2
    assert buf2[0].obs[-1] == buf1[1].obs[-1]
    assert buf2[-1].obs[-1] == buf1[0].obs[-1]
    assert (buf2._ep_len, buf2._ep_return) == ep_before
    assert np.array_equal(buf2.info.incident, ["found"] * 4)
    assert len(buf2.update(ReplayBuffer(3))) == 0


def test_update_overflowing_target() -> None:
    src, dst = ReplayBuffer(6), ReplayBuffer(4)
    fill(src, 6)
    fill(dst, 1)
    indices = dst.update(src)
    assert np.array_equal(indices, [1, 2, 3, 0, 1, 2])
    assert np.array_equal(dst[:].obs, [2, 3, 4, 5])
    assert dst._insertion_idx == 3 and dst.last_index[0] == 2 and len(dst) == 4


def test_reset_and_keep_statistics() -> None:
    buf = ReplayBuffer(5)
    fill(buf, 3)
    buf.reset(keep_statistics=True)
    assert len(buf) == 0 and buf._insertion_idx == 0
    assert buf._ep_len == 3 and buf._ep_return == 3.0 and buf._ep_start_idx == 0
    _, ep_rew, ep_len, ep_idx = buf.add(step(3, terminated=True))
    assert (ep_rew[0], ep_len[0], ep_idx[0]) == (6.0, 4, 0)
    fill(buf, 2)
    buf.reset()
    assert buf._ep_len == 0 and buf._ep_return == 0.0 and len(buf) == 0


# ---------------------------------------------------------------------------- misc API


def test_set_batch_validation() -> None:
    buf = ReplayBuffer(3)
    good = Batch(obs=np.arange(3), act=np.arange(3), rew=np.zeros(3), done=np.zeros(3, bool))
    buf.set_batch(good)
    assert buf._meta is good
    with pytest.raises(ValueError, match="length 3"):
        buf.set_batch(Batch(obs=np.arange(4)))
    with pytest.raises(ValueError, match="unknown keys"):
        buf.set_batch(Batch(a=np.zeros(3)))
    with pytest.raises(TypeError):
        buf.set_batch({"obs": np.zeros(3)})  # type: ignore[arg-type]


def test_attribute_guard_and_missing_attribute() -> None:
    buf = ReplayBuffer(3)
    fill(buf, 1)
    with pytest.raises(AttributeError, match="obs"):
        buf.obs = np.zeros(3)
    with pytest.raises(AttributeError, match="nothing"):
        _ = buf.nothing


def test_from_data_arrays_and_hdf5(tmp_path: Path) -> None:
    obs = np.arange(10, dtype=np.uint8)[:, None, None] * np.ones((10, 3, 3), np.uint8)
    obs_next = np.zeros_like(obs)
    obs_next[:-1] = obs[1:]
    path = tmp_path / "data.hdf5"
    with h5py.File(path, "w") as f:
        cols = [
            f.create_dataset("obs", data=obs),
            f.create_dataset("act", data=np.arange(10, dtype="int32")),
            f.create_dataset("rew", data=np.arange(10, dtype="float32")),
            f.create_dataset("terminated", data=np.zeros(10, dtype=bool)),
            f.create_dataset("truncated", data=np.zeros(10, dtype=bool)),
            f.create_dataset("done", data=np.zeros(10, dtype=bool)),
            f.create_dataset("obs_next", data=obs_next),
        ]
        buf = ReplayBuffer.from_data(*cols)
    assert len(buf) == 10
    assert np.array_equal(buf[3].obs, 3 * np.ones((3, 3))) and buf[3].act == 3
    assert buf[3].rew == 3.0 and not buf[3].done
    assert np.array_equal(buf[:3].obs_next, obs_next[:3])
    assert np.array_equal(buf.next(np.array([8, 9])), [9, 9])
    with pytest.raises(ValueError, match="equal length"):
        ReplayBuffer.from_data(obs, obs[:3], obs, obs, obs, obs, obs)
    assert len(ReplayBuffer.from_data(*([np.zeros(0)] * 7))) == 0


def test_get_buffer_indices() -> None:
    buf = ReplayBuffer(5)
    assert np.array_equal(buf.get_buffer_indices(2, 4), [2, 3])
    assert np.array_equal(buf.get_buffer_indices(3, 5), [3, 4])
    assert np.array_equal(buf.get_buffer_indices(4, 2), [4, 0, 1])
    assert np.array_equal(buf.get_buffer_indices(2, 2), [2, 3, 4, 0, 1])
    for start, stop in ((5, 1), (-1, 2), (2, 6), (3, 0)):
        with pytest.raises(ValueError):
            buf.get_buffer_indices(start, stop)


def test_null_handling() -> None:
    buf = ReplayBuffer(5)
    for i in range(4):
        rew = np.nan if i == 1 else float(i)
        buf.add(
            Batch(
                obs=i,
                act=i,
                rew=rew,
                terminated=False,
                truncated=False,
                info={"x": "s" if i != 2 else None},
            )
        )
    assert buf.hasnull()
    assert np.array_equal(buf.isnull().rew, [False, True, False, False])
    buf.dropnull()
    assert len(buf) == 2 and np.array_equal(buf[:].obs, [0, 3])
    assert not buf.hasnull()
    buf.add(step(9))
    assert np.array_equal(buf[:].obs, [0, 3, 9])


def test_set_array_at_key() -> None:
    buf = ReplayBuffer(4)
    fill(buf, 3)
    buf.set_array_at_key(
        np.array([1.5, 2.5]), "mc_return", index=np.array([0, 2]), default_value=0.0
    )
    assert np.array_equal(buf.mc_return, [1.5, 0.0, 2.5, 0.0])
    assert np.array_equal(buf[:].mc_return, [1.5, 0.0, 2.5])
    buf.add(step(3, mc_return=np.array(4.0)))
    assert buf.mc_return[3] == 4.0


# ---------------------------------------------------------------------------- persistence


def test_pickle_and_deepcopy_preserve_everything() -> None:
    buf = ReplayBuffer(5, stack_num=2)
    fill(buf, 7, every=3)
    clones = (pickle.loads(pickle.dumps(buf)), copy.deepcopy(buf))
    draws = buf.sample_indices(8)
    for clone in clones:
        assert clone[:] == buf[:]
        assert clone._insertion_idx == buf._insertion_idx and clone._ep_len == buf._ep_len
        assert np.array_equal(clone.last_index, buf.last_index)
        assert np.array_equal(clone.sample_indices(8), draws)
        clone.add(step(100))
        assert 100 not in buf.obs


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_hdf5_round_trip(tmp_path: Path, compression: str | None) -> None:
    buf = ReplayBuffer(10, stack_num=2)
    for i in range(4):
        buf.add(
            Batch(
                obs=Batch(index=np.array([i])),
                act=i,
                rew=np.array([1, 2]),
                terminated=i % 3 == 2,
                truncated=False,
                info={"number": {"n": i, "t": torch.tensor([1.0])}, "extra": None},
            ),
        )
    path = str(tmp_path / "buf.hdf5")
    buf.save_hdf5(path, compression=compression)
    loaded = ReplayBuffer.load_hdf5(path)
    assert len(loaded) == len(buf) and loaded.maxsize == buf.maxsize
    assert loaded.stack_num == 2 and loaded._insertion_idx == buf._insertion_idx
    assert np.array_equal(loaded._indices, buf._indices)
    assert np.array_equal(loaded[:].info.number.n, buf[:].info.number.n)
    assert isinstance(loaded.get(0, "info"), Batch)
    assert isinstance(loaded.info.number.t, torch.Tensor)
    assert np.array_equal(loaded._ep_return, buf._ep_return)
    loaded.add(
        Batch(
            obs=Batch(index=np.array([9])),
            act=9,
            rew=np.array([1, 1]),
            terminated=True,
            truncated=False,
        )
    )
    assert loaded[:].obs.index[-1].tolist() == [[3], [9]]


def test_load_hdf5_rejects_corrupt_and_foreign_files(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.hdf5"
    garbage.write_bytes(b"not an hdf5 file at all")
    with pytest.raises(OSError, match=r"garbage\.hdf5"):
        ReplayBuffer.load_hdf5(str(garbage))
    foreign = tmp_path / "foreign.hdf5"
    with h5py.File(foreign, "w") as f:
        f.create_dataset("something", data=np.arange(3))
    with pytest.raises(MalformedBufferError, match=r"foreign\.hdf5"):
        ReplayBuffer.load_hdf5(str(foreign))
    with pytest.raises(ValueError):
        ReplayBuffer.load_hdf5(str(foreign))


def test_legacy_state_with_plain_counters() -> None:
    meta = Batch(
        obs=np.array([3, 4, 2]),
        act=np.zeros(3),
        rew=np.ones(3),
        terminated=np.zeros(3, bool),
        truncated=np.zeros(3, bool),
        done=np.array([False, True, False]),
    )
    state = {
        "options": {"stack_num": 1},
        "maxsize": 3,
        "stack_num": 1,
        "_indices": np.arange(3),
        "_save_obs_next": True,
        "_save_only_last_obs": False,
        "_sample_avail": False,
        "_meta": meta,
        "last_index": np.array([1]),
        "_index": 2,
        "_size": 3,
        "_ep_rew": 5.0,
        "_ep_len": 2,
        "_ep_idx": 1,
    }
    buf = ReplayBuffer.__new__(ReplayBuffer)
    buf.__setstate__(state)
    assert buf._insertion_idx == 2 and len(buf) == 3 and buf._ep_return == 5.0
    assert np.array_equal(buf[:].obs, [2, 3, 4])
    assert np.array_equal(buf.next(np.array([0, 1, 2])), [1, 1, 0])


def test_old_module_path_alias() -> None:
    import tianshou.data.buffer.base as old  # noqa: F401

    assert sys.modules["tianshou.data.buffer.base"].ReplayBuffer is ReplayBuffer


def test_add_accepts_a_plain_dict_and_published_style_episode_loop() -> None:
    env = MoveToRightEnv(10)
    buf = ReplayBuffer(20)
    obs, _ = env.reset()
    for i, act in enumerate([1] * 5 + [0] * 10 + [1] * 10):
        obs_next, rew, terminated, truncated, info = env.step(act)
        buf.add(
            {
                "obs": obs,
                "act": [act],
                "rew": rew,
                "terminated": terminated,
                "truncated": truncated,
                "obs_next": obs_next,
                "info": info,
            },
        )
        obs = obs_next
        assert len(buf) == min(20, i + 1)
        assert buf.act.dtype == np.int64 and buf.act.shape == (20, 1)
        data, indices = buf.sample(40)
        assert (indices < len(buf)).all() and (data.obs < 10).all()


# ---------------------------------------------------------------------------------- flag inputs
def flag_step(**flags: Any) -> Batch:
    return Batch(obs=1, act=0, rew=1.0, **{"terminated": False, "truncated": False, **flags})


@pytest.mark.parametrize(
    "value",
    [1.0, np.float32(0.0), np.int8(1), 0, np.array(1.0), np.uint8(0), np.array([1.0])],
)
@pytest.mark.parametrize("flag", ["terminated", "truncated", "done"])
def test_numeric_zero_one_flags_are_stored_as_bool(flag: str, value: Any) -> None:
    buf = ReplayBuffer(3)
    buf.add(flag_step(**{flag: value}))
    stored = buf._meta[flag if flag != "done" else "terminated"]
    assert stored.dtype == bool
    if flag != "done":  # done is always recomputed from terminated and truncated
        assert bool(buf[0][flag]) == bool(np.asarray(value).reshape(-1)[0])
        assert bool(buf[0].done) == bool(np.asarray(value).reshape(-1)[0])


def test_numeric_flags_of_a_stacked_batch() -> None:
    buf = ReplayBuffer(4)
    for terminated in (np.array([0.0, 1.0]), np.array([1, 0], dtype=np.int16)):
        buf.add(
            Batch(
                obs=np.zeros(2),
                act=np.zeros(2),
                rew=np.zeros(2),
                terminated=terminated,
                truncated=np.zeros(2),
            ),
            buffer_ids=[0, 0],
        )
    assert buf.terminated.dtype == bool and buf.terminated.tolist() == [False, True, True, False]


@pytest.mark.parametrize("value", ["False", "True", 2, -1.0, 0.5, np.array([0.0, 3.0])])
@pytest.mark.parametrize("flag", ["terminated", "truncated", "done"])
def test_non_boolean_flags_are_refused(flag: str, value: Any) -> None:
    buf = ReplayBuffer(3)
    stacked = isinstance(value, np.ndarray)
    batch = flag_step(**{flag: value})
    if stacked:
        columns = {key: np.zeros(2) for key in ("obs", "act", "rew", "terminated", "truncated")}
        batch = Batch({**columns, flag: value})
    with pytest.raises(ValueError, match=rf"'{flag}' must hold booleans or the numbers 0 and 1"):
        buf.add(batch, buffer_ids=[0, 0] if stacked else None)
    assert len(buf) == 0


def test_from_data_refuses_string_flags() -> None:
    columns = [np.zeros(2)] * 3
    with pytest.raises(ValueError, match="'terminated'"):
        ReplayBuffer.from_data(*columns, np.array(["False", "True"]), *[np.zeros(2)] * 3)
    buf = ReplayBuffer.from_data(*columns, np.array([0.0, 1.0]), *[np.zeros(2)] * 3)
    assert buf.terminated.tolist() == [False, True]


# ---------------------------------------------------------------------------------- numpy view
def test_np_array_of_an_empty_buffer_holds_the_buffer() -> None:
    """As published: reading an empty buffer raises KeyError (not IndexError), so numpy keeps
    the buffer as one object instead of treating it as an empty sequence."""
    buf = ReplayBuffer(5)
    arr = np.array([buf])
    assert arr.shape == (1,) and arr.dtype == object and arr[0] is buf
    with pytest.raises(KeyError, match="holds no data"):
        buf[0]
    assert len(buf[:]) == 0 and len(buf[np.array([], dtype=np.int64)]) == 0


# ---------------------------------------------------------------------------------- frame stacking
def published_obs_next(buf: ReplayBuffer, index: Any) -> Any:
    """obs_next of a buffer with ignore_obs_next, computed as the published library does: the
    stacked obs at next(index), built by walking prev() from there."""
    indices = buf.next(index)
    frames: list[Any] = []
    for _ in range(buf.stack_num):
        frames.insert(0, buf._meta.obs[indices])
        indices = buf.prev(indices)
    if isinstance(frames[0], Batch):
        return Batch.stack(frames, axis=np.ndim(indices))
    return np.stack(frames, axis=np.ndim(indices))


@pytest.mark.parametrize("dict_obs", [False, True])
def test_stacked_obs_next_without_stored_obs_next_matches_published(dict_obs: bool) -> None:
    rng = np.random.default_rng(4)
    for _ in range(40):
        size, stack_num = int(rng.integers(1, 8)), int(rng.integers(2, 5))
        buf = ReplayBuffer(size, stack_num=stack_num, ignore_obs_next=True)
        for i in range(int(rng.integers(1, 20))):
            obs = {"x": np.array([i, -i])} if dict_obs else np.array([i, -i])
            buf.add(
                Batch(
                    obs=obs,
                    act=i,
                    rew=1.0,
                    terminated=bool(rng.random() < 0.3),
                    truncated=False,
                    obs_next=obs,
                ),
            )
        index = rng.integers(0, len(buf), 5)
        for idx in (index, int(index[0])):
            ours, expected = buf[idx].obs_next, published_obs_next(buf, idx)
            if dict_obs:
                ours, expected = ours.x, expected.x
            assert ours.shape == expected.shape and np.array_equal(ours, expected)


# ------------------------------------------------------------- frame stacking of every buffer kind
def _reward_of_goals(achieved: np.ndarray, desired: np.ndarray) -> np.ndarray:
    return -np.abs(achieved - desired).sum(axis=-1)


STACKING_BUFFERS = {
    "ReplayBuffer": lambda **kw: ReplayBuffer(12, **kw),
    "PrioritizedReplayBuffer": lambda **kw: PrioritizedReplayBuffer(12, 0.6, 0.4, **kw),
    "VectorReplayBuffer": lambda **kw: VectorReplayBuffer(12, 1, **kw),
    "PrioritizedVectorReplayBuffer": lambda **kw: PrioritizedVectorReplayBuffer(
        12, 1, alpha=0.6, beta=0.4, **kw
    ),
    "HERReplayBuffer": lambda **kw: HERReplayBuffer(12, _reward_of_goals, horizon=4, **kw),
    "HERVectorReplayBuffer": lambda **kw: HERVectorReplayBuffer(
        12, 1, compute_reward_fn=_reward_of_goals, horizon=4, **kw
    ),
}


@pytest.mark.parametrize("kind", list(STACKING_BUFFERS))
@pytest.mark.parametrize("ignore_obs_next", [False, True])
@pytest.mark.parametrize("dict_obs", [False, True])
def test_stacking_covers_obs_obs_next_info_and_policy_only(
    kind: str, ignore_obs_next: bool, dict_obs: bool
) -> None:
    buf = STACKING_BUFFERS[kind](stack_num=3, ignore_obs_next=ignore_obs_next)
    for i in range(8):  # episodes [0, 1, 2, 3] and [4, 5, 6, 7]
        data = Batch(
            obs={"x": i} if dict_obs else i,
            act=i,
            rew=float(i),
            terminated=i % 4 == 3,
            truncated=False,
            obs_next={"x": i + 1} if dict_obs else i + 1,
            info={"id": i},
            policy={"h": 10 * i},
        )
        if isinstance(buf, ReplayBufferManager):
            buf.add(Batch.stack([data]), buffer_ids=[0])
        else:
            buf.add(data)
    frames = [[0, 0, 0], [0, 0, 1], [0, 1, 2], [1, 2, 3], [4, 4, 4], [4, 4, 5], [4, 5, 6]]
    frames.append([5, 6, 7])
    batch = buf[np.arange(8)]

    def values(node: Any) -> np.ndarray:
        return node.x if dict_obs else node

    assert values(batch.obs).tolist() == frames
    assert batch.info.id.tolist() == frames
    assert batch.policy.h.tolist() == (10 * np.array(frames)).tolist()
    if ignore_obs_next:  # the stacked obs of the next row (an episode's last row is its own)
        assert values(batch.obs_next)[:, -1].tolist() == [1, 2, 3, 3, 5, 6, 7, 7]
    else:
        assert values(batch.obs_next).tolist() == (np.array(frames) + 1).tolist()
    assert values(batch.obs_next).shape == (8, 3)
    for key in ("act", "rew", "terminated", "truncated", "done"):
        assert batch[key].shape == (8,), key
    assert batch.act.tolist() == list(range(8))
    assert batch.done.tolist() == [i % 4 == 3 for i in range(8)]
    single = buf[5]
    assert single.info.id.tolist() == [4, 4, 5] and single.act == 5


def test_required_keys_for_add_decide_what_add_needs() -> None:
    assert ReplayBuffer._required_keys_for_add == {"obs", "act", "rew", "terminated", "truncated"}
    data = step(0)
    del data["act"]
    with pytest.raises(ValueError, match=r"\['act'\] are missing"):
        ReplayBuffer(3).add(data)

    class NeedsInfo(ReplayBuffer):
        _required_keys_for_add = ReplayBuffer._required_keys_for_add | {"info"}

    with pytest.raises(ValueError, match=r"\['info'\] are missing"):
        NeedsInfo(3).add(step(0))
    NeedsInfo(3).add(step(0, info={"id": 1}))
