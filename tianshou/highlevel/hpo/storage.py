"""Where a study lives, so that several processes (or Ray workers) share it and a killed search
resumes where it stopped.

A storage is named by one string:

* ``None``: in memory (this process only, lost at exit);
* an SQLAlchemy URL (``sqlite:///study.db``, ``postgresql://...``) or a file path ending in
  ``.db``/``.sqlite``/``.sqlite3``: an RDB storage; SQLite suits processes on one machine (or
  a shared filesystem), a database server suits a cluster;
* a path ending in ``.log``/``.journal``/``.jsonl``: a journal file (``JournalStorage`` with a
  ``JournalFileBackend``), which needs no database and works on any shared filesystem.

RDB storages get Optuna's heartbeat when ``heartbeat_interval`` is given: a trial whose process
died (killed search) is marked failed once its heartbeat is older than twice the interval, and
re-run with the same hyper-parameters. A journal file has no heartbeat; a trial running when the
search was killed stays RUNNING there, and the resumed search goes on with new trials.
"""

import os
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tianshou.highlevel.hpo._optuna import import_optuna

if TYPE_CHECKING:
    import optuna

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_JOURNAL_SUFFIXES = (".log", ".journal", ".jsonl")
SQLITE_LOCK_TIMEOUT_S = 60
"""How long an SQLite connection waits for a lock held by another process."""


def create_storage(
    location: str | None, heartbeat_interval: int | None = None
) -> "optuna.storages.BaseStorage | None":
    """The storage named by ``location`` (see the module docstring).

    :param location: None, an SQLAlchemy URL, or a path to an SQLite or journal file (its
        directory is created).
    :param heartbeat_interval: seconds between the heartbeats of running trials (RDB storages
        only); None: no heartbeat.
    :raises ValueError: for a path with another suffix, or a heartbeat with a journal file.
    """
    optuna = import_optuna()
    if location is None:
        return None
    if "://" in location:
        url = location
    elif location.endswith(_SQLITE_SUFFIXES):
        url = f"sqlite:///{_prepared_path(location)}"
    elif location.endswith(_JOURNAL_SUFFIXES):
        if heartbeat_interval is not None:
            raise ValueError("journal files have no heartbeat; use an SQLite file for one")
        backend = optuna.storages.journal.JournalFileBackend(_prepared_path(location))
        return optuna.storages.JournalStorage(backend)
    else:
        raise ValueError(
            f"cannot tell the storage of {location!r}: use an SQLAlchemy URL (sqlite:///x.db), "
            f"a path ending in one of {_SQLITE_SUFFIXES} (SQLite) or {_JOURNAL_SUFFIXES} "
            f"(journal file), or None (in memory)"
        )
    engine_kwargs = (
        {"connect_args": {"timeout": SQLITE_LOCK_TIMEOUT_S}} if url.startswith("sqlite") else {}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(
            url, engine_kwargs=engine_kwargs, **_heartbeat_settings(optuna, heartbeat_interval)
        )


def _heartbeat_settings(optuna: ModuleType, interval: int | None) -> dict[str, Any]:
    """The RDB storage arguments of a heartbeat every ``interval`` seconds whose stale trials
    are re-run once (under the callback's name of the installed Optuna version)."""
    if interval is None:
        return {}
    storages = optuna.storages
    if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):  # Optuna >= 4.9
        retry = {"heartbeat_stale_trial_callback": storages.RetryHeartbeatStaleTrialCallback(1)}
    else:
        retry = {"failed_trial_callback": storages.RetryFailedTrialCallback(max_retry=1)}
    return {"heartbeat_interval": interval, "grace_period": 2 * interval, **retry}


def _prepared_path(path: str) -> str:
    """``path`` made absolute, its directory created."""
    path = os.path.abspath(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


def load_or_create_study(
    study_name: str,
    storage: "str | optuna.storages.BaseStorage | None",
    sampler: "optuna.samplers.BaseSampler | None" = None,
    pruner: "optuna.pruners.BasePruner | None" = None,
) -> "optuna.Study":
    """The study ``study_name`` in ``storage`` (maximising), created if it does not exist, so
    that every process of a search and every resumed search calls the same.

    :param study_name: the study's name in the storage.
    :param storage: a storage, or its location for :func:`create_storage`.
    :param sampler: proposes hyper-parameters (None: Optuna's TPE sampler).
    :param pruner: stops weak trials (None: Optuna's median pruner).
    """
    optuna = import_optuna()
    if isinstance(storage, str):
        storage = create_storage(storage)
    return optuna.create_study(
        study_name=study_name,
        storage=storage,
        sampler=sampler,
        pruner=pruner,
        direction="maximize",
        load_if_exists=True,
    )
