import logging

import numpy as np
import pytest

from tianshou.highlevel.hpo.score import iqm, iqm_with_interval


def test_iqm_is_the_mean_of_the_middle_half() -> None:
    assert iqm([1.0, 2.0, 3.0, 100.0]) == pytest.approx(2.5)
    assert iqm([4.0, 6.0]) == pytest.approx(5.0)
    with pytest.raises(ValueError):
        iqm([])


def test_interval_brackets_the_iqm_is_reproducible_and_leaves_the_global_generator() -> None:
    returns = [10.0, 12.0, 30.0, 31.0, 33.0, 80.0]
    np.random.seed(3)
    before = np.random.get_state()[1].copy()
    score = iqm_with_interval(returns)
    assert np.array_equal(np.random.get_state()[1], before)
    assert score.low <= score.iqm <= score.high
    assert score.low >= min(returns) and score.high <= max(returns)
    assert score.low < score.high
    assert iqm_with_interval(returns) == score
    assert score.to_dict() == {"iqm": score.iqm, "ci_low": score.low, "ci_high": score.high}


def test_the_interval_says_nothing_at_info_level(caplog: pytest.LogCaptureFixture) -> None:
    """rliable announces each estimate through absl at INFO; a search prints it per trial."""
    absl_level = logging.getLogger("absl").level
    with caplog.at_level(logging.INFO):
        iqm_with_interval([1.0, 2.0, 3.0])
    assert not [r for r in caplog.records if r.name == "absl"]
    assert logging.getLogger("absl").level == absl_level
