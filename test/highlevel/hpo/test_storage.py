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
    load_or_create_study("shared", storage)  # created once, before the workers race for it
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
