"""The benchmark page's tables, written at every docs build from the committed results.

``docs/benchmark.md`` includes what :func:`write_benchmark_tables` writes into
``_generated/benchmark/``:

- ``glance.md``: our interquartile mean final return per algorithm and task, the seeds in
  parentheses, one compact table;
- ``off_policy.md`` and ``on_policy.md``: per task and algorithm, ours beside the published
  Tianshou benchmark at the same budget (and Stable-Baselines3 where we ran it at our
  configuration), every column naming its metric.

The numbers come from the runs' ``result.json`` files (``benchmark/results/mujoco-v5``, SB3 in
``mujoco-v5-sb3``) and the published reference (:mod:`benchmark.campaign.published`), so the
page cannot drift from the results. Importing this module has no side effects.
"""

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from generated_files import write_if_changed

from benchmark.campaign.plots import OFF_POLICY, budget_family, common_curves
from benchmark.campaign.published import (
    best_of_seed_mean,
    published_curve_at,
    published_table_at,
)
from benchmark.campaign.report import load_results
from tianshou.evaluation.interval_estimates import iqm

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "benchmark/results/mujoco-v5"
SB3_RESULTS = REPO_ROOT / "benchmark/results/mujoco-v5-sb3"
TASKS = ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")
ALGORITHM_ORDER = ("sac", "td3", "ddpg", "ppo", "trpo", "npg", "a2c", "reinforce")

PLUS_MINUS = "\u00a0±\u00a0"
"""Joins a mean and its spread with no-break spaces, so that a table never wraps the figure."""

Cells = dict[tuple[str, str], list[dict[str, Any]]]


def group(results: Sequence[dict[str, Any]]) -> Cells:
    """Runs by (task, algorithm)."""
    cells: Cells = defaultdict(list)
    for result in results:
        cells[result["task"], result["algorithm"]].append(result)
    return cells


def n(value: float | None) -> str:
    return "—" if value is None or np.isnan(value) else f"{value:,.0f}"


def mean_std(values: Sequence[float]) -> str:
    if len(values) < 2:
        return n(values[0])
    return f"{np.mean(values):,.0f}{PLUS_MINUS}{np.std(values, ddof=1):,.0f}"


def ordered(cells: Cells) -> list[str]:
    present = {algorithm for _, algorithm in cells}
    return [a for a in ALGORITHM_ORDER if a in present] + sorted(present - set(ALGORITHM_ORDER))


def glance_table(cells: Cells) -> str:
    """One row per algorithm: its budget and the IQM final return (seeds) on each task."""
    tasks = [task for task in TASKS if any(t == task for t, _ in cells)]
    lines = [
        "| algorithm | env steps | "
        + " | ".join(task.removesuffix("-v5") for task in tasks)
        + " |",
        "|---|---:|" + "---:|" * len(tasks),
    ]
    for algorithm in ordered(cells):
        runs = [run for (_, a), group_ in cells.items() if a == algorithm for run in group_]
        budget = max(run["env_steps"] for run in runs)
        row = [f"{algorithm.upper()}", f"{budget / 1e3:,.0f}k"]
        for task in tasks:
            group_ = cells.get((task, algorithm))
            row.append(
                f"{iqm([r['final_return'] for r in group_]):,.0f} ({len(group_)})" if group_ else ""
            )
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def our_best_of_seed_mean(runs: Sequence[dict[str, Any]]) -> float:
    """Our runs under the published metric: the highest point of their seed-mean curve."""
    _, curves = common_curves(runs)
    return best_of_seed_mean(curves)


def sb3_final(sb3: Cells, task: str, algorithm: str) -> str:
    runs = sb3.get((task, algorithm))
    if not runs:
        return "—"
    return f"{mean_std([r['final_return'] for r in runs])}\u00a0({len(runs)}\u00a0seeds)"


def off_policy_table(cells: Cells, sb3: Cells) -> str:
    """Off-policy cells at our short budget against the published curves at the same number of
    learning steps (env steps after the warm-up) and SB3 at our configuration."""
    lines = [
        "| task | algorithm (seeds) | final, ours | final, published | final, SB3 "
        "| best, ours | best, published |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for (task, algorithm), runs in sorted(cells.items(), key=lambda item: _order(item[0])):
        if budget_family(runs) != OFF_POLICY:
            continue
        learning = min(r["env_steps"] - r.get("warmup_env_steps", 0) for r in runs)
        published = published_curve_at(algorithm, task, learning)
        lines.append(
            f"| {task.removesuffix('-v5')} | {algorithm.upper()} ({len(runs)}) "
            f"| {mean_std([r['final_return'] for r in runs])} "
            f"| {f'{published.mean:,.0f}{PLUS_MINUS}{published.std:,.0f}' if published else '—'} "
            f"| {sb3_final(sb3, task, algorithm)} "
            f"| {our_best_of_seed_mean(runs):,.0f} "
            f"| {n(published.best_of_seed_mean) if published else '—'} |"
        )
    return "\n".join(lines) + "\n"


def on_policy_table(cells: Cells) -> str:
    """On-policy cells at our long budget against the published table at the same budget."""
    lines = [
        "| task | algorithm (seeds) | final, ours | best, ours | best, published "
        "| best, published at 3M |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for (task, algorithm), runs in sorted(cells.items(), key=lambda item: _order(item[0])):
        if budget_family(runs) == OFF_POLICY:
            continue
        budget = max(r["env_steps"] for r in runs)
        at_budget = published_table_at(algorithm, task, budget)
        longer = published_table_at(algorithm, task, 3_000_000) or published_table_at(
            algorithm, task, 10_000_000
        )
        longer_text = "—"
        if longer is not None:
            suffix = "" if longer.env_steps == 3_000_000 else f" ({longer.env_steps // 10**6}M)"
            longer_text = n(longer.value) + suffix
        lines.append(
            f"| {task.removesuffix('-v5')} | {algorithm.upper()} ({len(runs)}) "
            f"| {mean_std([r['final_return'] for r in runs])} "
            f"| {our_best_of_seed_mean(runs):,.0f} "
            f"| {n(at_budget.value) if at_budget else '—'} | {longer_text} |"
        )
    return "\n".join(lines) + "\n"


def _order(key: tuple[str, str]) -> tuple[int, int]:
    task, algorithm = key
    task_index = TASKS.index(task) if task in TASKS else len(TASKS)
    order = ALGORITHM_ORDER.index(algorithm) if algorithm in ALGORITHM_ORDER else 99
    return order, task_index


def write_benchmark_tables(out_dir: Path) -> None:
    """Write ``glance.md``, ``off_policy.md`` and ``on_policy.md`` into ``out_dir``.

    :param out_dir: usually ``docs/_generated/benchmark``.
    """
    cells = group(load_results(RESULTS))
    sb3 = group(load_results(SB3_RESULTS))
    write_if_changed(out_dir / "glance.md", glance_table(cells))
    write_if_changed(out_dir / "off_policy.md", off_policy_table(cells, sb3))
    write_if_changed(out_dir / "on_policy.md", on_policy_table(cells))
