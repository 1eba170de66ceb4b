"""Run a MuJoCo benchmark campaign (algorithms x tasks x seeds) and report it.

Every run is the algorithm's ``examples/mujoco`` script with its published defaults; only the
task, the seed and the budget (``--env-steps``, spent in whole epochs of the script's length)
change. Runs go to ``OUT/runs/<task>/<algorithm>/seed<k>/`` (the TensorBoard log, ``result.json``
and ``config.json``); the report is ``OUT/summary.json``, ``OUT/table.md``, the learning curves
``OUT/<task>-off-policy.png`` and ``OUT/<task>-on-policy.png`` (one per budget family present) and
``OUT/aggregate.png``, built from every finished run under ``OUT``.

Rerunning a command skips its finished runs and continues unfinished ones from their last
checkpoint; Ctrl-C stops every run. ::

    python -m benchmark.run_benchmark --algorithms sac,td3 --tasks Hopper-v5,Walker2d-v5 \\
        --seeds 0,1,2 --env-steps 100000 --out log/campaign
    python -m benchmark.run_benchmark ... --launcher ray --ray-address HEAD_IP:6379
"""

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from tqdm import tqdm

from benchmark.campaign.execute import (
    RunOutcome,
    SpecMismatchError,
    checkpoint_path,
    read_result,
    record_failure,
)
from benchmark.campaign.launch_local import REPO_ROOT, LocalLauncher
from benchmark.campaign.launch_ray import RayLauncher
from benchmark.campaign.plan import (
    RunSpec,
    available_algorithms,
    overrides_for,
    parse_overrides,
    script_argv,
)
from benchmark.campaign.report import write_report


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmark.run_benchmark",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--algorithms",
        required=True,
        help=f"comma-separated, of: {','.join(available_algorithms())}",
    )
    parser.add_argument("--tasks", required=True, help="comma-separated, e.g. Hopper-v5,Ant-v5")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated integers")
    parser.add_argument(
        "--env-steps",
        type=int,
        required=True,
        help="env steps per run, the off-policy scripts' random warm-up included",
    )
    parser.add_argument("--out", type=Path, required=True, help="the campaign directory")
    parser.add_argument("--launcher", choices=["local", "ray"], default="local")
    parser.add_argument(
        "--ray-address", default=None, help="the Ray cluster to join (default: a local Ray)"
    )
    parser.add_argument(
        "--max-concurrent",
        type=int,
        default=None,
        help="runs at once (default: local, one per core; ray, as the cluster's CPUs allow)",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="[ALGORITHM:]KEY=VALUE",
        help="override a script option for every run (or one algorithm's runs); repeatable, "
        "e.g. --config num_test_envs=5 --config sac:start_timesteps=5000",
    )
    return parser


def plan_campaign(args: argparse.Namespace) -> list[RunSpec]:
    """The campaign's runs, checked before anything starts: known algorithms and tasks, and
    script options (overrides, budget) each algorithm's script accepts.

    :raises ValueError: naming what is wrong.
    """
    algorithms = _split(args.algorithms, "--algorithms")
    tasks = _split(args.tasks, "--tasks")
    seed_texts = _split(args.seeds, "--seeds")
    try:
        seeds = [int(seed) for seed in seed_texts]
    except ValueError:
        raise ValueError(f"--seeds must be comma-separated integers, got {args.seeds!r}") from None
    if args.env_steps <= 0:
        raise ValueError(f"--env-steps must be positive, got {args.env_steps}")
    unknown = sorted(set(algorithms) - set(available_algorithms()))
    if unknown:
        raise ValueError(f"unknown algorithms {unknown}; known: {available_algorithms()}")
    _check_tasks(tasks)
    overrides = parse_overrides(args.config)
    unused = [name for name in overrides if name is not None and name not in algorithms]
    if unused:
        raise ValueError(f"--config names algorithms not in the campaign: {sorted(unused)}")
    specs = [
        RunSpec(task, algorithm, seed, args.env_steps, overrides_for(algorithm, overrides))
        for task in tasks
        for algorithm in algorithms
        for seed in seeds
    ]
    for algorithm in algorithms:  # the scripts' parsers check the options
        first = next(spec for spec in specs if spec.algorithm == algorithm)
        script_argv(first, first.run_dir(args.out))
    return specs


def _split(text: str, option: str) -> list[str]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise ValueError(f"{option} is empty")
    if len(set(items)) != len(items):
        raise ValueError(f"{option} repeats an item: {text!r}")
    return items


def _check_tasks(tasks: Sequence[str]) -> None:
    import gymnasium as gym

    for task in tasks:
        try:
            gym.spec(task)
        except gym.error.Error as exc:
            raise ValueError(f"--tasks: {task!r} is not a gymnasium task ({exc})") from None


def source_commit() -> str:
    """The repository's ``git`` commit, with ``+dirty`` if tracked files have changed since;
    ``unknown`` outside a repository."""
    try:
        commit = _git("rev-parse", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def progress_line(outcome: RunOutcome) -> str:
    """The line printed when a run ends: what it scored, how long it took, how fast it ran."""
    if outcome.result is None:
        return f"{outcome.spec.label}: FAILED: {outcome.error}"
    result = outcome.result
    return (
        f"{outcome.spec.label}: final return {result['final_return']:.1f} "
        f"(best {result['best_return']:.1f}), {result['wall_s']:.0f} s, "
        f"{result['env_steps_per_s']:.0f} env steps/s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the campaign; return 0 if every run finished, 1 if some failed, 130 if stopped."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.ray_address is not None and args.launcher != "ray":
        parser.error("--ray-address needs --launcher ray")
    try:
        specs = plan_campaign(args)
        finished = [spec for spec in specs if read_result(spec.run_dir(args.out), spec)]
    except (ValueError, SpecMismatchError) as exc:
        parser.error(str(exc))
    todo = [spec for spec in specs if spec not in finished]
    resuming = sum(checkpoint_path(spec, spec.run_dir(args.out)).exists() for spec in todo)
    print(
        f"{len(specs)} runs: {len(finished)} finished, {len(todo)} to run "
        f"({resuming} from a checkpoint), output in {args.out}",
        flush=True,
    )
    commit = source_commit()
    if args.launcher == "ray":
        launcher: LocalLauncher | RayLauncher = RayLauncher(
            args.out, commit, args.ray_address, args.max_concurrent
        )
    else:
        launcher = LocalLauncher(args.out, commit, args.max_concurrent or _cores())
    failed = 0
    with tqdm(total=len(specs), initial=len(finished), desc="campaign", unit="run") as bar:

        def on_done(outcome: RunOutcome) -> None:
            nonlocal failed
            if outcome.error is not None:
                failed += 1
                record_failure(outcome.spec.run_dir(args.out), outcome.error)
            bar.write(progress_line(outcome))
            bar.update(1)

        # Ctrl-C and SIGTERM stop the campaign, even where the shell started it ignoring SIGINT
        # (a background job of a script)
        previous = {
            signum: signal.signal(signum, _interrupt) for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            launcher.run(todo, on_done)
        except KeyboardInterrupt:
            bar.write("stopped: every run was ended; rerun the same command to resume")
            return 130
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    write_report(args.out)
    print(f"report: {args.out / 'table.md'}" + (f"; {failed} runs failed" if failed else ""))
    return 1 if failed else 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """Raise ``KeyboardInterrupt``, which stops every run (see :meth:`LocalLauncher.run`)."""
    raise KeyboardInterrupt


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    sys.exit(main())
