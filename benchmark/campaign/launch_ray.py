"""Running a campaign's runs on a Ray cluster: one Ray task (one CPU) per run.

The driver's disk is the only one that matters: a task gets the run directory's files (a
checkpoint to resume from, if the run has one), trains in a temporary directory on whichever
node Ray chose, and returns every file it wrote, which the driver writes into the run
directory. No shared file system is needed. The repository travels to the nodes as the tasks'
Ray ``working_dir``, so every node runs the driver's version of the code.
"""

import contextlib
import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmark.campaign.execute import LOG_FILE, RESULT_FILE, RunOutcome, execute_run
from benchmark.campaign.launch_local import REPO_ROOT
from benchmark.campaign.plan import RunSpec

RunFiles = dict[str, bytes]
"""A run directory's files: path relative to the directory -> contents."""

UPLOAD_EXCLUDES = [".git", ".venv", "log", "benchmark/results", "*.pth", "events.out.tfevents.*"]
"""What of the repository the nodes do not need (besides what ``.gitignore`` excludes)."""


def pack_run_dir(run_dir: Path) -> RunFiles:
    """Every file under ``run_dir`` (none if it does not exist)."""
    if not run_dir.is_dir():
        return {}
    return {
        path.relative_to(run_dir).as_posix(): path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
    }


def unpack_run_dir(files: RunFiles, run_dir: Path) -> None:
    """Make ``run_dir`` hold exactly ``files``."""
    shutil.rmtree(run_dir, ignore_errors=True)
    for relative, data in files.items():
        path = run_dir / relative
        if run_dir.resolve() not in path.resolve().parents:
            raise ValueError(f"refusing to write {relative!r} outside {run_dir}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def run_in_task(spec_json: dict[str, Any], files: RunFiles, commit: str) -> RunFiles:
    """The body of a run's Ray task: the run on ``files`` (its run directory as the driver has
    it), in a temporary directory; returns the directory's files afterwards."""
    import torch

    torch.set_num_threads(1)  # a task has one CPU
    with tempfile.TemporaryDirectory(prefix="tianshou-run-") as temporary:
        run_dir = Path(temporary) / "run"
        unpack_run_dir(files, run_dir)
        run_dir.mkdir(exist_ok=True)
        with (
            open(run_dir / LOG_FILE, "a") as log,
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
        ):
            execute_run(RunSpec.from_json(spec_json), run_dir, commit)
        return pack_run_dir(run_dir)


class RayLauncher:
    """Runs runs as Ray tasks.

    :param out: the campaign's output directory, on the driver.
    :param commit: the source version each result records.
    :param address: the cluster to join (``ray.init(address=...)``); None starts a local Ray
        (or joins the one ``RAY_ADDRESS`` names).
    :param max_concurrent: at most this many tasks at once (None: as many as the cluster's
        CPUs allow); also the CPU count of a local Ray started here.
    """

    def __init__(
        self, out: Path, commit: str, address: str | None, max_concurrent: int | None
    ) -> None:
        if max_concurrent is not None and max_concurrent < 1:
            raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
        self.out = out
        self.commit = commit
        self.address = address
        self.max_concurrent = max_concurrent

    def run(self, specs: Sequence[RunSpec], on_done: Callable[[RunOutcome], None]) -> None:
        """Run ``specs``, calling ``on_done`` as each ends. Any exception here, a
        ``KeyboardInterrupt`` included, first cancels (kills) every task, then propagates; a
        Ray started here is shut down."""
        import ray

        started_here = not ray.is_initialized()
        if started_here:
            ray.init(**self._init_kwargs())
        task = ray.remote(num_cpus=1, max_retries=0)(run_in_task)
        waiting = list(specs)
        in_flight: dict[Any, RunSpec] = {}
        try:
            while waiting or in_flight:
                while waiting and len(in_flight) < (self.max_concurrent or len(specs)):
                    spec = waiting.pop(0)
                    files = pack_run_dir(spec.run_dir(self.out))
                    in_flight[task.remote(spec.to_json(), files, self.commit)] = spec
                done, _ = ray.wait(list(in_flight), num_returns=1)
                spec = in_flight.pop(done[0])
                on_done(self._outcome(spec, done[0]))
        except BaseException:
            for ref in in_flight:
                ray.cancel(ref, force=True)
            raise
        finally:
            if started_here:
                ray.shutdown()

    def _init_kwargs(self) -> dict[str, Any]:
        excludes = list(UPLOAD_EXCLUDES)
        with contextlib.suppress(ValueError):  # an output directory inside the repository
            excludes.append(self.out.resolve().relative_to(REPO_ROOT).as_posix())
        kwargs: dict[str, Any] = {
            "address": self.address,
            "runtime_env": {"working_dir": str(REPO_ROOT), "excludes": excludes},
            "log_to_driver": False,
            "logging_level": logging.WARNING,
        }
        if self.address is None:
            kwargs["num_cpus"] = self.max_concurrent
        return kwargs

    def _outcome(self, spec: RunSpec, ref: Any) -> RunOutcome:
        """Write a finished task's files into the run directory; the error if it failed."""
        import ray

        try:
            files = ray.get(ref)
        except ray.exceptions.RayError as exc:
            lines = str(exc).strip().splitlines()
            return RunOutcome(spec, None, f"Ray task failed: {lines[-1] if lines else exc!r}")
        unpack_run_dir(files, spec.run_dir(self.out))
        return RunOutcome(spec, json.loads(files[RESULT_FILE]))
