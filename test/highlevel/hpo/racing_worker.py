"""A search process of the racing test: ``python -m test.highlevel.hpo.racing_worker FOLDER
WORKERS N_TRIALS STORAGE...`` opens each storage in turn at the same instant as the other
workers (a barrier on files in FOLDER) and adds N_TRIALS trials of a trivial objective to its
study ``race``, so that the storages' creation races as it does when a search is started in
several processes at once."""

import os
import sys
import time
from pathlib import Path

import optuna

from tianshou.highlevel.hpo.storage import load_or_create_study

BARRIER_TIMEOUT_S = 20.0


def wait_for_all(folder: Path, round_name: str, workers: int) -> None:
    """Mark this worker ready for ``round_name`` and return once all ``workers`` are."""
    (folder / f"{round_name}.ready.{os.getpid()}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT_S
    while len(list(folder.glob(f"{round_name}.ready.*"))) < workers:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the other workers never got ready for {round_name}")
        time.sleep(0.005)


def main(folder: Path, workers: int, n_trials: int, storages: list[str]) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for i, storage in enumerate(storages):
        wait_for_all(folder, f"round{i}", workers)
        study = load_or_create_study("race", storage)
        study.optimize(lambda trial: trial.suggest_float("x", 0.0, 1.0), n_trials=n_trials)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
