"""The campaign's figures: a task's learning curves (mean and 95% bootstrap band over seeds per
algorithm), one figure per task and budget family (the off-policy algorithms at their short
budget, the on-policy ones at their long one, so that neither is squeezed into a corner of the
other's axis), and the aggregate over tasks (rliable's IQM with its interval, and performance
profiles).

Returns of different tasks are not comparable, and the MuJoCo tasks have no agreed reference
scores; the aggregate therefore normalises each task's final returns to [0, 1] between the
lowest and the highest final return of any run on that task in the campaign. It ranks the
campaign's algorithms; it is no absolute measure.
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.campaign.plan import available_algorithms
from benchmark.campaign.statistics import BOOTSTRAP_REPS, mean_band
from tianshou.evaluation.interval_estimates import (
    iqm_with_interval,
    performance_profile_with_interval,
)

LINE_STYLES = ("-", "--", "-.", ":")
OFF_POLICY, ON_POLICY = "off-policy", "on-policy"


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def algorithm_style(algorithm: str) -> tuple[str, str]:
    """The colour and line style of ``algorithm`` in every figure: a colour of its own among
    the known algorithms (matplotlib's ten-colour cycle), and a line style that also tells
    neighbouring colours apart in print."""
    known = available_algorithms()
    index = known.index(algorithm) if algorithm in known else len(known)
    return f"C{index % 10}", LINE_STYLES[index % len(LINE_STYLES)]


def algorithm_color(algorithm: str) -> str:
    """The colour of ``algorithm`` in every figure (see :func:`algorithm_style`)."""
    return algorithm_style(algorithm)[0]


def budget_family(runs: Sequence[dict[str, Any]]) -> str:
    """``off-policy`` for runs that start with a random warm-up (the off-policy scripts, run at
    a short budget), else ``on-policy``."""
    return OFF_POLICY if any(run.get("warmup_env_steps", 0) for run in runs) else ON_POLICY


def common_curves(runs: Sequence[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """The runs' test returns on one grid of env steps (seeds x points): the union of their
    test steps up to the shortest run's last one, linearly interpolated."""
    end = min(run["test_env_steps"][-1] for run in runs)
    grid = np.unique(np.concatenate([run["test_env_steps"] for run in runs]))
    grid = grid[grid <= end]
    curves = np.stack([np.interp(grid, run["test_env_steps"], run["test_returns"]) for run in runs])
    return grid, curves


def plot_learning_curves(
    task: str,
    runs_by_algorithm: dict[str, list[dict[str, Any]]],
    path: Path,
    reps: int = BOOTSTRAP_REPS,
    title: str | None = None,
) -> None:
    """Write ``task``'s learning curves to ``path``: test return against env steps, the mean
    over seeds and its 95% bootstrap band (``reps`` resamples), one colour and line style per
    algorithm, the legend beside the axes.

    :param title: the figure's title; None: the task.
    """
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(7.6, 4.0))
    for algorithm, runs in sorted(runs_by_algorithm.items()):
        grid, curves = common_curves(runs)
        mean, low, high = mean_band(curves, reps)
        color, style = algorithm_style(algorithm)
        axes.plot(
            grid, mean, color=color, linestyle=style, label=f"{algorithm} ({len(runs)} seeds)"
        )
        axes.fill_between(grid, low, high, color=color, alpha=0.15, linewidth=0)
    axes.set_title(title or task)
    axes.set_xlabel("env steps")
    axes.set_ylabel("test return")
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, frameon=False)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)


def plot_task_families(
    task: str, runs_by_algorithm: dict[str, list[dict[str, Any]]], out: Path, reps: int
) -> list[Path]:
    """Write one learning-curve figure of ``task`` per budget family present
    (``<task>-off-policy.png``, ``<task>-on-policy.png``); return their paths."""
    families: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for algorithm, runs in runs_by_algorithm.items():
        families.setdefault(budget_family(runs), {})[algorithm] = runs
    paths = []
    for family, family_runs in sorted(families.items()):
        budget = max(run["env_steps"] for group in family_runs.values() for run in group)
        path = out / f"{task}-{family}.png"
        title = f"{task}: {family} algorithms at {budget / 1e3:,.0f}k env steps"
        plot_learning_curves(task, family_runs, path, reps, title=title)
        paths.append(path)
    return paths


def normalized_scores(results: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Per algorithm, its final returns normalised per task (see the module docstring) as a
    seeds x tasks matrix, over the seeds that the algorithm has on all its tasks."""
    by_task: dict[str, list[float]] = {}
    for result in results:
        by_task.setdefault(result["task"], []).append(result["final_return"])
    low = {task: min(values) for task, values in by_task.items()}
    span = {task: (max(values) - low[task]) or 1.0 for task, values in by_task.items()}
    scores: dict[str, np.ndarray] = {}
    for algorithm in sorted({r["algorithm"] for r in results}):
        own = [r for r in results if r["algorithm"] == algorithm]
        tasks = sorted({r["task"] for r in own})
        seed_sets = [{r["seed"] for r in own if r["task"] == task} for task in tasks]
        seeds = sorted(set.intersection(*seed_sets))
        table = {(r["task"], r["seed"]): r["final_return"] for r in own}
        scores[algorithm] = np.array(
            [[(table[task, seed] - low[task]) / span[task] for task in tasks] for seed in seeds]
        ).reshape(len(seeds), len(tasks))
    return scores


def plot_aggregate(
    results: Sequence[dict[str, Any]], path: Path, reps: int = BOOTSTRAP_REPS
) -> None:
    """Write the aggregate figure to ``path``: per algorithm, the IQM of the normalised final
    returns over all its tasks and seeds with rliable's 95% stratified-bootstrap interval
    (``reps`` resamples), and rliable's performance profiles (a tenth as many). Algorithms with
    fewer than two seeds on all their tasks are left out, and the figure says so."""
    plt = _pyplot()
    all_scores = normalized_scores(results)
    scores = {algo: matrix for algo, matrix in all_scores.items() if len(matrix) >= 2}
    left_out = sorted(all_scores.keys() - scores.keys())
    note = f"; left out (fewer than 2 seeds): {', '.join(left_out)}" if left_out else ""
    if not scores:
        figure, axes = plt.subplots(figsize=(6.4, 2.0))
        axes.axis("off")
        axes.text(0.5, 0.5, "aggregate needs at least 2 seeds per algorithm" + note, ha="center")
        figure.savefig(path, dpi=110)
        plt.close(figure)
        return
    from rliable import plot_utils

    taus = np.linspace(0.0, 1.0, 51)
    points, intervals, profiles, profile_cis = {}, {}, {}, {}
    for algorithm, matrix in scores.items():
        points[algorithm], intervals[algorithm] = iqm_with_interval(matrix, reps=reps)
        profiles[algorithm], profile_cis[algorithm] = performance_profile_with_interval(
            matrix, taus, reps=max(reps // 10, 100)
        )
    figure, (iqm_axes, profile_axes) = plt.subplots(1, 2, figsize=(11, 4.2))
    algorithms = sorted(scores)
    colors = {algorithm: algorithm_color(algorithm) for algorithm in algorithms}
    for row, algorithm in enumerate(algorithms):
        low, high = intervals[algorithm]
        iqm_axes.plot([low, high], [row, row], color=colors[algorithm], linewidth=6, alpha=0.5)
        iqm_axes.plot(points[algorithm], row, "k|", markersize=14)
    iqm_axes.set_yticks(range(len(algorithms)), algorithms)
    iqm_axes.set_xlabel("IQM of normalised final return (95% CI)")
    iqm_axes.grid(axis="x", alpha=0.3)
    plot_utils.plot_performance_profiles(
        profiles,
        taus,
        performance_profile_cis=profile_cis,
        ax=profile_axes,
        colors=colors,
        xlabel=r"normalised final return $\tau$",
    )
    profile_axes.legend(profile_axes.get_lines(), list(profiles), loc="lower left")
    figure.suptitle("all tasks; each task normalised between its lowest and highest run" + note)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
