"""Running a campaign's runs on this machine: at most ``max_concurrent`` at a time, each in its
own worker process (:mod:`benchmark.campaign.worker`).

A thread pool waits on the worker processes; each worker leads its own process group, so that
stopping the campaign (Ctrl-C in the driver) kills every worker together with whatever it
started (vector-env subprocesses), and a terminal's Ctrl-C reaches only the driver, which then
stops them all.
"""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from benchmark.campaign.execute import (
    FAILURE_FILE,
    LOG_FILE,
    RESULT_FILE,
    RunOutcome,
    clear_failure,
)
from benchmark.campaign.plan import RunSpec

REPO_ROOT = Path(__file__).resolve().parents[2]
STOP_GRACE_S = 10.0
"""How long a stopped worker may take to exit before it is killed outright."""


class LocalLauncher:
    """Runs runs in worker processes on this machine.

    :param out: the campaign's output directory (runs write under ``out/runs``).
    :param commit: the source version each result records.
    :param max_concurrent: how many runs at once (one core each).
    """

    def __init__(self, out: Path, commit: str, max_concurrent: int) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
        self.out = out
        self.commit = commit
        self.max_concurrent = max_concurrent
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[bytes]] = set()
        self._stopping = False

    def run(self, specs: Sequence[RunSpec], on_done: Callable[[RunOutcome], None]) -> None:
        """Run ``specs``, calling ``on_done`` (in this thread) as each ends. Any exception here,
        a ``KeyboardInterrupt`` included, first stops every run, then propagates."""
        with ThreadPoolExecutor(self.max_concurrent, thread_name_prefix="run") as pool:
            futures = [pool.submit(self._run_one, spec) for spec in specs]
            try:
                for future in as_completed(futures):
                    on_done(future.result())
            except BaseException:
                self._stop_all()
                pool.shutdown(cancel_futures=True)
                raise

    def _run_one(self, spec: RunSpec) -> RunOutcome:
        run_dir = spec.run_dir(self.out)
        run_dir.mkdir(parents=True, exist_ok=True)
        clear_failure(run_dir)
        command = [sys.executable, "-m", "benchmark.campaign.worker"]
        command += [json.dumps(spec.to_json()), str(run_dir.resolve()), self.commit]
        with open(run_dir / LOG_FILE, "ab") as log, self._lock:
            if self._stopping:
                return RunOutcome(spec, None, "not started: the campaign was stopped")
            process = subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                env=_worker_env(),
                start_new_session=True,
            )
            self._running.add(process)
        code = process.wait()
        with self._lock:
            self._running.discard(process)
        if code != 0:
            return RunOutcome(spec, None, _failure_message(run_dir, code))
        return RunOutcome(spec, json.loads((run_dir / RESULT_FILE).read_text()))

    def _stop_all(self) -> None:
        """Stop every running worker and its children: SIGTERM to each process group, then
        SIGKILL to those still alive after :data:`STOP_GRACE_S`."""
        with self._lock:
            self._stopping = True
            running = list(self._running)
        for process in running:
            _signal_group(process, signal.SIGTERM)
        for process in running:
            try:
                process.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
            _signal_group(process, signal.SIGKILL)  # children that outlived their worker


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signum)


def _worker_env() -> dict[str, str]:
    """This process's environment with the repository importable and one thread per numerical
    library (the launcher runs one worker per core)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return env


def _failure_message(run_dir: Path, code: int) -> str:
    """Why a worker failed: the exception it noted, else the last line of its output (a worker
    killed by a signal notes nothing), and where its output is."""
    log_path = run_dir / LOG_FILE
    try:
        reason = json.loads((run_dir / FAILURE_FILE).read_text())["error"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        lines = log_path.read_text(errors="replace").strip().splitlines()
        reason = lines[-1] if lines else "no output"
    return f"exit code {code}: {reason} (see {log_path})"
