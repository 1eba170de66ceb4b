import pytest

from tianshou.evaluation.interval_estimates import iqm
from tianshou.highlevel.hpo.score import ScoreWithInterval


def test_score_of_returns_is_their_iqm_in_a_reproducible_interval() -> None:
    returns = [10.0, 12.0, 30.0, 31.0, 33.0, 80.0]
    score = ScoreWithInterval.of_returns(returns)
    assert score.iqm == pytest.approx(iqm(returns))
    assert min(returns) <= score.low < score.iqm < score.high <= max(returns)
    assert ScoreWithInterval.of_returns(returns) == score
    assert ScoreWithInterval.of_returns(returns, bootstrap_seed=1) != score
    assert score.to_dict() == {"iqm": score.iqm, "ci_low": score.low, "ci_high": score.high}


def test_score_prints_as_iqm_and_interval() -> None:
    assert str(ScoreWithInterval(1.234, 0.5, 2.0)) == "1.23 [0.50, 2.00]"
