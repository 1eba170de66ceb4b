"""The local launcher's worker process: ``python -m benchmark.campaign.worker SPEC RUN_DIR
COMMIT`` runs one run (``SPEC`` is :meth:`RunSpec.to_json` as JSON). If the run fails, the
worker notes the exception in the run's ``failure.json``, prints the traceback on stderr and
exits non-zero.

Each run gets a fresh process so that runs share no state (RNGs, imported scripts, torch
threads) and so that stopping a run is killing its process group.
"""

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from benchmark.campaign.execute import execute_run, record_failure
from benchmark.campaign.plan import RunSpec


def main(argv: Sequence[str] | None = None) -> None:
    """Run the run that ``argv`` (``SPEC RUN_DIR COMMIT``) describes, with one torch thread (the
    launcher runs one worker per core)."""
    spec_json, run_dir, commit = sys.argv[1:] if argv is None else argv
    torch.set_num_threads(1)
    try:
        execute_run(RunSpec.from_json(json.loads(spec_json)), Path(run_dir), commit)
    except Exception as exc:
        record_failure(Path(run_dir), f"{type(exc).__name__}: {exc}")
        raise


if __name__ == "__main__":
    main()
