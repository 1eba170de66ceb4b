"""The published reference numbers and metric: the tables at a budget, the curves at a number of
learning steps, and "best of the seed-mean" against the mean of each seed's best."""

import numpy as np
import pytest

from benchmark.campaign.published import (
    best_of_seed_mean,
    published_curve_at,
    published_table_at,
    published_tables,
    task_family,
)


def test_the_published_metric_is_the_peak_of_the_seed_mean_not_the_mean_of_peaks() -> None:
    returns = np.array([[0.0, 10.0, 2.0], [0.0, 2.0, 10.0]])  # two seeds peaking apart
    assert best_of_seed_mean(returns) == 6.0
    assert float(returns.max(axis=1).mean()) == 10.0  # the other metric is never lower


def test_tables_are_found_at_our_budgets_of_whole_epochs() -> None:
    ppo = published_table_at("ppo", "Hopper-v5", 1_044_480)  # 4% past 1M: the 1M table
    assert ppo is not None and ppo.value == 2609.3 and ppo.env_steps == 1_000_000
    assert ppo.source == "paper Table 3"
    assert published_table_at("ppo", "Hopper-v5", 2_000_000) is None
    assert published_table_at("reinforce", "Hopper-v5", 1_000_000) is None
    assert [v.env_steps for v in published_tables("reinforce", "Walker2d-v5")] == [3 * 10**6, 10**7]
    assert task_family("HalfCheetah-v5") == "HalfCheetah"


def test_curves_are_read_at_the_same_number_of_learning_steps() -> None:
    sac = published_curve_at("sac", "Hopper-v5", 90_000)  # our 100k minus the 10k warm-up
    assert sac is not None
    assert sac.learning_steps == 90_000 and sac.seeds == 10
    assert sac.mean == pytest.approx(1765.9, abs=0.1)  # the published file's mean column
    assert sac.best_of_seed_mean >= sac.mean
    between = published_curve_at("td3", "Hopper-v5", 77_000)  # the last test at or before it
    assert between is not None and between.learning_steps == 75_000
    assert published_curve_at("ppo", "Hopper-v5", 90_000) is None  # no on-policy curves
    assert published_curve_at("sac", "Humanoid-v5", 90_000) is None
