"""The IQM and the performance profile with their bootstrap intervals: hand-computed values,
the layouts of scores, one seed one interval, and numpy's global generator left as it was."""

import logging

import numpy as np
import pytest

from tianshou.evaluation.interval_estimates import (
    iqm,
    iqm_with_interval,
    performance_profile_with_interval,
)

REPS = 300  # enough for the checks below, fast
SCORES = [3.0, 1.0, 10.0, 4.0, 2.0, 7.0, 5.0, 6.0]


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    assert iqm([1.0, 2.0, 3.0, 100.0]) == pytest.approx(2.5)  # 1 and 100 trimmed
    assert iqm(SCORES) == pytest.approx(np.mean([3.0, 4.0, 5.0, 6.0]))
    assert iqm([4.0, 6.0]) == pytest.approx(5.0)  # too few to trim
    assert iqm(np.array([[1.0, 100.0], [2.0, 3.0]])) == pytest.approx(2.5)  # over all axes
    with pytest.raises(ValueError, match="no scores"):
        iqm([])


def test_interval_contains_the_iqm_and_is_reproducible_by_seed() -> None:
    point, (low, high) = iqm_with_interval(SCORES, reps=REPS)
    assert point.shape == ()
    assert float(point) == pytest.approx(4.5)
    assert min(SCORES) <= low < point < high <= max(SCORES)
    again = iqm_with_interval(SCORES, reps=REPS)
    assert np.array_equal(again[1], [low, high]), "same seed, same interval"
    other = iqm_with_interval(SCORES, reps=REPS, seed=1)
    assert not np.array_equal(other[1], [low, high]), "the seed chooses the resamples"
    narrow = iqm_with_interval(SCORES, reps=REPS, confidence=0.5)[1]
    assert low <= narrow[0] <= narrow[1] <= high


def test_the_global_generator_is_left_as_it_was() -> None:
    np.random.seed(3)
    before = np.random.get_state()[1].copy()
    iqm_with_interval(SCORES, reps=REPS)
    performance_profile_with_interval(SCORES, np.array([2.0, 5.0]), reps=REPS)
    assert np.array_equal(np.random.get_state()[1], before)
    np.random.seed(4)  # the generator's state does not reach the interval either
    assert np.array_equal(
        iqm_with_interval(SCORES, reps=REPS)[1], iqm_with_interval(SCORES, reps=REPS, seed=0)[1]
    )


def test_further_axes_are_estimated_separately() -> None:
    runs_tasks_steps = np.stack([np.array(SCORES).reshape(4, 2), np.full((4, 2), 7.0)], axis=-1)
    points, intervals = iqm_with_interval(runs_tasks_steps, reps=REPS)
    assert points.shape == (2,) and intervals.shape == (2, 2)
    np.testing.assert_allclose(points, [iqm(SCORES), 7.0])
    np.testing.assert_allclose(intervals[:, 1], [7.0, 7.0])  # equal runs: a point interval
    alone, alone_interval = iqm_with_interval(np.array(SCORES).reshape(4, 2), reps=REPS)
    assert float(alone) == points[0]
    assert alone_interval.shape == (2,)


def test_performance_profile_counts_scores_above_each_threshold() -> None:
    profile, interval = performance_profile_with_interval(
        SCORES, np.array([0.0, 4.5, 10.0]), reps=REPS
    )
    np.testing.assert_allclose(profile, [1.0, 0.5, 0.0])
    assert interval.shape == (2, 3)
    assert np.all(interval[0] <= profile) and np.all(profile <= interval[1])
    np.testing.assert_allclose(interval[:, 0], [1.0, 1.0])  # every resample is above 0


def test_scores_without_runs_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one run"):
        iqm_with_interval(np.zeros((0, 3)))


def test_rliable_says_nothing_at_info_level(caplog: pytest.LogCaptureFixture) -> None:
    """rliable announces each estimate through absl at INFO; a search would print it per trial."""
    absl_level = logging.getLogger("absl").level
    with caplog.at_level(logging.INFO):
        iqm_with_interval(SCORES, reps=REPS)
    assert not [r for r in caplog.records if r.name == "absl"]
    assert logging.getLogger("absl").level == absl_level
