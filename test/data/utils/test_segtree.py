"""Tests for SegmentTree (tianshou/data/utils/segtree.py), against a naive numpy cumsum model."""

import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tianshou.data import SegmentTree
from tianshou.data.utils.segtree import TreeIndexError


def naive_prefix_idx(leaves: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Smallest i with value <= sum(leaves[:i + 1]) (the published search semantics)."""
    return np.searchsorted(np.cumsum(leaves), value, side="left")


def test_docstring_example_and_layout() -> None:
    tree = SegmentTree(4)
    tree[np.arange(4)] = np.array([1.0, 0.0, 2.0, 1.0])
    assert tree.reduce() == 4.0 and tree.reduce(1, 3) == 2.0
    assert tree.get_prefix_sum_idx(np.array([0.5, 1.0, 1.5, 3.5])).tolist() == [0, 0, 2, 3]
    # heap layout: root at 1, leaf i at bound + i
    assert tree._value.shape == (8,)
    assert tree._value[1] == 4.0 and tree._value[4:8].tolist() == [1.0, 0.0, 2.0, 1.0]
    assert tree._value[2] == 1.0 and tree._value[3] == 3.0


def test_len_initial_zeros_and_getitem() -> None:
    tree = SegmentTree(5)
    assert len(tree) == 5 and tree.reduce() == 0.0
    assert all(tree[i] == 0.0 for i in range(5))
    tree[3] = 2.5
    assert tree[3] == 2.5 and isinstance(tree[3], float)
    assert tree[np.array([[3, 0], [3, 3]])].tolist() == [[2.5, 0.0], [2.5, 2.5]]
    assert tree[1:4].tolist() == [0.0, 0.0, 2.5]
    assert tree[[3]].tolist() == [2.5]
    assert tree[np.array([], dtype=np.int64)].shape == (0,)


@pytest.mark.parametrize("index", [5, -1, np.array([0, 5]), np.array([-1])])
def test_index_out_of_range(index: object) -> None:
    tree = SegmentTree(5)
    with pytest.raises(IndexError, match="outside"):
        tree[index]  # type: ignore[index]
    with pytest.raises(TreeIndexError):  # also an AssertionError, like the published asserts
        tree[index] = 1.0  # type: ignore[index]
    assert tree.reduce() == 0.0


def test_bad_values_are_rejected_without_writing() -> None:
    tree = SegmentTree(4)
    tree[np.arange(4)] = 1.0
    before = tree._value.copy()
    for bad in (np.array([1.0, -0.5]), np.array([np.nan, 1.0])):
        with pytest.raises(ValueError, match="non-negative"):
            tree[np.array([0, 1])] = bad
        with pytest.raises(AssertionError):
            tree[np.array([0, 1])] = bad
    with pytest.raises(ValueError, match="3 values for 2 indices"):
        tree[np.array([0, 1])] = np.ones(3)
    with pytest.raises(TypeError, match="integers"):
        tree[np.array([0.5])] = 1.0
    assert np.array_equal(tree._value, before)


def test_size_validation() -> None:
    for size in (-1, 2.5, True):
        with pytest.raises(ValueError, match="non-negative integer"):
            SegmentTree(size)  # type: ignore[arg-type]


def test_size_one_and_zero() -> None:
    tree = SegmentTree(1)
    tree[0] = 3.0
    assert tree.reduce() == 3.0 and tree.reduce(0, 1) == 3.0 and tree.reduce(0, 0) == 0.0
    assert tree.get_prefix_sum_idx(0.0) == 0 and tree.get_prefix_sum_idx(2.9) == 0
    assert tree.sample(np.array([0.0, 0.5, 0.999])).tolist() == [0, 0, 0]
    empty = SegmentTree(0)
    assert len(empty) == 0 and empty.reduce() == 0.0 and empty.reduce(0, 0) == 0.0
    with pytest.raises(IndexError):
        empty[0]


def test_single_updates_reduce_every_range() -> None:
    rng = np.random.default_rng(1)
    size = 8
    tree, naive = SegmentTree(size), np.zeros(size)
    for _ in range(100):
        index, value = int(rng.integers(size)), float(rng.random())
        naive[index] = value
        tree[index] = value
        for i in range(size + 1):
            for j in range(i, size + 1):
                assert np.isclose(tree.reduce(i, j), naive[i:j].sum())
    assert np.isclose(tree.reduce(start=1), naive[1:].sum())
    assert np.isclose(tree.reduce(end=-1), naive[:-1].sum())
    assert np.isclose(tree.reduce(2, -3), naive[2:-3].sum())


def test_reduce_range_errors() -> None:
    tree = SegmentTree(6)
    for start, end in ((3, 2), (-1, 4), (0, 7)):
        with pytest.raises(IndexError, match="not within"):
            tree.reduce(start, end)


def test_batch_write_later_duplicates_win() -> None:
    tree = SegmentTree(6)
    tree[np.array([1, 4, 1, 1])] = np.array([5.0, 2.0, 7.0, 3.0])
    assert tree[1] == 3.0 and tree[4] == 2.0 and tree.reduce() == 5.0
    tree[np.array([2, 3])] = 0.5  # scalar broadcast
    assert tree[np.arange(6)].tolist() == [0.0, 3.0, 0.5, 0.5, 2.0, 0.0]


def test_published_prefix_sum_corner_cases() -> None:
    tree = SegmentTree(10)
    tree[np.arange(3)] = np.array([0.1, 0.0, 0.1])
    queries = np.array([0.0, 0.1, 0.1 + 1e-6, 0.2 - 1e-6])
    assert tree.get_prefix_sum_idx(queries).tolist() == [0, 0, 2, 2]
    ones = SegmentTree(8)
    ones[np.arange(8)] = 1.0
    for scalar in range(8):
        index = ones.get_prefix_sum_idx(float(scalar))
        assert isinstance(index, int)
        assert index <= scalar <= index + 1


@pytest.mark.parametrize("value", [0.2, 0.3, -0.1, np.nan, np.array([0.1, 0.25])])
def test_prefix_sum_target_out_of_range(value: object) -> None:
    tree = SegmentTree(3)
    tree[np.arange(3)] = np.array([0.1, 0.0, 0.1])
    with pytest.raises(ValueError, match=r"must lie in \[0, "):
        tree.get_prefix_sum_idx(value)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):  # the published library's exception type
        tree.get_prefix_sum_idx(value)  # type: ignore[arg-type]


def test_prefix_sum_keeps_query_shape() -> None:
    tree = SegmentTree(5)
    tree[np.arange(5)] = np.array([1.0, 1.0, 0.0, 2.0, 1.0])
    queries = np.array([[0.5, 4.5], [2.0, 2.5]])
    out = tree.get_prefix_sum_idx(queries)
    assert out.shape == (2, 2) and out.tolist() == [[0, 4], [1, 3]]
    assert tree.get_prefix_sum_idx(np.array([], dtype=float)).shape == (0,)


@settings(max_examples=80, deadline=None)
@given(
    size=st.integers(1, 70),
    ops=st.lists(
        st.tuples(st.lists(st.integers(0, 69), min_size=1, max_size=20), st.integers(0, 4)),
        min_size=1,
        max_size=8,
    ),
    data=st.data(),
)
def test_matches_naive_model(size: int, ops: list, data: st.DataObject) -> None:
    """Integer leaf values keep every sum exact, so results must equal the cumsum model exactly."""
    tree, naive = SegmentTree(size), np.zeros(size)
    for raw_index, value in ops:
        index = np.array([i % size for i in raw_index])
        values = np.full(len(index), float(value)) + np.arange(len(index)) % 2
        naive[index] = values  # numpy also keeps the last of repeated indices
        tree[index] = values
        assert np.array_equal(tree[np.arange(size)], naive)
        assert tree.reduce() == naive.sum()
        start = data.draw(st.integers(0, size))
        end = data.draw(st.integers(start, size))
        assert tree.reduce(start, end) == naive[start:end].sum()
        total = naive.sum()
        if total > 0:
            targets = np.concatenate([np.arange(0, total, 0.5), data.draw(_unit_floats) * total])
            assert np.array_equal(
                tree.get_prefix_sum_idx(targets), naive_prefix_idx(naive, targets)
            )
            sampled = tree.sample(data.draw(_unit_floats))
            assert np.all(naive[sampled] > 0)


_unit_floats = st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=16).map(
    np.array,
)


def test_float_precision_wide_magnitudes() -> None:
    rng = np.random.default_rng(2)
    size = 1000
    naive = 10.0 ** rng.uniform(-8, 8, size)
    naive[rng.random(size) < 0.3] = 0.0
    tree = SegmentTree(size)
    tree[np.arange(size)] = naive
    assert np.isclose(tree.reduce(), naive.sum(), rtol=1e-12)
    cumsum = np.cumsum(naive)
    targets = rng.random(2000) * tree.reduce()
    index = tree.get_prefix_sum_idx(targets)
    below = np.where(index > 0, cumsum[index - 1], 0.0)
    assert np.all(below <= targets * (1 + 1e-9)) and np.all(targets <= cumsum[index] * (1 + 1e-9))
    # extreme draws (0 and the largest double below 1) never land on zero leaves or padding
    extremes = np.array([0.0, np.nextafter(1.0, 0.0), 1e-300, 0.5])
    sampled = tree.sample(np.concatenate([extremes, rng.random(5000)]))
    assert np.all(sampled < size) and np.all(naive[sampled] > 0)


def test_sampling_frequencies_follow_leaf_values() -> None:
    weights = np.array([1.0, 0.0, 2.0, 3.0, 4.0])
    tree = SegmentTree(5)
    tree[np.arange(5)] = weights
    draws = 40_000
    counts = np.bincount(tree.sample(np.random.default_rng(3).random(draws)), minlength=5)
    expected = weights / weights.sum() * draws
    sigma = np.sqrt(expected * (1 - weights / weights.sum())) + 1e-9
    assert counts[1] == 0
    assert np.all(np.abs(counts - expected) < 5 * sigma)


def test_pickle_round_trip() -> None:
    tree = SegmentTree(7)
    tree[np.arange(7)] = np.arange(7.0)
    copy = pickle.loads(pickle.dumps(tree))
    assert np.array_equal(copy._value, tree._value) and len(copy) == 7
    copy[0] = 10.0
    assert copy.reduce() == 31.0 and tree.reduce() == 21.0


def test_sampling_also_returns_the_drawn_leaf_values() -> None:
    tree = SegmentTree(100)
    tree[np.arange(100)] = np.arange(100.0) % 7
    index, values = tree._sample_with_values(np.random.default_rng(0).random(500))
    assert np.array_equal(values, tree[index]) and np.all(values > 0)
    assert np.array_equal(tree._leaf_values(), np.arange(100.0) % 7)
    tree._clear()
    assert tree.reduce() == 0.0 and not tree._leaf_values().any()


def test_module_import_does_not_import_numba() -> None:
    code = (
        "import sys, tianshou.data.utils.segtree as s; "
        "assert 'numba' not in sys.modules, 'numba imported eagerly'; "
        "t = s.SegmentTree(3); t[0] = 1.0; assert 'numba' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("size", [1, 2, 5, 64, 100])
def test_batch_writes_of_any_size_equal_one_by_one_writes(size: int) -> None:
    """Large batches recompute the levels near the root in one sweep instead of following every
    path; the tree must be exactly the one single-leaf writes build, and every inner node exactly
    the sum of its children."""
    rng = np.random.default_rng(size)
    batched, single = SegmentTree(size), SegmentTree(size)
    bound = len(batched._value) // 2
    for count in (1, 3, bound // 2, bound, 2 * bound + 3):
        index = rng.integers(0, size, count)
        value = rng.random(count) * 10.0 ** rng.integers(-8, 8, count)
        batched[index] = value
        for i, v in zip(index, value, strict=True):
            single[np.array([i])] = v
        assert np.array_equal(batched._value, single._value)
        inner = batched._value[1:bound]
        assert np.array_equal(inner, batched._value[2::2] + batched._value[3::2])


def test_sampled_values_divided_in_the_descent_equal_numpy_division() -> None:
    tree = SegmentTree(100)
    tree[np.arange(100)] = np.arange(100.0) % 7
    query = np.random.default_rng(0).random(50)
    index, values = tree._sample_with_values(query, 3.0)
    plain_index, plain_values = tree._sample_with_values(query)
    assert np.array_equal(index, plain_index)
    assert np.array_equal(values, tree[index] / 3.0)
    assert np.array_equal(plain_values, tree[index])
