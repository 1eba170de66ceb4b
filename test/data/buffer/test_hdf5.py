"""HDF5 files of replay buffers: exact round trips, and bad files refused with a clear error.

Loading must never run code from the file unless the caller opts in, must detect corrupted or
truncated data, and must refuse files whose class, counters or arrays do not fit the buffer.
"""

import contextlib
import os
import pathlib
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from tianshou.data import (
    Batch,
    CachedReplayBuffer,
    HERReplayBuffer,
    HERVectorReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
    to_hdf5,
)
from tianshou.data.buffer._state import stored_rows
from tianshou.data.buffer.buffer_base import BufferFileError, MalformedBufferError
from tianshou.data.utils.segtree import SegmentTree


def reward_fn(achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
    return -np.abs(achieved_goal - desired_goal).sum(axis=-1)


def goal_obs(i: int) -> dict[str, np.ndarray]:
    return {
        "observation": np.array([i, -i], dtype=np.float32),
        "achieved_goal": np.array([i % 4], dtype=np.float32),
        "desired_goal": np.array([3.0], dtype=np.float32),
    }


def fill(buf: ReplayBuffer, steps: int, env_num: int = 1, goals: bool = False) -> None:
    """Add ``steps`` rows per env with episodes of varying length and a 2-d observation."""
    for i in range(steps):
        obs: Any = goal_obs(i) if goals else np.full((env_num, 2), i, dtype=np.float32)
        batch = Batch(
            obs=Batch.stack([Batch(obs)] * env_num) if goals else obs,
            act=np.arange(env_num) + i,
            rew=np.full(env_num, 0.5 * i),
            terminated=np.arange(env_num) + i % 4 == 3,
            truncated=np.zeros(env_num, dtype=bool),
            obs_next=Batch.stack([Batch(goal_obs(i + 1))] * env_num) if goals else obs + 1,
        )
        buf.add(batch, buffer_ids=np.arange(env_num))


def plain() -> ReplayBuffer:
    buf = ReplayBuffer(7, stack_num=2, sample_avail=True, random_seed=5)
    fill(buf, 10)
    return buf


def vector() -> ReplayBuffer:
    buf = VectorReplayBuffer(12, 3, ignore_obs_next=True)
    fill(buf, 9, env_num=3)
    return buf


def prioritized() -> ReplayBuffer:
    buf = PrioritizedReplayBuffer(9, alpha=0.6, beta=0.4)
    fill(buf, 7)
    buf.update_weight(np.array([1, 4, 5]), np.array([3.0, 0.2, 1.5]))
    return buf


def prioritized_vector() -> ReplayBuffer:
    buf = PrioritizedVectorReplayBuffer(8, 2, alpha=0.5, beta=0.3)
    fill(buf, 6, env_num=2)
    buf.update_weight(np.array([0, 5]), np.array([2.0, 0.5]))
    return buf


def her() -> ReplayBuffer:
    buf = HERReplayBuffer(10, reward_fn, horizon=3, future_k=4.0)
    fill(buf, 8, goals=True)
    buf.sample_indices(4)  # a pending relabelling must not end up in the file
    return buf


def her_vector() -> ReplayBuffer:
    buf = HERVectorReplayBuffer(10, 2, compute_reward_fn=reward_fn, horizon=3)
    fill(buf, 6, env_num=2, goals=True)
    buf.sample_indices(4)
    return buf


def cached() -> ReplayBuffer:
    buf = CachedReplayBuffer(ReplayBuffer(10), cached_buffer_num=2, max_episode_length=4)
    fill(buf, 7, env_num=2)
    return buf


FACTORIES: dict[str, Callable[[], ReplayBuffer]] = {
    "plain": plain,
    "vector": vector,
    "prioritized": prioritized,
    "prioritized_vector": prioritized_vector,
    "her": her,
    "her_vector": her_vector,
    "cached": cached,
}
NEEDS_PICKLE = {"her", "her_vector"}  # the reward function can only be stored pickled


def stored_state(buf: ReplayBuffer) -> dict[str, Any]:
    """``buf``'s state with the storage cut to the rows holding transitions: files keep those
    only (a cached buffer's emptied episode caches still hold stale rows in memory)."""
    state = buf.__getstate__()
    if not state["_meta"].is_empty():  # a manager's sub-buffers are pickled without storage
        state["_meta"] = state["_meta"][stored_rows(state)]
    return state


def assert_same(a: Any, b: Any, where: str = "state") -> None:
    """Recursive exact equality of buffer states (arrays, generators, trees, sub-buffers; the
    storage's rows that hold transitions)."""
    assert type(a) is type(b), where
    if isinstance(a, ReplayBuffer):
        assert_same(stored_state(a), stored_state(b), where)
    elif isinstance(a, dict):
        assert list(a) == list(b) or set(a) == set(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, Batch):
        assert_same(a.__getstate__(), b.__getstate__(), where)
    elif isinstance(a, np.random.RandomState):
        assert_same(a.get_state(), b.get_state(), where)
    elif isinstance(a, SegmentTree):
        assert np.array_equal(a._value, b._value), where
    elif isinstance(a, tuple | list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert a.shape == b.shape, where
        for i, (x, y) in enumerate(zip(a.flat, b.flat, strict=True)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b), where
    else:
        assert a == b, where


def save(buf: ReplayBuffer, tmp_path: Path, name: str = "buf.hdf5", **kwargs: Any) -> str:
    path = str(tmp_path / name)
    buf.save_hdf5(path, **kwargs)
    return path


# ---------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("kind", list(FACTORIES))
def test_round_trip_is_exact(kind: str, tmp_path: Path) -> None:
    buf = FACTORIES[kind]()
    path = save(buf, tmp_path)
    loaded = type(buf).load_hdf5(path, allow_pickle=kind in NEEDS_PICKLE)
    assert_same(loaded, buf)
    assert len(loaded) == len(buf) and loaded[:] == buf[:]
    # the same random generator state and counters: the future is identical too
    env_num = len(buf._maxsizes) - isinstance(buf, CachedReplayBuffer)
    for copy in (buf, loaded):
        fill(copy, 3, env_num=env_num, goals=kind in NEEDS_PICKLE)
    assert_same(loaded, buf)
    assert np.array_equal(loaded.sample_indices(16), buf.sample_indices(16))


def test_a_buffer_not_yet_full_is_written_with_its_stored_rows_only(tmp_path: Path) -> None:
    buf = VectorReplayBuffer(100_000, 2)  # two sub-buffers of 50,000 slots
    fill(buf, 300, env_num=2)
    path = save(buf, tmp_path)
    with h5py.File(path, "r") as f:
        assert f.attrs["__stored_rows_only__"]
        assert f["_meta/obs"].shape[0] == len(buf) == 600
    assert Path(path).stat().st_size < 200_000  # a full-size obs column alone is 800 kB
    loaded = VectorReplayBuffer.load_hdf5(path)
    assert loaded.maxsize == buf.maxsize
    assert_same(loaded, buf)
    rows = loaded.sample_indices(0)
    assert np.array_equal(rows, buf.sample_indices(0)) and loaded[rows] == buf[rows]
    unstored = np.setdiff1d(np.arange(loaded.maxsize), rows)
    assert not loaded._meta.obs[unstored].any()  # zeros, as in a new buffer
    more = Batch(obs=np.full((1, 2), 9.0, dtype=np.float32), act=[1], rew=[1.0],
                 terminated=[True], truncated=[False], obs_next=np.ones((1, 2)))  # fmt: skip
    for copy in (buf, loaded):  # sub-buffer 0 gets one more transition, at its next slot
        copy.add(more, buffer_ids=[0])
    assert np.all(loaded.obs[300] == 9) and np.array_equal(loaded._istate, buf._istate)


def test_a_failed_save_leaves_the_previous_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = save(plain(), tmp_path)
    before = Path(path).read_bytes()

    def fail(*args: Any) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr("tianshou.data.buffer._hdf5._write_state", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        vector().save_hdf5(path)
    assert Path(path).read_bytes() == before
    assert os.listdir(tmp_path) == ["buf.hdf5"]
    assert_same(ReplayBuffer.load_hdf5(path), plain())


def test_stored_rows_must_match_the_counters(tmp_path: Path) -> None:
    buf = prioritized()  # 7 of 9 slots stored
    path = save(buf, tmp_path)
    istate = buf._istate.copy()
    istate[1, 0] = 5
    rewrite(path, "_istate", istate)
    with pytest.raises(BufferFileError, match=r"buf\.hdf5.*stores 7 rows, but its counters say 5"):
        PrioritizedReplayBuffer.load_hdf5(path)
    path = save(buf, tmp_path)
    rewrite(path, "_offset", np.array([4]))
    with pytest.raises(BufferFileError, match="point outside a storage of 9 rows"):
        PrioritizedReplayBuffer.load_hdf5(path)


@pytest.mark.parametrize("compression", [None, "gzip", "lzf"])
def test_datasets_carry_checksums_and_compression(compression: str | None, tmp_path: Path) -> None:
    path = save(plain(), tmp_path, compression=compression)
    with h5py.File(path, "r") as f:
        assert f["_meta/obs"].fletcher32 and f["_istate"].fletcher32
        assert f["_random_state/keys"].fletcher32
        assert f["_meta/obs"].compression == compression
    assert_same(ReplayBuffer.load_hdf5(path), plain())


def test_metadata_is_plain_hdf5_not_pickled(tmp_path: Path) -> None:
    path = save(prioritized_vector(), tmp_path)
    tags: set[str] = set()
    with h5py.File(path, "r") as f:
        f.visititems(lambda _, node: tags.add(node.attrs.get("__data_type__", "untagged")))
        assert f.attrs["__buffer_class__"] == "PrioritizedVectorReplayBuffer"
        assert f.attrs["stack_num"] == 1 and f["options"].attrs["alpha"] == 0.5
    plain_tags = {"Batch", "dict", "ndarray", "tuple", "RandomState", "SegmentTree", "buffers"}
    assert tags <= plain_tags | {"untagged"}  # untagged: the groups of the sub-buffers
    PrioritizedVectorReplayBuffer.load_hdf5(path)  # no unpickling needed


def test_none_and_strings_in_storage(tmp_path: Path) -> None:
    buf = ReplayBuffer(4)
    for i in range(3):
        buf.add(
            Batch(obs=i, act=i, rew=1.0, terminated=False, truncated=False, info={"note": None}),
        )
    path = save(buf, tmp_path)
    assert_same(ReplayBuffer.load_hdf5(path), buf)  # an all-None field is not a pickle
    buf.add(Batch(obs=3, act=3, rew=1.0, terminated=True, truncated=False, info={"note": "x"}))
    path = save(buf, tmp_path, "strings.hdf5")
    restored = ReplayBuffer.load_hdf5(path)  # strings among None are JSON texts, not a pickle
    assert restored[3].info.note == "x" and restored[0].info.note is None
    assert_same(restored, buf)
    note = {"note": Fraction(1, 3)}
    buf.add(Batch(obs=4, act=4, rew=1.0, terminated=True, truncated=False, info=note))
    path = save(buf, tmp_path, "objects.hdf5")
    with pytest.raises(BufferFileError, match="allow_pickle=True"):
        ReplayBuffer.load_hdf5(path)
    assert ReplayBuffer.load_hdf5(path, allow_pickle=True)[0].info.note == Fraction(1, 3)


# ---------------------------------------------------------------------------------- no code runs
class RunsCode:
    """Unpickling this creates ``marker``: the stand-in for arbitrary code in a crafted file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return pathlib.Path.touch, (pathlib.Path(self.marker),)


def test_crafted_pickle_in_storage_does_not_run(tmp_path: Path) -> None:
    marker = tmp_path / "code_ran"
    path = save(plain(), tmp_path)
    with h5py.File(path, "r+") as f:
        del f["_meta/act"]
        to_hdf5({"act": RunsCode(marker)}, f["_meta"])
    with pytest.raises(BufferFileError, match=r"allow_pickle=True") as info:
        ReplayBuffer.load_hdf5(path)
    assert "buf.hdf5" in str(info.value) and "/_meta/act" in str(info.value)
    assert not marker.exists()
    with contextlib.suppress(BufferFileError):  # opting in unpickles: the payload was live
        ReplayBuffer.load_hdf5(path, allow_pickle=True)
    assert marker.exists()


def test_published_layout_needs_allow_pickle(tmp_path: Path) -> None:
    """Files in the published layout pickle the random generator; a crafted one may pickle
    anything there, so they load only with the opt-in."""
    buf = plain()
    marker = tmp_path / "code_ran"
    published, crafted = tmp_path / "published.hdf5", tmp_path / "crafted.hdf5"
    with h5py.File(published, "w") as f:
        to_hdf5(buf.__getstate__(), f)
    with h5py.File(crafted, "w") as f:
        to_hdf5({**buf.__getstate__(), "_random_state": RunsCode(marker)}, f)
    for path in (published, crafted):
        with pytest.raises(BufferFileError, match="allow_pickle"):
            ReplayBuffer.load_hdf5(str(path))
    assert not marker.exists()
    assert_same(ReplayBuffer.load_hdf5(str(published), allow_pickle=True), buf)


def test_her_reward_function_needs_allow_pickle(tmp_path: Path) -> None:
    path = save(her(), tmp_path)
    with pytest.raises(BufferFileError, match=r"/fn.*allow_pickle=True"):
        HERReplayBuffer.load_hdf5(path)


# ---------------------------------------------------------------------------------- corrupt files
def test_truncated_file(tmp_path: Path) -> None:
    path = Path(save(plain(), tmp_path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BufferFileError, match=r"buf\.hdf5") as info:
        ReplayBuffer.load_hdf5(str(path))
    assert isinstance(info.value, OSError)


@pytest.mark.parametrize("compression", [None, "gzip"])
@pytest.mark.parametrize("dataset", ["_meta/obs", "_meta/rew", "_istate"])
def test_flipped_bytes_in_a_dataset_are_detected(
    dataset: str,
    compression: str | None,
    tmp_path: Path,
) -> None:
    path = Path(save(plain(), tmp_path, compression=compression))
    with h5py.File(path, "r") as f:
        chunk = f[dataset].id.get_chunk_info(0)
    data = bytearray(path.read_bytes())
    middle = chunk.byte_offset + chunk.size // 2
    data[middle] ^= 0xFF
    data[middle + 1] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(BufferFileError, match=r"buf\.hdf5.*corrupted"):
        ReplayBuffer.load_hdf5(str(path))


# ---------------------------------------------------------------------------------- mismatches
@pytest.mark.parametrize(
    ("saved", "loader"),
    [
        (vector, ReplayBuffer),
        (plain, PrioritizedReplayBuffer),
        (prioritized_vector, VectorReplayBuffer),
        (cached, VectorReplayBuffer),
    ],
)
def test_mismatched_class_names_both(
    saved: Callable[[], ReplayBuffer],
    loader: type[ReplayBuffer],
    tmp_path: Path,
) -> None:
    buf = saved()
    path = save(buf, tmp_path)
    with pytest.raises(BufferFileError) as info:
        loader.load_hdf5(path)
    message = str(info.value)
    assert type(buf).__name__ in message and loader.__name__ in message and "buf.hdf5" in message


@pytest.mark.parametrize(
    ("saved", "loader"), [(vector, ReplayBuffer), (plain, PrioritizedReplayBuffer)]
)
def test_mismatched_class_in_published_layout(
    saved: Callable[[], ReplayBuffer],
    loader: type[ReplayBuffer],
    tmp_path: Path,
) -> None:
    path = tmp_path / "published.hdf5"
    with h5py.File(path, "w") as f:
        to_hdf5(saved().__getstate__(), f)
    with pytest.raises(BufferFileError, match=loader.__name__):
        loader.load_hdf5(str(path), allow_pickle=True)


def rewrite(path: str, key: str, value: Any) -> None:
    with h5py.File(path, "r+") as f:
        if key in f.attrs:
            f.attrs[key] = value
            return
        parent, _, name = key.rpartition("/")
        group = f[parent] if parent else f
        del group[name]
        to_hdf5({name: value}, group)


@pytest.mark.parametrize(
    ("row", "value", "message"),
    [(0, 7, "insertion index 7"), (1, 8, "size 8"), (2, -1, "last index -1"), (4, 99, "start")],
)
def test_counters_out_of_range(row: int, value: int, message: str, tmp_path: Path) -> None:
    buf = plain()
    path = save(buf, tmp_path)
    istate = buf._istate.copy()
    istate[row, 0] = value
    rewrite(path, "_istate", istate)
    with pytest.raises(BufferFileError, match=rf"buf\.hdf5.*{message}"):
        ReplayBuffer.load_hdf5(path)


def test_subbuffer_counters_out_of_range(tmp_path: Path) -> None:
    buf = vector()
    path = save(buf, tmp_path)
    istate = buf._istate.copy()
    istate[1, 2] = 5  # sub-buffer 2 has 4 slots
    rewrite(path, "_istate", istate)
    with pytest.raises(BufferFileError, match="size 5 of sub-buffer 2"):
        VectorReplayBuffer.load_hdf5(path)


def test_negative_size(tmp_path: Path) -> None:
    path = save(plain(), tmp_path)
    rewrite(path, "maxsize", -7)
    with pytest.raises(BufferFileError, match="negative"):
        ReplayBuffer.load_hdf5(path)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("_meta/act", np.zeros(3, dtype=np.int64), "'act' has 3 rows, expected maxsize 7"),
        ("_meta/done", np.zeros(7), "'done' must be a bool array"),
        ("_ep_ret", np.zeros((2, 1)), "episode returns have shape"),
        ("_offset", np.array([1]), "do not add up"),
        ("_rew_shape", np.array([2]), "rewards"),
    ],
)
def test_inconsistent_arrays(key: str, value: Any, message: str, tmp_path: Path) -> None:
    path = save(plain(), tmp_path)
    rewrite(path, key, value)
    if key == "_rew_shape":
        with h5py.File(path, "r+") as f:
            f["_rew_shape"].attrs["__data_type__"] = "tuple"
    with pytest.raises(BufferFileError, match=message):
        ReplayBuffer.load_hdf5(path)


def test_priority_tree_must_match_the_size(tmp_path: Path) -> None:
    path = save(prioritized(), tmp_path)
    with h5py.File(path, "r+") as f:
        del f["weight/leaves"]
        to_hdf5({"leaves": np.ones(4)}, f["weight"])
    with pytest.raises(BufferFileError, match="4 leaves for a buffer of size 9"):
        PrioritizedReplayBuffer.load_hdf5(path)
    with h5py.File(path, "r+") as f:
        del f["weight/leaves"]
        to_hdf5({"leaves": np.full(9, -1.0)}, f["weight"])
    with pytest.raises(BufferFileError, match="non-negative"):
        PrioritizedReplayBuffer.load_hdf5(path)


def test_unknown_format_and_foreign_file(tmp_path: Path) -> None:
    path = save(plain(), tmp_path)
    rewrite(path, "__buffer_format__", 99)
    with pytest.raises(BufferFileError, match="format 99"):
        ReplayBuffer.load_hdf5(path)
    foreign = tmp_path / "foreign.hdf5"
    with h5py.File(foreign, "w") as f:
        f.create_dataset("something", data=np.arange(3))
    with pytest.raises(MalformedBufferError, match=r"foreign\.hdf5"):
        ReplayBuffer.load_hdf5(str(foreign))


def test_random_state_is_validated(tmp_path: Path) -> None:
    path = save(plain(), tmp_path)
    rewrite(path, "_random_state/keys", np.zeros(10, dtype=np.uint32))
    with h5py.File(path, "r+") as f:
        f["_random_state"].attrs["__data_type__"] = "RandomState"
    with pytest.raises(BufferFileError, match="random generator"):
        ReplayBuffer.load_hdf5(path)
