"""The campaign's report, from the ``result.json`` files under ``OUT/runs``: ``summary.json``,
``table.md`` and the figures (:mod:`benchmark.campaign.plots`).

Statistics are over seeds, per task and algorithm (:mod:`benchmark.campaign.statistics`), as
Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice" (2021)
recommend and implement in rliable: the interquartile mean (IQM) of the final returns, with a
95% percentile bootstrap confidence interval. With three seeds such an interval is wide, and
says so honestly; with one seed there is none, and the report says that instead.
"""

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.campaign.execute import FAILURE_FILE, RESULT_FILE, RESULT_KEYS
from benchmark.campaign.plots import plot_aggregate, plot_task_families
from benchmark.campaign.statistics import BOOTSTRAP_REPS, iqm_interval
from tianshou.evaluation.interval_estimates import DEFAULT_CONFIDENCE

DIRTY_SUFFIX = "+dirty"
"""Ends the recorded commit of a run made from a working tree with uncommitted changes."""

SUMMARY_FILE = "summary.json"
TABLE_FILE = "table.md"


def load_results(out: Path) -> list[dict[str, Any]]:
    """The finished runs' results under ``out/runs``, in task, algorithm, seed order."""
    results = []
    for path in out.glob(f"runs/*/*/seed*/{RESULT_FILE}"):
        try:
            result = json.loads(path.read_text())
        except json.JSONDecodeError:
            continue
        if all(key in result for key in RESULT_KEYS):
            results.append(result)
    return sorted(results, key=lambda r: (r["task"], r["algorithm"], r["seed"]))


def load_failures(out: Path) -> list[dict[str, Any]]:
    """The runs under ``out/runs`` whose last attempt failed (and that have not finished since):
    task, algorithm, seed and error."""
    failures = []
    for path in sorted(out.glob(f"runs/*/*/seed*/{FAILURE_FILE}")):
        if (path.parent / RESULT_FILE).exists():
            continue
        task, algorithm, seed_dir = path.parent.parts[-3:]
        error = json.loads(path.read_text()).get("error", "unknown error")
        failures.append(
            {"task": task, "algorithm": algorithm, "seed": int(seed_dir[4:]), "error": error}
        )
    return failures


def summarize_cell(results: Sequence[dict[str, Any]], reps: int = BOOTSTRAP_REPS) -> dict[str, Any]:
    """The statistics over seeds of one task and algorithm's runs (``reps`` bootstrap
    resamples)."""
    finals = [float(r["final_return"]) for r in results]
    bests = [float(r["best_return"]) for r in results]
    whole = [r["wall_s"] for r in results if has_whole_wall_time(r)]
    iqm, interval = iqm_interval(finals, reps)
    return {
        "task": results[0]["task"],
        "algorithm": results[0]["algorithm"],
        "seeds": [r["seed"] for r in results],
        "env_steps": sorted({int(r["env_steps"]) for r in results}),
        "final_return": _moments(finals) | {"iqm": iqm, "iqm_ci95": interval and list(interval)},
        "best_return": _moments(bests),
        "wall_s_mean": float(np.mean(whole)) if whole else None,
        "wall_s_runs": len(whole),
        "env_steps_per_s_mean": float(np.mean([r.get("env_steps_per_s", np.nan) for r in results])),
        "test_episodes": sorted({r.get("test_episodes") for r in results}, key=str),
        "resumed_seeds": [r["seed"] for r in results if r.get("resumed_from_env_step")],
        "dirty_seeds": [r["seed"] for r in results if str(r["commit"]).endswith(DIRTY_SUFFIX)],
        "commits": sorted({r["commit"] for r in results}),
        "versions": sorted({r["version"] for r in results}),
    }


def has_whole_wall_time(result: dict[str, Any]) -> bool:
    """Whether ``result["wall_s"]`` covers the whole run: a run never resumed, or one whose
    sessions were added up (``wall_s_sessions``; older resumed runs recorded their last session
    only)."""
    return "wall_s_sessions" in result or not result.get("resumed_from_env_step")


def _moments(values: Sequence[float]) -> dict[str, Any]:
    """Values, mean and sample standard deviation (None for one value)."""
    return {
        "values": list(values),
        "mean": float(np.mean(values)),
        "std": float(np.std(values, ddof=1)) if len(values) > 1 else None,
    }


def group_cells(results: Sequence[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Results by (task, algorithm)."""
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        cells[result["task"], result["algorithm"]].append(result)
    return dict(sorted(cells.items()))


def build_summary(
    results: Sequence[dict[str, Any]], failures: Sequence[dict], reps: int = BOOTSTRAP_REPS
) -> dict[str, Any]:
    """``summary.json``'s content: one entry per task and algorithm, and the failed runs."""
    return {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "statistics": {
            "over": "seeds",
            "final_return": "the last test's mean return (deterministic policy)",
            "std": "sample standard deviation (ddof=1)",
            "iqm_ci95": (
                f"rliable percentile bootstrap, {reps} resamples, "
                f"{DEFAULT_CONFIDENCE:.0%} confidence; null for fewer than 2 seeds"
            ),
        },
        "cells": [summarize_cell(cell, reps) for cell in group_cells(results).values()],
        "bootstrap_reps": reps,
        "failures": list(failures),
    }


def render_table(summary: dict[str, Any]) -> str:
    """``table.md``: one row per task and algorithm, then the failed runs and what the columns
    mean."""
    lines = [
        "| Task | Algorithm | Seeds | Env steps | Final return (mean ± std) "
        "| Final return IQM [95% CI] | Best return (mean ± std) | Wall time / run | Env steps/s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for cell in summary["cells"]:
        final, best = cell["final_return"], cell["best_return"]
        interval = final["iqm_ci95"]
        ci_text = (
            f"[{_number(interval[0])}, {_number(interval[1])}]"
            if interval
            else f"(no CI: {len(cell['seeds'])} seed)"
        )
        lines.append(
            f"| {cell['task']} | {cell['algorithm']} | {len(cell['seeds'])} "
            f"| {' / '.join(f'{steps:,}' for steps in cell['env_steps'])} "
            f"| {_mean_std(final)} | {_number(final['iqm'])} {ci_text} | {_mean_std(best)} "
            f"| {_wall_time(cell)} | {cell['env_steps_per_s_mean']:,.0f} |"
        )
    lines += _marked_runs(summary["cells"])
    if summary["failures"]:
        lines += ["", "Failed runs (their last attempt):", ""]
        lines += [
            f"- {f['task']} {f['algorithm']} seed{f['seed']}: {f['error']}"
            for f in summary["failures"]
        ]
    lines += [
        "",
        "Final return: the mean return of the last test (the deterministic policy, over the "
        "script's test episodes) of each seed; mean ± sample std and the interquartile mean "
        f"with its {DEFAULT_CONFIDENCE:.0%} bootstrap confidence interval (rliable, "
        f"{summary['bootstrap_reps']:,} resamples) are over seeds. Best return: the highest "
        "test return during training. Env steps include the off-policy scripts' random warm-up. "
        "Wall time: per whole run, all its sessions added up; * marks a mean that leaves out "
        "runs resumed before the runner recorded earlier sessions.",
    ]
    return "\n".join(lines) + "\n"


def _wall_time(cell: dict[str, Any]) -> str:
    if cell["wall_s_mean"] is None:
        return "n/a"
    partial = "*" if cell["wall_s_runs"] < len(cell["seeds"]) else ""
    return _duration(cell["wall_s_mean"]) + partial


def _marked_runs(cells: Sequence[dict[str, Any]]) -> list[str]:
    """Lines naming the runs that were resumed from a checkpoint or made from a modified
    working tree, so that a reader can weigh them."""
    lines = []
    for key, what in (
        ("resumed_seeds", "resumed from a checkpoint"),
        ("dirty_seeds", f"made from a working tree with uncommitted changes ({DIRTY_SUFFIX})"),
    ):
        marked = [
            f"{cell['task']} {cell['algorithm']} seed{'s' if len(cell[key]) > 1 else ''} "
            + ", ".join(map(str, cell[key]))
            for cell in cells
            if cell.get(key)
        ]
        if marked:
            lines += ["", f"Runs {what}: {'; '.join(marked)}."]
    return lines


def _number(value: float) -> str:
    return f"{value:,.1f}"


def _mean_std(moments: dict[str, Any]) -> str:
    if moments["std"] is None:
        return _number(moments["mean"])
    return f"{_number(moments['mean'])} ± {_number(moments['std'])}"


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def write_report(out: Path, reps: int = BOOTSTRAP_REPS) -> dict[str, Any]:
    """Write ``summary.json``, ``table.md`` and the figures for every finished run under
    ``out``, with ``reps`` bootstrap resamples for each interval; return the summary."""
    results = load_results(out)
    summary = build_summary(results, load_failures(out), reps)
    out.mkdir(parents=True, exist_ok=True)
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=1) + "\n")
    (out / TABLE_FILE).write_text(render_table(summary))
    cells = group_cells(results)
    for task in sorted({task for task, _ in cells}):
        by_algorithm = {algo: runs for (t, algo), runs in cells.items() if t == task}
        plot_task_families(task, by_algorithm, out, reps)
    plot_aggregate(results, out / "aggregate.png", reps)
    return summary


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m benchmark.campaign.report OUT``: rebuild the report of a campaign directory
    from the runs finished so far, e.g. while its campaign is still running or after it was
    stopped."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m benchmark.campaign.report")
    parser.add_argument("out", type=Path, help="the campaign directory (the runner's --out)")
    args = parser.parse_args(argv)
    if not (args.out / "runs").is_dir():
        parser.error(f"{args.out} holds no runs/ directory: is it a campaign's --out?")
    write_report(args.out)
    print(f"report of {len(load_results(args.out))} finished runs: {args.out / TABLE_FILE}")


if __name__ == "__main__":
    main()
