"""How much a run slows down when another process keeps one core busy: the first-hour
experience of a user whose laptop is doing something else.

Each case is run the way a user runs it, in a fresh interpreter, once on an idle machine and
once while a second process spins on one core; both runs happen in this invocation, so the
idle run is the limit the busy run is compared with. A JSON line per case gives the two wall
times and ``busy_speed_ratio`` (idle seconds over busy seconds; 1.0 means no slowdown), against
the floor of 2/3.

Cases (each at its own defaults, which choose one torch thread):

* ``readme_quick_start``: the Python block of README.md's quick start (DQN on CartPole);
* ``mujoco_sac``: ``python -m examples.mujoco.mujoco_sac`` for 3,000 env steps on Hopper-v5;
* ``mujoco_ppo``: ``python -m examples.mujoco.mujoco_ppo`` for 20,480 env steps on Hopper-v5.

With torch's default threads (one per core) the same busy runs were up to 60 times slower than
idle ones (SAC on Hopper-v5: 1.3 env steps/s busy against 79 with one thread).

    python -m benchmark.busy_machine [--cases readme_quick_start,mujoco_sac] [--repeat 1]
"""

import argparse
import doctest
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmark.common import emit, one_core_busy

REPO = Path(__file__).resolve().parent.parent
FLOOR = 2 / 3
"""The least acceptable busy/idle speed ratio."""


@dataclass(frozen=True)
class Case:
    """A command a user runs, and the env steps it takes (for the record)."""

    name: str
    command: tuple[str, ...]
    env_steps: int


def readme_quick_start_script() -> str:
    """README.md's quick-start block as a plain Python program (its doctest examples in order)."""
    text = (REPO / "README.md").read_text()
    start = text.index("## Quick start")
    block = text[start : text.index("\n## ", start + 1)]
    examples = doctest.DocTestParser().get_examples(block)
    if not examples:
        raise RuntimeError("README.md's quick start has no Python examples")
    return "".join(example.source for example in examples)


def cases(log_dir: str) -> list[Case]:
    python = sys.executable
    common = ("--task", "Hopper-v5", "--seed", "0", "--epoch", "1", "--num-test-envs", "1")
    common += ("--logdir", log_dir, "--no-progress")
    sac_budget = ("--epoch-num-steps", "3000", "--start-timesteps", "1000")
    return [
        Case(
            "readme_quick_start",
            (python, "-c", readme_quick_start_script()),
            env_steps=0,  # trains until its stop criterion
        ),
        Case(
            "mujoco_sac",
            (python, "-m", "examples.mujoco.mujoco_sac", *common, *sac_budget),
            env_steps=3000,
        ),
        Case(
            "mujoco_ppo",
            (python, "-m", "examples.mujoco.mujoco_ppo", *common, "--epoch-num-steps", "20480"),
            env_steps=20480,
        ),
    ]


def run_seconds(case: Case) -> float:
    """Wall seconds of one run of ``case`` from the repository root; raises if it fails."""
    start = time.perf_counter()
    result = subprocess.run(case.command, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{case.name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return seconds


def busy_run_seconds(case: Case) -> float:
    """Wall seconds of one run of ``case`` while another process spins on one core."""
    with one_core_busy():
        return run_seconds(case)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="readme_quick_start,mujoco_sac,mujoco_ppo")
    parser.add_argument("--repeat", type=int, default=1, help="idle/busy pairs per case")
    args = parser.parse_args(argv)
    wanted = args.cases.split(",")
    with tempfile.TemporaryDirectory() as log_dir:
        known = {case.name: case for case in cases(log_dir)}
        unknown = sorted(set(wanted) - known.keys())
        if unknown:
            parser.error(f"unknown cases {unknown}; choose from {sorted(known)}")
        for name in wanted:
            case = known[name]
            idle, busy = [], []
            for _ in range(args.repeat):  # interleaved, so slow drifts hit both sides
                idle.append(run_seconds(case))
                busy.append(busy_run_seconds(case))
            idle_s, busy_s = statistics.median(idle), statistics.median(busy)
            ratio = idle_s / busy_s
            emit(
                {
                    "bench": "busy_machine",
                    "case": name,
                    "env_steps": case.env_steps,
                    "idle_s": idle_s,
                    "busy_s": busy_s,
                    "busy_speed_ratio": ratio,
                    "floor": FLOOR,
                    "meets_floor": ratio >= FLOOR,
                    "cores": os.cpu_count(),
                    "repeat": args.repeat,
                }
            )


if __name__ == "__main__":
    main()
