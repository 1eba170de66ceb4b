"""Tests for PrioritizedReplayBuffer (tianshou/data/buffer/prio.py) and its manager/vector forms."""

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tianshou.data import (
    Batch,
    PrioritizedReplayBuffer,
    PrioritizedReplayBufferManager,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    SegmentTree,
)

EPS = float(np.finfo(np.float32).eps)


def step(i: int, terminated: bool = False, **extra: Any) -> Batch:
    return Batch(
        obs=np.array([i, -i]),
        act=i,
        rew=float(i),
        terminated=terminated,
        truncated=False,
        obs_next=np.array([i + 1, -i - 1]),
        info={"step": i},
        **extra,
    )


def filled(n: int, size: int = 10, **kwargs: Any) -> PrioritizedReplayBuffer:
    buf = PrioritizedReplayBuffer(size, **{"alpha": 0.6, "beta": 0.4, **kwargs})
    for i in range(n):
        buf.add(step(i, terminated=i % 4 == 3))
    return buf


class NaivePrioritized:
    """Reference model: a plain priority array with the published update/weight formulas."""

    def __init__(self, size: int, alpha: float, beta: float) -> None:
        self.prio = np.zeros(size)
        self.alpha, self.beta = alpha, beta
        self.max_prio = self.min_prio = 1.0
        self.ptr = 0
        self.size = size

    def add(self) -> None:
        self.prio[self.ptr] = self.max_prio**self.alpha
        self.ptr = (self.ptr + 1) % self.size

    def update(self, index: np.ndarray, weight: np.ndarray) -> None:
        priority = np.abs(weight) + EPS
        for i, p in zip(index, priority, strict=True):
            self.prio[i] = p**self.alpha
        self.max_prio = max(self.max_prio, priority.max())
        self.min_prio = min(self.min_prio, priority.min())

    def weight(self, index: np.ndarray, norm: bool) -> np.ndarray:
        w = (self.prio[index] / self.min_prio) ** (-self.beta)
        return w / w.max() if norm else w


def test_new_transitions_get_max_priority() -> None:
    buf = filled(3)
    assert np.array_equal(buf.weight[np.arange(3)], np.ones(3))
    assert buf.weight[np.arange(3, 10)].sum() == 0.0
    buf.update_weight(np.array([0, 1]), np.array([4.0, 0.25]))
    assert buf._max_prio == pytest.approx(4.0 + EPS) and buf._min_prio == pytest.approx(0.25 + EPS)
    rows = buf.add(step(3))[0]
    assert rows.tolist() == [3] and buf.weight[3] == pytest.approx((4.0 + EPS) ** 0.6)
    buf.init_weight(np.array([5]))
    assert buf.weight[5] == pytest.approx((4.0 + EPS) ** 0.6)


def test_weights_match_hand_computed_values() -> None:
    buf = filled(4, alpha=0.5, beta=0.5, weight_norm=False)
    buf.update_weight(np.array([0, 1, 2, 3]), np.array([4.0, 1.0, -0.25, 9.0]))
    p = np.array([4.0, 1.0, 0.25, 9.0]) + EPS
    stored = p**0.5
    assert np.allclose(buf.weight[np.arange(4)], stored)
    expected = (stored / p.min()) ** -0.5  # published: alpha-scaled priority / raw min priority
    index = np.array([3, 0, 2, 2])
    assert np.allclose(buf.get_weight(index), expected[index])
    assert np.allclose(buf[index].weight, expected[index])
    norm = filled(4, alpha=0.5, beta=0.5)
    norm.update_weight(np.array([0, 1, 2, 3]), np.array([4.0, 1.0, -0.25, 9.0]))
    batch = norm[index]
    assert np.allclose(batch.weight, expected[index] / expected[index].max())
    assert batch.weight.max() == 1.0
    assert np.allclose(norm[np.array([0, 3])].weight, [1.0, (4 / 9) ** 0.25], rtol=1e-5)
    # the other fields are the plain buffer's
    assert batch.obs.tolist() == [[3, -3], [0, 0], [2, -2], [2, -2]] and batch.info.step[0] == 3


def test_int_negative_and_slice_indexing_carry_weights() -> None:
    buf = filled(4, size=4, weight_norm=False)
    buf.update_weight(np.arange(4), np.array([1.0, 2.0, 3.0, 4.0]))
    last = buf[-1]
    assert np.isclose(last.weight, buf.get_weight(3)) and last.obs.tolist() == [3, -3]
    assert np.allclose(buf[np.array([-1, -4])].weight, buf.get_weight(np.array([3, 0])))
    assert np.allclose(buf[1:3].weight, buf.get_weight(np.array([1, 2])))
    everything = buf[:]
    assert len(everything) == 4 and np.allclose(everything.weight, buf.get_weight(np.arange(4)))
    with pytest.raises(IndexError):
        buf[np.array([4])]


def test_sampling_is_proportional_to_priority() -> None:
    buf = filled(4, size=8, alpha=1.0)
    priorities = np.array([1.0, 2.0, 3.0, 6.0])
    buf.update_weight(np.arange(4), priorities)
    draws = 30_000
    indices = buf.sample_indices(draws)
    counts = np.bincount(indices, minlength=8)
    probs = (priorities + EPS) / (priorities + EPS).sum()
    assert counts[4:].sum() == 0
    assert np.all(np.abs(counts[:4] / draws - probs) < 5 * np.sqrt(probs * (1 - probs) / draws))
    half = filled(4, size=8, alpha=0.5)
    half.update_weight(np.arange(4), priorities)
    counts = np.bincount(half.sample_indices(draws), minlength=4)
    probs = np.sqrt(priorities) / np.sqrt(priorities).sum()
    assert np.all(np.abs(counts / draws - probs) < 5 * np.sqrt(probs * (1 - probs) / draws))


def test_sample_sizes_and_empty_buffer() -> None:
    empty = PrioritizedReplayBuffer(5, 0.6, 0.4)
    assert empty.sample_indices(3).size == 0 and len(empty.sample(3)[0]) == 0
    buf = filled(6, size=5)
    batch, indices = buf.sample(0)
    assert indices.tolist() == [1, 2, 3, 4, 0] and np.allclose(batch.weight, 1.0)
    assert len(buf.sample(None)[1]) == 5 and buf.sample_indices(-1).size == 0
    batch, indices = buf.sample(7)
    assert len(batch) == 7 and batch.weight.shape == (7,)
    assert np.array_equal(batch.obs, buf[indices].obs)


def test_seeded_sampling_is_reproducible() -> None:
    first = filled(8, random_seed=5).sample_indices(20)
    assert np.array_equal(first, filled(8, random_seed=5).sample_indices(20))
    assert not np.array_equal(first, filled(8, random_seed=6).sample_indices(20))


def test_update_weight_rejects_bad_input_and_keeps_state() -> None:
    buf = filled(5)
    buf.update_weight(np.array([0, 1]), np.array([2.0, 3.0]))
    before = (buf.weight._value.copy(), buf._max_prio, buf._min_prio)
    with pytest.raises(ValueError, match="3 weights for 2 indices"):
        buf.update_weight(np.array([0, 1]), np.ones(3))
    for bad in (np.array([1.0, np.nan]), np.array([np.inf, 1.0]), np.array([-np.inf, 1.0])):
        with pytest.raises(ValueError, match="non-finite"):
            buf.update_weight(np.array([2, 3]), bad)
    with pytest.raises(IndexError, match="outside"):
        buf.update_weight(np.array([2, 10]), np.array([5.0, 5.0]))
    assert np.array_equal(buf.weight._value, before[0])
    assert (buf._max_prio, buf._min_prio) == before[1:]
    buf.update_weight(np.array([], dtype=np.int64), np.array([]))
    assert np.array_equal(buf.weight._value, before[0])


def test_update_weight_accepts_tensors_lists_and_scalars() -> None:
    buf = filled(5, alpha=1.0)
    buf.update_weight(np.array([0, 1]), torch.tensor([2.0, -3.0], requires_grad=True))
    assert np.allclose(buf.weight[np.array([0, 1])], [2.0 + EPS, 3.0 + EPS])
    buf.update_weight([2, 3], [0.5, 0.5])
    buf.update_weight(np.array([4, 0]), 7.0)
    assert np.allclose(buf.weight[np.arange(5)], np.array([7, 3, 0.5, 0.5, 7]) + EPS)
    buf.update_weight(np.array([1, 1]), np.array([1.0, 5.0]))  # the later duplicate wins
    assert buf.weight[1] == pytest.approx(5.0 + EPS)


def test_zero_weights_keep_transitions_sampleable() -> None:
    buf = filled(4, size=4)
    buf.update_weight(np.arange(4), np.zeros(4))
    assert np.all(buf.weight[np.arange(4)] > 0)
    assert set(buf.sample_indices(2000).tolist()) == {0, 1, 2, 3}


@pytest.mark.parametrize(
    ("alpha", "beta", "match"),
    [(0.0, 0.4, "alpha"), (-1.0, 0.4, "alpha"), (0.5, -0.1, "beta"), (float("nan"), 0.4, "alpha")],
)
def test_alpha_beta_validation(alpha: float, beta: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        PrioritizedReplayBuffer(4, alpha, beta)
    with pytest.raises(AssertionError):  # the published library asserted these
        PrioritizedReplayBuffer(4, alpha, beta)


def test_set_beta() -> None:
    buf = filled(3, weight_norm=False)
    buf.update_weight(np.array([0]), np.array([4.0]))
    buf.set_beta(1.0)
    assert buf._beta == 1.0
    assert np.allclose(buf.get_weight(np.array([0, 1])), [(4 + EPS) ** -0.6, 1.0])
    buf.set_beta(0.0)
    assert np.allclose(buf[np.arange(3)].weight, 1.0)
    with pytest.raises(ValueError, match="beta"):
        buf.set_beta(-0.5)


def test_update_from_other_buffer_gets_max_priority() -> None:
    source = ReplayBuffer(6)
    for i in range(4):
        source.add(step(i))
    buf = filled(2, size=5)
    buf.update_weight(np.array([0]), np.array([3.0]))
    rows = buf.update(source)
    assert rows.tolist() == [2, 3, 4, 0]
    assert np.allclose(buf.weight[rows], (3.0 + EPS) ** 0.6)
    assert buf.weight[1] == 1.0


def test_reset_clears_priorities() -> None:
    buf = filled(8)
    buf.reset()
    assert buf.weight.reduce() == 0.0 and buf.sample_indices(4).size == 0
    buf.add(step(0))
    buf.add(step(1))
    assert set(buf.sample_indices(500).tolist()) == {0, 1}


def test_dropnull_keeps_priorities_with_their_transitions() -> None:
    buf = PrioritizedReplayBuffer(6, alpha=1.0, beta=0.5)
    for i in range(6):
        buf.add(
            Batch(
                obs=float(i) if i != 2 else np.nan,
                act=i,
                rew=0.0,
                terminated=False,
                truncated=False,
            )
        )
    buf.update_weight(np.arange(6), np.arange(6) + 10.0)
    buf.dropnull()
    assert len(buf) == 5 and buf.obs[:5].tolist() == [0, 1, 3, 4, 5]
    expected = np.array([10, 11, 13, 14, 15, 0]) + EPS * np.array([1, 1, 1, 1, 1, 0])
    assert np.allclose(buf.weight[np.arange(6)], expected)
    assert set(buf.sample_indices(2000).tolist()) == {0, 1, 2, 3, 4}


def test_pickle_and_hdf5_round_trips(tmp_path: Path) -> None:
    buf = filled(7)
    buf.update_weight(np.array([1, 4]), np.array([5.0, 0.1]))
    buf.save_hdf5(str(tmp_path / "prio.hdf5"))
    for copy in (
        pickle.loads(pickle.dumps(buf)),
        PrioritizedReplayBuffer.load_hdf5(str(tmp_path / "prio.hdf5")),
    ):
        assert isinstance(copy.weight, SegmentTree)
        assert np.array_equal(copy.weight._value, buf.weight._value)
        assert (copy._alpha, copy._beta, copy._max_prio, copy._min_prio) == (
            buf._alpha,
            buf._beta,
            buf._max_prio,
            buf._min_prio,
        )
        copy._random_state = np.random.RandomState(0)
        buf._random_state = np.random.RandomState(0)
        assert np.array_equal(copy.sample_indices(10), buf.sample_indices(10))


def test_published_state_names_are_accepted() -> None:
    buf = filled(3)
    state = buf.__getstate__()
    state["_PrioritizedReplayBuffer__eps"] = EPS
    del state["_weight_norm"]
    restored = PrioritizedReplayBuffer.__new__(PrioritizedReplayBuffer)
    restored.__setstate__(state)
    assert restored._weight_norm and len(restored) == 3
    assert "_PrioritizedReplayBuffer__eps" not in restored.__dict__


def vector(total: int = 15, num: int = 3, **kwargs: Any) -> PrioritizedVectorReplayBuffer:
    return PrioritizedVectorReplayBuffer(total, num, **{"alpha": 0.5, "beta": 0.5, **kwargs})


def test_vector_buffer_published_scenario() -> None:
    buf = vector()
    for i in range(25):
        buf.add(Batch.stack([step(i), step(i), step(i)]), buffer_ids=[0, 1, 2])
    assert len(buf) == 15 and buf.maxsize == 15
    assert np.allclose(buf[np.arange(buf.maxsize)].weight, 1)
    batch, indices = buf.sample(10)
    buf.update_weight(indices, batch.weight * 0)
    weight = buf[np.arange(buf.maxsize)].weight
    mask = np.isin(np.arange(buf.maxsize), indices)
    assert np.all(weight[mask] == weight[mask][0])
    assert np.all(weight[~mask] == weight[~mask][0])
    assert weight[~mask][0] < weight[mask][0] <= 1


def test_vector_sampling_spans_sub_buffers_by_priority() -> None:
    buf = vector(12, 3, alpha=1.0)
    for i in range(2):
        buf.add(Batch.stack([step(i), step(10 + i), step(20 + i)]), buffer_ids=[0, 1, 2])
    rows = np.array([0, 1, 4, 5, 8, 9])
    assert np.array_equal(np.sort(buf.sample_indices(0)), rows)
    buf.update_weight(rows, np.array([1.0, 1.0, 0.0, 0.0, 3.0, 5.0]))
    draws = 20_000
    counts = np.bincount(buf.sample_indices(draws), minlength=12)
    probs = np.array([1.0, 1.0, EPS, EPS, 3.0, 5.0]) / 10.0
    assert counts[[2, 3, 6, 7, 10, 11]].sum() == 0
    assert np.all(np.abs(counts[rows] / draws - probs) < 5 * np.sqrt(probs / draws) + 1e-3)
    batch = buf[np.array([9, 0])]
    assert batch.obs[:, 0].tolist() == [21, 0] and np.allclose(batch.weight, [0.2**0.5, 1.0])


def test_vector_buffer_options_set_beta_and_reset() -> None:
    buf = vector(8, 2, weight_norm=False)
    assert not buf._weight_norm and buf.options["weight_norm"] is False
    assert all("weight" not in sub.__dict__ for sub in buf.buffers)
    buf.set_beta(0.9)
    assert buf._beta == 0.9 and all(sub._beta == 0.9 for sub in buf.buffers)
    buf.add(Batch.stack([step(0), step(1)]), buffer_ids=[0, 1])
    assert np.allclose(buf[np.array([0, 4])].weight, 1.0)
    buf.reset()
    assert len(buf) == 0 and buf.weight.reduce() == 0.0 and buf.sample_indices(3).size == 0


def test_manager_with_uneven_sub_buffers_and_errors() -> None:
    buffers = [PrioritizedReplayBuffer(s, 0.7, 0.3) for s in (2, 5)]
    manager = PrioritizedReplayBufferManager(buffers)
    assert manager.maxsize == 7 and len(manager.weight) == 7
    manager.add(Batch.stack([step(0), step(1)]), buffer_ids=[0, 1])
    manager.add(Batch.stack([step(2)]), buffer_ids=[1])
    assert manager.weight[np.arange(7)].tolist() == [1, 0, 1, 1, 0, 0, 0]
    manager.update_weight(np.array([3]), np.array([2.0]))
    assert manager.weight[3] == pytest.approx((2.0 + EPS) ** 0.7)
    with pytest.raises(TypeError, match="PrioritizedReplayBuffer"):
        PrioritizedReplayBufferManager([ReplayBuffer(3), ReplayBuffer(3)])  # type: ignore[list-item]
    with pytest.raises(NotImplementedError):
        manager.update(ReplayBuffer(3))


def test_vector_pickle_round_trip() -> None:
    buf = vector()
    for i in range(7):
        buf.add(Batch.stack([step(i), step(i)]), buffer_ids=[0, 2])
    buf.update_weight(np.array([0, 10]), np.array([4.0, 0.5]))
    copy = pickle.loads(pickle.dumps(buf))
    assert np.array_equal(copy.weight._value, buf.weight._value)
    rows = buf.sample_indices(0)
    assert np.array_equal(copy[rows].weight, buf[rows].weight)
    copy.add(Batch.stack([step(9)]), buffer_ids=[1])
    assert copy.weight[5] == pytest.approx((4.0 + EPS) ** 0.5)


@settings(max_examples=40, deadline=None)
@given(
    size=st.integers(1, 12),
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(1, 5)),
            st.tuples(st.just("update"), st.lists(st.floats(-5, 5), min_size=1, max_size=6)),
        ),
        max_size=12,
    ),
    norm=st.booleans(),
)
def test_against_naive_reference(size: int, ops: list, norm: bool) -> None:
    buf = PrioritizedReplayBuffer(size, alpha=0.7, beta=0.6, weight_norm=norm)
    ref = NaivePrioritized(size, alpha=0.7, beta=0.6)
    added = 0
    for kind, arg in ops:
        if kind == "add":
            for _ in range(arg):
                buf.add(step(added))
                ref.add()
                added += 1
        elif len(buf):
            index = buf.sample_indices(len(arg))
            buf.update_weight(index, np.array(arg))
            ref.update(index, np.array(arg))
        assert np.allclose(buf.weight[np.arange(size)], ref.prio)
        if len(buf):
            index = buf.sample_indices(0)
            assert np.allclose(buf[index].weight, ref.weight(index, norm))
            assert np.all(ref.prio[buf.sample_indices(20)] > 0)


def test_sample_matches_drawing_then_reading() -> None:
    """``sample`` takes the priorities from the tree search itself; the batch, indices and
    weights must equal those of ``sample_indices`` followed by indexing, for the same seed."""
    fast, slow = vector(total=60, num=3), vector(total=60, num=3)
    for buf in (fast, slow):
        for i in range(40):
            buf.add(Batch.stack([step(i), step(i + 100), step(i + 200)]), buffer_ids=[0, 1, 2])
        buf.update_weight(np.arange(0, 60, 3), np.linspace(0.1, 5.0, 20))
    batch, index = fast.sample(32)
    expected_index = slow.sample_indices(32)
    expected = slow[expected_index]
    assert np.array_equal(index, expected_index)
    assert np.array_equal(batch.weight, expected.weight) and batch.weight.max() == 1.0
    assert np.array_equal(batch.obs, expected.obs) and np.array_equal(batch.rew, expected.rew)


@pytest.mark.parametrize("weight_norm", [True, False])
def test_row_arrays_and_other_indices_update_and_sample_alike(weight_norm: bool) -> None:
    """``update_weight`` hands the 1-D int64 rows ``sample`` returns straight to the tree and
    ``sample`` divides the drawn priorities inside the tree search; both must give exactly what
    the general paths (any index form; drawing, then reading) give."""
    rows, listed = (filled(10, size=10, weight_norm=weight_norm) for _ in range(2))
    weights = np.random.default_rng(0).standard_normal(6) * 3
    index = np.array([9, 2, 2, 5, 0, 7])
    rows.update_weight(index, weights)
    listed.update_weight(index.astype(np.int32).tolist(), weights.tolist())
    assert np.array_equal(rows.weight._value, listed.weight._value)
    assert (rows._min_prio, rows._max_prio) == (listed._min_prio, listed._max_prio)
    batch, drawn = rows.sample(64)
    expected = rows.get_weight(drawn)
    if weight_norm:
        expected = expected / expected.max()
    assert np.array_equal(batch.weight, expected) and batch.weight.dtype == np.float64
    with pytest.raises(IndexError, match="outside"):
        rows.update_weight(np.array([3, -1]), np.ones(2))
    assert np.array_equal(rows.weight._value, listed.weight._value)
