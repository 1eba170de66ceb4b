"""Fake finished runs for the report tests: ``result.json`` files as a campaign writes them,
with returns chosen by the test."""

import json
from pathlib import Path
from typing import Any

from benchmark.campaign.execute import FAILURE_FILE, RESULT_FILE
from benchmark.campaign.plan import RunSpec


def write_fake_result(
    out: Path,
    task: str,
    algorithm: str,
    seed: int,
    test_returns: list[float],
    env_steps: int = 3000,
) -> dict[str, Any]:
    """Write a finished run whose tests (evenly spaced from env step 0 to the end) returned
    ``test_returns``; return its result."""
    spec = RunSpec(task, algorithm, seed, env_steps)
    steps = [round(i * env_steps / (len(test_returns) - 1)) for i in range(len(test_returns))]
    result = {
        "task": task,
        "algorithm": algorithm,
        "seed": seed,
        "env_steps": env_steps,
        "test_env_steps": steps,
        "test_returns": test_returns,
        "final_return": test_returns[-1],
        "best_return": max(test_returns),
        "wall_s": 60.0 + seed,
        "env_steps_per_s": env_steps / (60.0 + seed),
        "test_episodes": 10,
        "version": "2.0.1",
        "commit": "0123abc",
        "config": {"task": task, "seed": seed},
        "spec": spec.to_json(),
    }
    run_dir = spec.run_dir(out)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RESULT_FILE).write_text(json.dumps(result))
    return result


def write_fake_failure(out: Path, task: str, algorithm: str, seed: int, error: str) -> None:
    """Write a run whose last attempt failed with ``error``."""
    run_dir = RunSpec(task, algorithm, seed, 3000).run_dir(out)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / FAILURE_FILE).write_text(json.dumps({"error": error}))
