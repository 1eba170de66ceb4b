"""The campaign's statistics over seeds: the IQM with its interval (none for one seed), and the
bootstrap band of the mean learning curve."""

import numpy as np
import pytest
from scipy import stats

from benchmark.campaign.statistics import iqm_interval, mean_band

REPS = 500  # resamples per interval: enough for the checks here, fast


def test_iqm_and_its_interval_over_seeds() -> None:
    scores = [3.0, 1.0, 10.0, 4.0, 2.0, 7.0, 5.0, 6.0]
    iqm, interval = iqm_interval(scores, REPS)
    assert interval is not None
    low, high = interval
    assert iqm == pytest.approx(stats.trim_mean(scores, 0.25))
    assert min(scores) <= low < iqm < high <= max(scores)


def test_one_seed_has_an_iqm_but_no_interval() -> None:
    assert iqm_interval([42.0]) == (42.0, None)


def test_the_band_holds_the_mean_and_stays_within_the_seeds() -> None:
    curves = np.array([[0.0, 1.0, 5.0], [0.0, 3.0, 7.0], [0.0, 2.0, 9.0]])
    mean, low, high = mean_band(curves)
    assert mean.tolist() == pytest.approx([0.0, 2.0, 7.0])
    assert np.all(curves.min(axis=0) <= low) and np.all(low <= mean)
    assert np.all(mean <= high) and np.all(high <= curves.max(axis=0))
    assert high[2] - low[2] > high[1] - low[1]  # wider where the seeds disagree more


def test_one_seed_has_no_band() -> None:
    mean, low, high = mean_band(np.array([[1.0, 2.0]]))
    assert mean.tolist() == low.tolist() == high.tolist() == [1.0, 2.0]
