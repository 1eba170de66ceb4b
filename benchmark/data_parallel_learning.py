"""Does a data-parallel run learn as well as one process, at equal total env steps?

PPO on Hopper-v5 with ``examples/mujoco/mujoco_ppo.py``'s benchmark settings (64x64, 2,048 env
steps per collection, 10 passes in minibatches of 64, observation normalisation, return
scaling, learning-rate decay), one torch thread per process, in three configurations:

* ``1x16``: one process, 16 envs (the single-process baseline of issue 42);
* ``2x8``: a torchrun job of 2 ranks x 8 envs with the same per-process settings, so that each
  update learns from both ranks' collections (4,096 env steps, minibatches of 2 x 64);
* ``2x8-half``: 2 ranks x 8 envs, each collecting 1,024 env steps and taking minibatches of
  32, so that every update sees exactly what ``1x16`` sees (2,048 env steps, minibatches of 64
  in all): the same learning problem, split over two processes.

Every run trains for ``--epochs`` epochs of ``--epoch-env-steps`` (102,400) env steps in all
ranks together (a multiple of both 2,048 and 4,096, so every configuration tests at the same
env steps) and tests 10 episodes after each epoch. A run writes
``<out>/runs/<config>-seed<k>.json`` (the script's result file, plus the test return after
every epoch) and is skipped if that file exists, so the campaign resumes where it was stopped.
``--summary`` prints one JSON line per configuration: final and best test returns over seeds
(mean, sample std, and the interquartile mean with its 95% bootstrap interval).

    nohup python -m benchmark.data_parallel_learning --seeds 0 1 2 > dp_learning.log &
    python -m benchmark.data_parallel_learning --summary
"""

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from benchmark.common import emit
from tianshou.evaluation.interval_estimates import iqm_with_interval

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO_ROOT / "benchmark" / "results" / "data-parallel-ppo-hopper"
TASK = "Hopper-v5"
EPOCH_ENV_STEPS = 102_400
CONFIGS: dict[str, tuple[int, list[str]]] = {
    "1x16": (1, ["--num-training-envs", "16"]),
    "2x8": (2, ["--num-training-envs", "8"]),
    "2x8-half": (
        2,
        [
            "--num-training-envs",
            "8",
            "--collection-step-num-env-steps",
            "1024",
            "--batch-size",
            "32",
        ],
    ),
}
"""Configuration name: (ranks, the script's options beyond the common ones)."""


def _command(
    config: str, seed: int, epochs: int, epoch_env_steps: int, log_base: Path
) -> list[str]:
    ranks, options = CONFIGS[config]
    script = ["-m", "examples.mujoco.mujoco_ppo", "--task", TASK, "--seed", str(seed)]
    common = [
        "--epoch",
        str(epochs),
        "--epoch-num-steps",
        str(epoch_env_steps),
        "--device",
        "cpu",
        "--torch-threads",
        "1",
        "--persistence-base-dir",
        str(log_base),
    ]
    if ranks == 1:
        return [sys.executable, *script, *common, *options]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks)]
    return [*launcher, *script, *common, *options, "--distributed"]


def _test_curve(run_log_dir: Path) -> list[tuple[int, float]]:
    """(env step, mean test return) of every test the run logged."""
    from tensorboard.backend.event_processing import event_accumulator

    accumulator = event_accumulator.EventAccumulator(
        str(run_log_dir), size_guidance={event_accumulator.SCALARS: 0}
    )
    accumulator.Reload()
    return [(int(e.step), float(e.value)) for e in accumulator.Scalars("test/returns_stat/mean")]


def run_one(config: str, seed: int, epochs: int, epoch_env_steps: int, out: Path) -> Path:
    """Train one configuration and seed unless its record exists; the record's path."""
    record_path = out / "runs" / f"{config}-seed{seed}.json"
    if record_path.exists():
        return record_path
    log_base = out / "log" / config
    command = _command(config, seed, epochs, epoch_env_steps, log_base)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-4000:]}")
    run_log_dir = log_base / TASK / "ppo" / str(seed)
    result = json.loads((run_log_dir / "result.json").read_text())
    record = {
        "config": config,
        "seed": seed,
        "ranks": CONFIGS[config][0],
        "command": " ".join(command[1:]),
        "env_steps": result["env_steps"],
        "update_steps": result["update_steps"],
        "wall_time_s": result["wall_time_s"],
        "final_test_return": result["final_test_return"],
        "best_test_return": result["best_test_return"],
        "test_curve": _test_curve(run_log_dir),
    }
    record_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = record_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n")
    tmp.replace(record_path)
    return record_path


def summarise(out: Path) -> list[dict[str, object]]:
    """One summary per configuration that has finished runs."""
    summaries = []
    for config in CONFIGS:
        paths = sorted((out / "runs").glob(f"{config}-seed*.json"))
        records = [json.loads(path.read_text()) for path in paths]
        if not records:
            continue
        final = np.array([r["final_test_return"] for r in records])
        best = np.array([r["best_test_return"] for r in records])
        iqm, interval = iqm_with_interval(final)
        summaries.append(
            {
                "bench": "data_parallel_ppo_learning",
                "config": config,
                "seeds": [r["seed"] for r in records],
                "env_steps": [r["env_steps"] for r in records],
                "final_return_mean": float(final.mean()),
                "final_return_std": float(final.std(ddof=1)) if len(final) > 1 else 0.0,
                "final_return_iqm": float(iqm),
                "final_return_iqm_95ci": [float(bound) for bound in interval],
                "final_returns": final.tolist(),
                "best_return_mean": float(best.mean()),
                "wall_time_s_mean": float(np.mean([r["wall_time_s"] for r in records])),
                "torch_threads": 1,
            }
        )
    return summaries


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--epoch-env-steps", type=int, default=EPOCH_ENV_STEPS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--summary", action="store_true", help="only summarise finished runs")
    args = parser.parse_args(argv)
    if not args.summary:
        for seed in args.seeds:
            for config in args.configs:
                record = run_one(config, seed, args.epochs, args.epoch_env_steps, args.out)
                print(f"done: {record}", flush=True)
    for summary in summarise(args.out):
        emit(summary)


if __name__ == "__main__":
    main()
