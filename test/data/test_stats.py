import numpy as np
import pytest

from tianshou.data.stats import (
    InfoStats,
    SequenceSummaryStats,
    TimingStats,
    compute_dim_to_summary_stats,
)


def test_summary_of_sequence_matches_numpy() -> None:
    values = [1.0, 2.0, 4.0, -3.0]
    stats = SequenceSummaryStats.from_sequence(values)
    assert stats.mean == pytest.approx(np.mean(values))
    assert stats.std == pytest.approx(np.std(values))
    assert (stats.max, stats.min) == (4.0, -3.0)
    assert isinstance(stats.mean, float)


def test_summary_of_single_value_has_no_spread() -> None:
    stats = SequenceSummaryStats.from_single_value(7)
    assert stats.to_dict() == {"mean": 7.0, "std": 0.0, "max": 7.0, "min": 7.0}


def test_summary_of_empty_sequence_is_an_error() -> None:
    with pytest.raises(ValueError, match="empty"):
        SequenceSummaryStats.from_sequence([])


def test_summary_is_keyword_only() -> None:
    with pytest.raises(TypeError):
        SequenceSummaryStats(1.0, 0.0, 1.0, 1.0)  # type: ignore[misc]


def test_per_dimension_summary() -> None:
    arr = np.array([[1.0, 10.0], [3.0, 30.0]])
    stats = compute_dim_to_summary_stats(arr)
    assert sorted(stats) == [0, 1]
    assert stats[0].mean == 2.0
    assert stats[1].max == 30.0
    with pytest.raises(ValueError, match="2-d"):
        compute_dim_to_summary_stats(np.zeros(3))


def test_info_stats_holds_timing() -> None:
    info = InfoStats(
        update_step=3,
        best_score=1.5,
        best_reward=1.5,
        best_reward_std=0.1,
        train_step=100,
        train_episode=4,
        test_step=50,
        test_episode=2,
        timing=TimingStats(total_time=2.0),
    )
    assert info.timing.total_time == 2.0
    assert info.timing.update_speed == 0.0
