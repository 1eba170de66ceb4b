"""The published Tianshou MuJoCo benchmark, as reference numbers for our cells, and its metric.

Two files under ``benchmark/results/published/`` hold the numbers, each naming its source:
``mujoco_v3_tables.json`` (the published tables per algorithm and budget) and
``mujoco_v3_offpolicy_curves.json`` (the published SAC, TD3 and DDPG test-return curves of all
10 seeds up to 100,000 env steps, for comparisons at our short off-policy budget).

The published metric differs from our "best return": it is the highest point over training of
the **mean over seeds** of the test return (:func:`best_of_seed_mean`), where ours is the mean
over seeds of each seed's highest test return, which is never lower. The published runs were
on Gym's v3 tasks with sampled test actions; ours are on Gymnasium's v5 tasks with the mean
action. Their curves count env steps after the random warm-up, ours include it, so a published
curve is compared at ``our env steps - our warm-up`` (:func:`published_curve_at`).
"""

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

PUBLISHED_DIR = Path(__file__).resolve().parents[1] / "results" / "published"
TABLES_FILE = PUBLISHED_DIR / "mujoco_v3_tables.json"
CURVES_FILE = PUBLISHED_DIR / "mujoco_v3_offpolicy_curves.json"


@dataclass(frozen=True)
class PublishedValue:
    """A published figure: the metric's value, the spread over seeds where published, the
    budget it is for and where it was published."""

    value: float
    std: float | None
    env_steps: int
    source: str


def task_family(task: str) -> str:
    """The task without its version (``Hopper-v5``: ``Hopper``), to match published v3 tasks."""
    return task.rsplit("-v", 1)[0]


@cache
def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def published_tables(algorithm: str, task: str) -> list[PublishedValue]:
    """Every published table value of ``algorithm`` on ``task`` (any version), by budget."""
    budgets = _load(TABLES_FILE).get("tables", {}).get(algorithm, {})
    values = []
    for env_steps, table in sorted(budgets.items(), key=lambda item: int(item[0])):
        entry = table.get(task_family(task))
        if entry is not None:
            values.append(PublishedValue(entry[0], entry[1], int(env_steps), table["source"]))
    return values


def published_table_at(algorithm: str, task: str, env_steps: int) -> PublishedValue | None:
    """The published table value at the budget of ``env_steps`` (within 5%: our runs spend the
    budget in whole epochs), or None if none was published at that budget."""
    for value in published_tables(algorithm, task):
        if abs(value.env_steps - env_steps) <= 0.05 * value.env_steps:
            return value
    return None


def best_of_seed_mean(returns_by_seed: np.ndarray) -> float:
    """The published metric of runs tested at the same steps: the highest value over the steps
    of the mean over seeds (rows) of the test return."""
    return float(np.max(np.mean(returns_by_seed, axis=0)))


@dataclass(frozen=True)
class CurvePoint:
    """A published curve at a number of learning steps: the seed-mean there, its spread over
    seeds, and the published metric up to there."""

    learning_steps: int
    mean: float
    std: float
    best_of_seed_mean: float
    seeds: int
    source: str


def published_curve_at(algorithm: str, task: str, learning_steps: int) -> CurvePoint | None:
    """The published curve of ``algorithm`` on ``task`` at its last test at or before
    ``learning_steps`` env steps after the warm-up; None without a published curve.

    :param learning_steps: our run's env steps minus its random warm-up.
    """
    data = _load(CURVES_FILE)
    curve = data.get("curves", {}).get(f"{task_family(task)}-v3", {}).get(algorithm)
    if curve is None:
        return None
    steps = np.asarray(curve["env_step"])
    seeds = np.asarray(curve["seeds"], dtype=np.float64)  # steps x seeds
    kept = steps <= learning_steps
    if not kept.any():
        return None
    last = int(np.flatnonzero(kept)[-1])
    return CurvePoint(
        learning_steps=int(steps[last]),
        mean=float(seeds[last].mean()),
        std=float(seeds[last].std(ddof=1)),
        best_of_seed_mean=best_of_seed_mean(seeds[kept].T),
        seeds=seeds.shape[1],
        source=data["source"],
    )
