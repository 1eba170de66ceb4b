"""MovAvg and RunningMeanStd against direct computations over all the data."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tianshou.utils.statistics import MovAvg, RunningMeanStd, _mean_and_variance


def test_mov_avg_window_and_ignored_values() -> None:
    stat = MovAvg(size=3)
    assert stat.get() == 0.0 and stat.std() == 0.0
    assert stat.add(1.0) == 1.0
    stat.add([2.0, float("inf"), float("nan"), -float("inf")])
    assert stat.cache == [1.0, 2.0]
    stat.add(torch.tensor([3.0, 4.0]))
    assert stat.cache == [2.0, 3.0, 4.0]
    assert stat.mean() == stat.get() == pytest.approx(3.0)
    assert stat.std() == pytest.approx(np.std([2.0, 3.0, 4.0]))


def test_mov_avg_size_zero_keeps_everything() -> None:
    stat = MovAvg(size=0)
    stat.add(np.arange(500.0))
    assert len(stat.cache) == 500


batches = st.lists(
    arrays(np.float64, st.tuples(st.integers(1, 6), st.just(3)), elements=st.floats(-1e3, 1e3)),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(batches)
def test_running_mean_std_equals_statistics_of_all_batches(data: list[np.ndarray]) -> None:
    rms = RunningMeanStd()
    for batch in data:
        rms.update(batch)
    everything = np.concatenate(data)
    # the initial estimate (mean 0, var 1) counts with weight zero
    np.testing.assert_allclose(rms.mean, everything.mean(axis=0), rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(rms.var, everything.var(axis=0), rtol=1e-7, atol=1e-6)
    assert rms.count == len(everything)


def test_norm_uses_epsilon_and_clips() -> None:
    rms = RunningMeanStd(mean=1.0, std=4.0, clip_max=2.0, epsilon=0.0)
    np.testing.assert_allclose(rms.norm(np.array([3.0, 100.0, -100.0])), [1.0, 2.0, -2.0])
    unclipped = RunningMeanStd(clip_max=None)
    assert unclipped.norm(np.array([50.0]))[0] == pytest.approx(50.0, rel=1e-6)
    default = RunningMeanStd()
    assert default.eps == np.finfo(np.float32).eps.item()
    assert default.var == 1.0 and default.count == 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int64])
@pytest.mark.parametrize("shape", [(8, 11), (1, 3), (1000, 2, 2), (5,)])
def test_batch_statistics_are_numpys_mean_and_variance_bit_for_bit(
    dtype: type, shape: tuple[int, ...]
) -> None:
    data = np.random.default_rng(3).normal(1.0, 3.0, size=shape).astype(dtype)
    mean, var = _mean_and_variance(data)
    for ours, numpys in ((mean, np.mean(data, axis=0)), (var, np.var(data, axis=0))):
        assert ours.dtype == numpys.dtype
        assert np.array_equal(ours, numpys)
