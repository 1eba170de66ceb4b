"""One run in the current process: the script's ``main(argv)`` on the run's command line, then
the run's ``result.json`` and ``config.json``.

The per-epoch test returns are read back from the TensorBoard log the script's trainer wrote
(``test/returns_stat/mean`` at each test's env step), so nothing trains or evaluates twice.

A run directory holds, besides the script's log (:data:`~benchmark.campaign.plan.SCRIPT_LOG_DIR`):

* ``result.json``: written last, so its presence marks a finished run;
* ``config.json``: the script's parsed options, as the script saw them;
* ``run.log``: the script's output (the local launcher's worker writes it);
* ``failure.json``: the error of the last attempt, if it failed (the launchers write it).
"""

import itertools
import json
import os
import platform
import shlex
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmark.campaign.plan import (
    SCRIPT_LOG_DIR,
    RunSpec,
    epoch_split,
    load_script,
    script_args,
    script_argv,
    script_log_path,
)
from tianshou.scripts.persistence import replay_buffer_path

RESULT_FILE = "result.json"
CONFIG_FILE = "config.json"
LOG_FILE = "run.log"
FAILURE_FILE = "failure.json"

RESULT_KEYS = (
    "task",
    "algorithm",
    "seed",
    "env_steps",
    "test_env_steps",
    "test_returns",
    "final_return",
    "best_return",
    "wall_s",
    "version",
    "commit",
    "config",
    "spec",
)
"""Keys every finished run's ``result.json`` has."""

TEST_RETURN_TAG = "test/returns_stat/mean"
TEST_RETURN_STD_TAG = "test/returns_stat/std"
CHECKPOINT_ENV_STEP_TAG = "save/env_step"
SESSION_TIME_TAG = "info/timing/total_time"
"""Seconds since the trainer's start in this session, logged at every epoch's end."""


class SpecMismatchError(ValueError):
    """A run directory holds a finished run of other settings than the campaign asks for."""


@dataclass(frozen=True)
class RunOutcome:
    """What a launcher reports of one run: its result, or the error that ended it."""

    spec: RunSpec
    result: dict[str, Any] | None
    error: str | None = None


def read_scalar(log_path: Path, tag: str) -> tuple[list[int], list[float]]:
    """The steps and values of TensorBoard scalar ``tag`` in ``log_path``'s event files, by step.

    A resumed run writes a new event file (their names start with the time they were opened);
    where two events share a step, the later one counts.
    """
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    by_step: dict[int, float] = {}
    for path in sorted(log_path.glob("events.out.tfevents.*")):
        for event in LegacyEventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.tag == tag:
                    by_step[int(event.step)] = float(value.simple_value)
    steps = sorted(by_step)
    return steps, [by_step[step] for step in steps]


def earlier_sessions_wall_s(log_path: Path) -> list[float]:
    """The wall time of each session of a resumed run but the last, from the trainer's logged
    ``info/timing/total_time`` (seconds since the session's start, logged per epoch).

    Every session writes its own event file; a session's time counts up to its last epoch
    before the next session's first one (the epoch it resumed from), so epochs repeated after a
    resume are counted once. A run that was never resumed has one file and no earlier session.
    """
    from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader

    sessions: list[dict[int, float]] = []
    for path in sorted(log_path.glob("events.out.tfevents.*")):
        times = {
            int(event.step): float(value.simple_value)
            for event in LegacyEventFileLoader(str(path)).Load()
            for value in event.summary.value
            if value.tag == SESSION_TIME_TAG
        }
        if times:
            sessions.append(times)
    walls = []
    for session, following in itertools.pairwise(sessions):
        kept = [step for step in session if step < min(following)]
        walls.append(session[max(kept)] if kept else 0.0)
    return walls


def checkpoint_path(spec: RunSpec, run_dir: Path) -> Path:
    """The policy file of the run's last checkpoint (written by the script's
    ``--save-checkpoints``)."""
    load_script(spec.algorithm)
    from tianshou.scripts.persistence import CHECKPOINT_DIR, POLICY_FILE

    return script_log_path(spec, run_dir) / CHECKPOINT_DIR / POLICY_FILE


def read_result(run_dir: Path, spec: RunSpec) -> dict[str, Any] | None:
    """The finished run's result, or None if ``run_dir`` holds no complete ``result.json``.

    :raises SpecMismatchError: if the result is of other settings (budget, overrides) than
        ``spec``; mixing them into one table would be wrong, so the user must choose.
    """
    path = run_dir / RESULT_FILE
    try:
        result = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if not all(key in result for key in RESULT_KEYS):
        return None
    if RunSpec.from_json(result["spec"]) != spec:
        raise SpecMismatchError(
            f"{path} is a finished run of {result['spec']}, not of {spec.to_json()}; "
            "use another --out directory or remove that run"
        )
    return result


def execute_run(spec: RunSpec, run_dir: Path, commit: str) -> dict[str, Any]:
    """Train ``spec`` in this process and write its ``config.json`` and ``result.json``.

    A run directory with a checkpoint continues from it (the script's ``--resume-path`` and
    ``--resume-from-log``); otherwise any partial log is removed and the run starts afresh.
    An off-policy run's checkpoint holds its replay buffer, so the resumed run goes on with the
    transitions it had collected and skips the uniformly random warm-up; only a checkpoint
    without the buffer (written before checkpoints kept it) collects the warm-up again. The
    result's ``wall_s`` is the run's whole wall time, its sessions' times (``wall_s_sessions``,
    the earlier ones read from the log) added up; ``env_steps_per_s`` is of the last session
    (``resumed_from_env_step`` says where it started).

    :param commit: the source version to record (the driver's ``git`` commit; a Ray worker
        may have no repository).
    :return: the result, as written to ``result.json``.
    """
    module = load_script(spec.algorithm)
    argv = script_argv(spec, run_dir)
    checkpoint = checkpoint_path(spec, run_dir)
    # the log notes a checkpoint's counters after the checkpoint is written: one without
    # them (the run was stopped in between) cannot be resumed
    saved_steps, _ = read_scalar(script_log_path(spec, run_dir), CHECKPOINT_ENV_STEP_TAG)
    resumed_from = saved_steps[-1] if saved_steps and checkpoint.exists() else None
    if resumed_from is not None:
        argv += ["--resume-path", str(checkpoint), "--resume-from-log"]
    else:
        shutil.rmtree(run_dir / SCRIPT_LOG_DIR, ignore_errors=True)
    args = script_args(spec.algorithm, argv)
    warmup = epoch_split(args, spec.env_steps).warmup_env_steps
    # the warm-up's env steps are collected in this session unless a saved buffer replaces them
    warmup_again = resumed_from is None or not os.path.exists(replay_buffer_path(str(checkpoint)))
    session_warmup = warmup if warmup_again else 0
    start = time.perf_counter()
    info = module.main(argv)
    wall_s = time.perf_counter() - start

    steps, returns = read_scalar(script_log_path(spec, run_dir), TEST_RETURN_TAG)
    _, stds = read_scalar(script_log_path(spec, run_dir), TEST_RETURN_STD_TAG)
    if not returns:
        raise RuntimeError(f"{spec.label}: the script logged no test returns")
    trainer_steps = int(info.train_step)
    sessions_wall_s = [*earlier_sessions_wall_s(script_log_path(spec, run_dir)), wall_s]
    config = _relative_to(vars(args), run_dir)
    result = {
        "task": spec.task,
        "algorithm": spec.algorithm,
        "seed": spec.seed,
        "env_steps": warmup + trainer_steps,
        "requested_env_steps": spec.env_steps,
        "warmup_env_steps": warmup,
        "test_env_steps": [warmup + step for step in steps],
        "test_returns": returns,
        "test_return_stds": stds,
        "test_episodes": args.num_test_envs,
        "final_return": returns[-1],
        "best_return": max(returns),
        "wall_s": sum(sessions_wall_s),
        "wall_s_sessions": sessions_wall_s,
        "env_steps_per_s": (session_warmup + trainer_steps - (resumed_from or 0)) / wall_s,
        "resumed_from_env_step": None if resumed_from is None else warmup + resumed_from,
        "version": _tianshou_version(),
        "commit": commit,
        "command": shlex.join(
            [f"examples/mujoco/mujoco_{spec.algorithm}.py", *_relative_to(argv, run_dir)]
        ),
        "config": config,
        "spec": spec.to_json(),
        "platform": _platform(),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _write_json(run_dir / CONFIG_FILE, config)
    _write_json(run_dir / RESULT_FILE, result)
    return result


def _relative_to(value: Any, run_dir: Path) -> Any:
    """``value`` with paths inside ``run_dir`` written relative to it (a Ray run's directory is a
    temporary one on the worker)."""
    if isinstance(value, dict):
        return {key: _relative_to(item, run_dir) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_relative_to(item, run_dir) for item in value]
    if isinstance(value, str) and value.startswith(str(run_dir)):
        return os.path.relpath(value, run_dir)
    return value


def record_failure(run_dir: Path, error: str) -> None:
    """Note in ``run_dir`` that the run's last attempt failed with ``error`` (the report lists
    it until the run finishes)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    _write_json(run_dir / FAILURE_FILE, {"error": error})


def clear_failure(run_dir: Path) -> None:
    """Forget a failed attempt of the run in ``run_dir`` (it is being run again)."""
    (run_dir / FAILURE_FILE).unlink(missing_ok=True)


def _write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON through a temporary file, so that a reader never sees half of it."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(temporary, path)


def _tianshou_version() -> str:
    import tianshou

    return str(tianshou.__version__)


def _platform() -> dict[str, Any]:
    import gymnasium
    import mujoco
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "gymnasium": gymnasium.__version__,
        "mujoco": mujoco.__version__,
        "system": platform.platform(),
        "cpus": os.cpu_count(),
    }
