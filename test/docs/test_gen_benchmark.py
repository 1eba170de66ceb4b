"""``docs/gen_benchmark.py``: the benchmark page's tables hold the committed results and the
published reference at the same budget, with figures that a table cannot wrap."""

import re

import numpy as np
import pytest

from benchmark.campaign.published import published_curve_at, published_table_at
from benchmark.campaign.report import load_results
from benchmark.campaign.statistics import iqm_interval
from test.docs.conftest import load_docs_script

gen_benchmark = load_docs_script("gen_benchmark")


@pytest.fixture(scope="module")
def cells() -> dict:
    return gen_benchmark.group(load_results(gen_benchmark.RESULTS))


def row(table: str, task: str, algorithm: str) -> list[str]:
    line = next(
        line for line in table.splitlines() if line.startswith(f"| {task} | {algorithm.upper()} (")
    )
    return [cell.strip() for cell in line.strip("|").split("|")]


def test_the_glance_table_gives_each_cells_iqm_and_seeds(cells: dict) -> None:
    table = gen_benchmark.glance_table(cells)
    ppo_hopper = [r["final_return"] for r in cells["Hopper-v5", "ppo"]]
    iqm = gen_benchmark.iqm(ppo_hopper)
    assert iqm == pytest.approx(np.mean(np.sort(ppo_hopper)[2:8]))  # 10 seeds: the middle 6
    assert iqm == pytest.approx(iqm_interval(ppo_hopper, reps=10)[0])  # as in the report
    assert re.search(rf"\| PPO \| [\d,]+k \| {iqm:,.0f} \({len(ppo_hopper)}\) \|", table)


def test_off_policy_cells_meet_the_published_curves_at_equal_learning_steps(cells: dict) -> None:
    table = gen_benchmark.off_policy_table(cells, {})
    runs = cells["Hopper-v5", "sac"]
    learning = min(r["env_steps"] - r["warmup_env_steps"] for r in runs)
    published = published_curve_at("sac", "Hopper-v5", learning)
    assert learning == 90_000 and published is not None
    values = row(table, "Hopper", "sac")
    assert values[3] == f"{published.mean:,.0f}\u00a0±\u00a0{published.std:,.0f}"
    assert values[6] == f"{published.best_of_seed_mean:,.0f}"
    finals = [r["final_return"] for r in runs]
    assert values[2] == f"{np.mean(finals):,.0f}\u00a0±\u00a0{np.std(finals, ddof=1):,.0f}"


def test_on_policy_cells_meet_the_published_table_at_their_budget(cells: dict) -> None:
    table = gen_benchmark.on_policy_table(cells)
    values = row(table, "Walker2d", "trpo")
    published = published_table_at("trpo", "Walker2d-v5", 1_000_000)
    assert published is not None and values[4] == f"{published.value:,.0f}" == "3,827"
    ours = gen_benchmark.our_best_of_seed_mean(cells["Walker2d-v5", "trpo"])
    assert values[3] == f"{ours:,.0f}"
    best_of_each = np.mean([r["best_return"] for r in cells["Walker2d-v5", "trpo"]])
    assert ours <= best_of_each + 1e-6  # the published metric is never above the other
    assert row(table, "Hopper", "reinforce")[4] == "—"  # none published at 1M


def test_no_table_can_wrap_a_figure(cells: dict) -> None:
    for table in (gen_benchmark.off_policy_table(cells, {}), gen_benchmark.on_policy_table(cells)):
        assert " ± " not in table  # mean and spread are joined by no-break spaces
