import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from tianshou.highlevel.hpo.storage import create_storage, load_or_create_study

REPO = Path(__file__).resolve().parents[3]


def test_two_processes_on_one_sqlite_study_both_contribute_trials(tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "test.highlevel.hpo.search_worker", storage, "4"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(2)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err.decode()[-2000:]
    study = load_or_create_study("shared", storage)
    finished = [t for t in study.trials if t.state.is_finished()]
    assert len(finished) >= 4
    assert {t.user_attrs["pid"] for t in finished} == {w.pid for w in workers}
    assert sorted(t.number for t in study.trials) == list(range(len(study.trials)))


def test_workers_started_at_the_same_instant_on_new_storages_all_add_their_trials(
    tmp_path: Path,
) -> None:
    """Four processes open a new storage at the same instant (a barrier), five times for SQLite
    and five times for a journal file, and each adds its trials: none may die in the storage's
    or the study's creation (before the creation lock, SQLite ones died of ``table studies
    already exists`` or ``UNIQUE constraint failed: alembic_version``)."""
    workers, rounds, n_trials = 4, 5, 2
    storages = [f"sqlite:///{tmp_path / f'race{i}.db'}" for i in range(rounds)]
    storages += [str(tmp_path / f"race{i}.log") for i in range(rounds)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "test.highlevel.hpo.racing_worker", str(tmp_path)]
    processes = [
        subprocess.Popen(
            [*command, str(workers), str(n_trials), *storages],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        for _ in range(workers)
    ]
    errors = [process.communicate(timeout=120)[1].decode() for process in processes]
    assert [p.returncode for p in processes] == [0] * workers, "\n".join(errors)[-3000:]
    for storage in storages:
        trials = load_or_create_study("race", storage).trials
        assert len(trials) == workers * n_trials, storage
        assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    assert not list(tmp_path.glob("*.lock")), "a creation lock was left behind"


def test_storage_locations(tmp_path: Path) -> None:
    assert create_storage(None) is None
    journal = create_storage(str(tmp_path / "sub" / "study.log"))
    assert isinstance(journal, optuna.storages.JournalStorage)
    sqlite = create_storage(str(tmp_path / "study.sqlite3"), heartbeat_interval=10)
    assert isinstance(sqlite, optuna.storages.RDBStorage)
    assert (tmp_path / "study.sqlite3").exists()
    with pytest.raises(ValueError, match="cannot tell"):
        create_storage(str(tmp_path / "study.txt"))
    with pytest.raises(ValueError, match="heartbeat"):
        create_storage(str(tmp_path / "study.journal"), heartbeat_interval=10)
