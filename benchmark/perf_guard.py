"""The throughput gate: library speed against its limit, each as a ratio measured in one run.

Every metric times the library and a bare implementation of the same work in the same process,
the two sides taking turns (so a load that comes and goes hits both), and reports
``library speed / bare speed``; no absolute time is ever compared, so the gate holds on a slower
or busier machine. A metric is the median of :data:`REPEATS` such ratios; one that falls below
its floor in ``benchmark/floors.json`` is measured once more before it counts as failed. The
gate prints a table (metric, figure, floor, how far below) and exits with 1 if a metric stays
below its floor.

    python -m benchmark.perf_guard                  # the gate (make perf-guard)
    python -m benchmark.perf_guard --only ppo_update sac_update
    python -m benchmark.perf_guard --calibrate 5    # measure 5 times, write the floors

A floor is the median of the calibration runs minus a margin derived from their spread:
:func:`floor_of` takes three times the median absolute deviation (scaled to a standard deviation)
or 10% of the median, whichever is larger, so that a floor sits below the noise of a busy
2-core machine and above a real slowdown of a fifth.
"""

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmark.common import Case, measure
from tianshou.utils.torch_utils import torch_threads

FLOORS_FILE = Path(__file__).resolve().parent / "floors.json"
REPEATS = 3
MIN_MARGIN = 0.10
"""The least margin below the calibrated median, as a fraction of it."""
MAD_TO_STD = 1.4826


@dataclass(frozen=True)
class Metric:
    """A library-to-limit ratio: ``measure`` returns one ratio (higher is faster)."""

    name: str
    description: str
    measure: Callable[[], float]


def _case_ratio(case: Case, rounds: int, min_time: float, clock: str, repeat: int) -> float:
    """Bare / library seconds per call of ``case``, the two sides taking turns
    (:func:`benchmark.common.measure`)."""
    ratio = measure(case, rounds=rounds, min_time=min_time, clock=clock, repeat=repeat)["ratio"]
    assert isinstance(ratio, float)
    return ratio


def _data_ratio(name: str, library: Callable[[], object], bare: Callable[[], object]) -> float:
    """Bare / library seconds per call over 4 alternating windows of 0.25 s (wall clock)."""
    return _case_ratio(Case(name, "", library, bare, None), 4, 0.25, "wall", repeat=1)


def collect_ratio(env_num: int) -> float:
    """Collector steps/s with a random policy on Hopper-v5 against the bare env loop."""
    from benchmark import collect

    factories = collect.case_factories("Hopper-v5", with_envpool=False)
    cases, closers = {}, []
    try:
        for name in (f"collector_random_dummy_{env_num}", f"bare_loop_{env_num}"):
            cases[name], close = factories[name]()
            closers.append(close)
        best = collect.measure(cases, window=0.25, rounds=4)
    finally:
        for close in closers:
            close()
    return best[f"collector_random_dummy_{env_num}"] / best[f"bare_loop_{env_num}"]


def ppo_update_ratio() -> float:
    """PPO's update on Hopper shapes against the bare PyTorch PPO update."""
    from benchmark import update_rate_ppo

    return float(update_rate_ppo.measure(rounds=2, min_time=0.2, clock="cpu")["ratio"])


def sac_update_ratio() -> float:
    """SAC's update on Hopper shapes against the bare PyTorch SAC update."""
    from benchmark.train import sac_update_case

    return _case_ratio(sac_update_case(), rounds=3, min_time=0.2, clock="cpu", repeat=2)


def dqn_training_ratio() -> float:
    """DQN's whole training loop at the small CartPole configuration (collect, buffer, update)
    against a bare loop doing the same work."""
    from benchmark import train_small

    return float(train_small.measure("dqn", rounds=2, env_steps=1000, clock="cpu")["ratio"])


def batch_build_ratio() -> float:
    """Building a nested ``Batch`` of 256 rows against converting the same dict of arrays."""
    from benchmark.data import dict_map, nested_rows
    from tianshou.data import Batch

    rows = nested_rows(256)
    return _data_ratio("batch_build", lambda: Batch(**rows), lambda: dict_map(np.asarray, rows))


def buffer_add_ratio() -> float:
    """An 8-env ``VectorReplayBuffer.add`` against writing the same values into numpy arrays."""
    from benchmark.data import vector_add_sides

    return _data_ratio("buffer_add", *vector_add_sides())


def buffer_sample_ratio() -> float:
    """``VectorReplayBuffer.sample(256)`` against indexing the same arrays directly."""
    from benchmark.data import sample_sides

    return _data_ratio("buffer_sample", *sample_sides())


METRICS: tuple[Metric, ...] = (
    Metric("collect_hopper_1env", "collector, 1 Hopper env / bare loop", lambda: collect_ratio(1)),
    Metric("collect_hopper_8env", "collector, 8 Hopper envs / bare loop", lambda: collect_ratio(8)),
    Metric("ppo_update", "PPO update / bare PyTorch update", ppo_update_ratio),
    Metric("sac_update", "SAC update / bare PyTorch update", sac_update_ratio),
    Metric("dqn_small_training", "DQN training loop / bare loop (CartPole)", dqn_training_ratio),
    Metric("batch_build", "Batch of nested arrays / dict of arrays", batch_build_ratio),
    Metric("buffer_add", "vector buffer add / numpy writes", buffer_add_ratio),
    Metric("buffer_sample", "vector buffer sample / numpy indexing", buffer_sample_ratio),
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One metric's outcome."""

    metric: Metric
    figure: float
    floor: float | None
    remeasured: bool

    @property
    def ok(self) -> bool:
        return self.floor is None or self.figure >= self.floor


def measure_median(metric: Metric, repeats: int = REPEATS) -> float:
    return statistics.median(metric.measure() for _ in range(repeats))


def floor_of(values: Sequence[float]) -> float:
    """The floor of a metric from its calibration figures (see the module docstring)."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return median - max(3 * MAD_TO_STD * mad, MIN_MARGIN * median)


def load_floors(path: Path = FLOORS_FILE) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def run_gate(metrics: Sequence[Metric], floors: dict[str, Any]) -> list[Row]:
    """Measure each metric, once more if it falls below its floor."""
    rows = []
    for metric in metrics:
        floor = floors.get(metric.name, {}).get("floor")
        figure = measure_median(metric)
        remeasured = floor is not None and figure < floor
        if remeasured:
            figure = measure_median(metric)
        rows.append(Row(metric, figure, floor, remeasured))
    return rows


def format_table(rows: Sequence[Row]) -> str:
    lines = [f"{'metric':<22} {'figure':>7} {'floor':>7} {'below by':>9}  what"]
    for row in rows:
        floor = "-" if row.floor is None else f"{row.floor:.3f}"
        below = "" if row.ok or row.floor is None else f"{(row.floor - row.figure) / row.floor:.1%}"
        again = " (measured twice)" if row.remeasured else ""
        lines.append(
            f"{row.metric.name:<22} {row.figure:>7.3f} {floor:>7} {below:>9}  "
            f"{row.metric.description}{again}"
        )
    return "\n".join(lines)


def calibrate(metrics: Sequence[Metric], runs: int, path: Path = FLOORS_FILE) -> dict[str, Any]:
    """Measure every metric ``runs`` times and write their floors (keeping other metrics')."""
    floors = load_floors(path)
    for metric in metrics:
        values = [measure_median(metric) for _ in range(runs)]
        floors[metric.name] = {
            "floor": round(floor_of(values), 3),
            "calibration": {
                "runs": runs,
                "repeats_per_run": REPEATS,
                "median": round(statistics.median(values), 3),
                "min": round(min(values), 3),
                "max": round(max(values), 3),
                "figures": [round(v, 3) for v in values],
                "date": time.strftime("%Y-%m-%d"),
            },
        }
        figures = [round(v, 3) for v in values]
        print(f"{metric.name}: {figures} -> floor {floors[metric.name]['floor']}")
    path.write_text(json.dumps(floors, indent=1, sort_keys=True) + "\n")
    return floors


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.perf_guard", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--only", nargs="+", metavar="METRIC", help="measure these metrics only")
    parser.add_argument("--calibrate", type=int, metavar="RUNS", help="write floors from RUNS runs")
    args = parser.parse_args(argv)
    by_name = {metric.name: metric for metric in METRICS}
    unknown = sorted(set(args.only or ()) - by_name.keys())
    if unknown:
        parser.error(f"unknown metrics {unknown}; known: {', '.join(by_name)}")
    metrics = [by_name[name] for name in args.only] if args.only else list(METRICS)
    warnings.filterwarnings("ignore", category=UserWarning)  # the gate's own process only
    with torch_threads(1):
        if args.calibrate:
            calibrate(metrics, args.calibrate)
            return 0
        started = time.perf_counter()
        rows = run_gate(metrics, load_floors())
    print(format_table(rows))
    failed = [row.metric.name for row in rows if not row.ok]
    print(
        f"perf-guard: {len(rows) - len(failed)} of {len(rows)} metrics at or above their floors "
        f"in {time.perf_counter() - started:.0f} s"
        + (f"; BELOW: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
