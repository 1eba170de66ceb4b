import numpy as np
import pytest

from tianshou.distributed.running_stats import Moments, fold_contributions
from tianshou.utils.statistics import RunningMeanStd


def _stats_of(*batches: np.ndarray) -> RunningMeanStd:
    stats = RunningMeanStd()
    for batch in batches:
        stats.update(batch)
    return stats


def test_what_was_added_since_a_snapshot_has_the_moments_of_the_added_samples() -> None:
    rng = np.random.default_rng(0)
    first, added = rng.normal(size=(7, 3)), rng.normal(3.0, 2.0, size=(5, 3))
    stats = _stats_of(first)
    snapshot = Moments.of(stats)
    stats.update(added)
    since = Moments.of(stats).since(snapshot)
    assert since.count == 5
    np.testing.assert_allclose(since.mean, added.mean(axis=0))
    np.testing.assert_allclose(since.m2 / since.count, added.var(axis=0))


def test_nothing_added_is_an_empty_contribution() -> None:
    stats = _stats_of(np.ones((4, 2)))
    snapshot = Moments.of(stats)
    assert Moments.of(stats).since(snapshot).count == 0


def test_folding_every_ranks_contribution_gives_the_statistics_of_all_data() -> None:
    rng = np.random.default_rng(1)
    common = rng.normal(size=(6, 2))
    per_rank = [rng.normal(r, 1.0 + r, size=(4 + r, 2)) for r in range(3)]
    agreed = Moments.of(_stats_of(common))
    contributions = []
    for batch in per_rank:
        local = _stats_of(common, batch)
        contributions.append(Moments.of(local).since(agreed))
    merged = RunningMeanStd()
    fold_contributions(agreed, contributions).write_to(merged)
    everything = np.concatenate([common, *per_rank])
    assert merged.count == len(everything)
    np.testing.assert_allclose(merged.mean, everything.mean(axis=0))
    np.testing.assert_allclose(merged.var, everything.var(axis=0))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_written_statistics_keep_the_float_type_of_the_data(dtype: type) -> None:
    source = _stats_of(np.arange(6, dtype=dtype).reshape(3, 2))
    fresh = RunningMeanStd()  # a python float mean until it sees data
    Moments.of(fresh).merged(Moments.of(source)).write_to(fresh)
    assert np.asarray(fresh.mean).dtype == dtype
    assert np.asarray(fresh.var).dtype == dtype
    assert fresh.count == 3
