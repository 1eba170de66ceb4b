"""Running a campaign's runs on a Ray cluster: one Ray task (one CPU) per run, through the
library's Ray core (:mod:`tianshou.evaluation.ray_tasks`, which
:class:`~tianshou.evaluation.launcher.RayExpLauncher` runs on too).

The driver's disk is the only one that matters: a task gets the run directory's files (a
checkpoint to resume from, if the run has one), trains in a temporary directory on whichever
node Ray chose, and returns every file it wrote, which the driver writes into the run
directory. No shared file system is needed. The repository travels to the nodes as the tasks'
Ray ``working_dir``, so every node runs the driver's version of the code.

A run is no library experiment (it is an ``examples/mujoco`` script on a command line, and its
files travel both ways, not only back), so this launcher keeps its own task body and leaves
``RayExpLauncher`` its own; what both need of Ray is the shared core.
"""

import contextlib
import json
import logging
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmark.campaign.execute import LOG_FILE, RESULT_FILE, RunOutcome, execute_run
from benchmark.campaign.launch_local import REPO_ROOT
from benchmark.campaign.plan import RunSpec
from tianshou.evaluation.ray_tasks import pack_dir, ray_connection, run_tasks, unpack_dir

if TYPE_CHECKING:
    from ray.exceptions import RayError

UPLOAD_EXCLUDES = [".git", ".venv", "log", "benchmark/results", "*.pth", "events.out.tfevents.*"]
"""What of the repository the nodes do not need (besides what ``.gitignore`` excludes)."""


def run_in_task(spec_json: dict[str, Any], files: bytes | None, commit: str) -> bytes:
    """The body of a run's Ray task: the run on ``files`` (its run directory as the driver has
    it, packed; None if it has none yet), in a temporary directory; returns the directory
    afterwards, packed."""
    import torch

    torch.set_num_threads(1)  # a task has one CPU
    with tempfile.TemporaryDirectory(prefix="tianshou-run-") as temporary:
        run_dir = Path(temporary) / "run"
        if files is not None:
            unpack_dir(files, run_dir)
        run_dir.mkdir(exist_ok=True)
        with (
            open(run_dir / LOG_FILE, "a") as log,
            contextlib.redirect_stdout(log),
            contextlib.redirect_stderr(log),
        ):
            execute_run(RunSpec.from_json(spec_json), run_dir, commit)
        return pack_dir(run_dir)


class RayLauncher:
    """Runs runs as Ray tasks.

    :param out: the campaign's output directory, on the driver.
    :param commit: the source version each result records.
    :param address: the cluster to join; None: the one ``RAY_ADDRESS`` names, else a local Ray
        started here (a Ray this process is already connected to is used as it is).
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
        with ray_connection(
            self.address,
            local_num_cpus=self.max_concurrent,
            runtime_env={"working_dir": str(REPO_ROOT), "excludes": self._upload_excludes()},
            log_to_driver=False,
            logging_level=logging.WARNING,
        ):
            run_tasks(
                run_in_task,
                self._task_arguments(specs),
                lambda index, files: on_done(self._outcome(specs[index], files)),
                num_cpus=1,
                max_retries=0,
                max_concurrent=self.max_concurrent,
            )

    def _upload_excludes(self) -> list[str]:
        excludes = list(UPLOAD_EXCLUDES)
        with contextlib.suppress(ValueError):  # an output directory inside the repository
            excludes.append(self.out.resolve().relative_to(REPO_ROOT).as_posix())
        return excludes

    def _task_arguments(self, specs: Sequence[RunSpec]) -> Iterator[tuple[Any, ...]]:
        """Each run's task arguments, its run directory packed only when the task starts."""
        for spec in specs:
            run_dir = spec.run_dir(self.out)
            files = pack_dir(run_dir) if run_dir.is_dir() else None
            yield spec.to_json(), files, self.commit

    def _outcome(self, spec: RunSpec, files: "bytes | RayError") -> RunOutcome:
        """Make the run directory hold exactly a finished task's files; the error if it
        failed."""
        if not isinstance(files, bytes):
            lines = str(files).strip().splitlines()
            return RunOutcome(spec, None, f"Ray task failed: {lines[-1] if lines else files!r}")
        run_dir = spec.run_dir(self.out)
        shutil.rmtree(run_dir, ignore_errors=True)
        unpack_dir(files, run_dir)
        return RunOutcome(spec, json.loads((run_dir / RESULT_FILE).read_text()))
