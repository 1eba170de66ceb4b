"""Where a study lives, so that several processes (or Ray workers) share it and a killed search
resumes where it stopped.

A storage is named by one string:

* ``None``: in memory (this process only, lost at exit);
* an SQLAlchemy URL (``sqlite:///study.db``, ``postgresql://...``) or a file path ending in
  ``.db``/``.sqlite``/``.sqlite3``: an RDB storage; SQLite suits processes on one machine (or
  a shared filesystem), a database server suits a cluster;
* a path ending in ``.log``/``.journal``/``.jsonl``: a journal file (``JournalStorage`` with a
  ``JournalFileBackend``), which needs no database and works on any shared filesystem.

Any number of processes may create the same new storage and study at the same instant (the
documented way to search in parallel is to start the same command several times): an SQLite or
journal file is opened, its schema created and the study created or loaded while holding a lock
file next to it (``<file>.create.lock``, removed when released), because Optuna's schema creation
is not safe against a concurrent one (``table studies already exists``). Database servers get no
such lock: processes on several machines should create the study once before starting them.

RDB storages get Optuna's heartbeat when ``heartbeat_interval`` is given: a trial whose process
died (killed search) is marked failed once its heartbeat is older than twice the interval, and
re-run with the same hyper-parameters. A journal file has no heartbeat; a trial running when the
search was killed stays RUNNING there, and the resumed search goes on with new trials.
"""

import contextlib
import os
import warnings
from collections.abc import Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tianshou.highlevel.hpo._optuna import import_optuna

if TYPE_CHECKING:
    import optuna

_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_JOURNAL_SUFFIXES = (".log", ".journal", ".jsonl")
SQLITE_LOCK_TIMEOUT_S = 60
"""How long an SQLite connection waits for a lock held by another process."""
CREATION_LOCK_GRACE_S = 30
"""After how long a creation lock left by a killed process is broken (creating a schema and a
study takes well under a second)."""


def create_storage(
    location: str | None, heartbeat_interval: int | None = None
) -> "optuna.storages.BaseStorage | None":
    """The storage named by ``location`` (see the module docstring); an SQLite or journal file
    is opened under its creation lock, so processes doing so at once do not collide.

    :param location: None, an SQLAlchemy URL, or a path to an SQLite or journal file (its
        directory is created).
    :param heartbeat_interval: seconds between the heartbeats of running trials (RDB storages
        only); None: no heartbeat.
    :raises ValueError: for a path with another suffix, or a heartbeat with a journal file.
    """
    if location is None:
        return None
    with _creation_lock(location):
        return _open_storage(location, heartbeat_interval)


def _open_storage(location: str, heartbeat_interval: int | None) -> "optuna.storages.BaseStorage":
    """The storage named by ``location``, opened (its schema created) without any lock."""
    optuna = import_optuna()
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


def _local_file(location: str | None) -> str | None:
    """The file holding the storage at ``location``: an SQLite or journal path, or the database
    of an ``sqlite://`` URL; None for a database server, an in-memory database, or a location
    :func:`_open_storage` refuses."""
    if location is None:
        return None
    if "://" not in location:
        return location if location.endswith(_SQLITE_SUFFIXES + _JOURNAL_SUFFIXES) else None
    from sqlalchemy.engine import make_url

    url = make_url(location)
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return url.database


@contextlib.contextmanager
def _creation_lock(location: str | None) -> Iterator[None]:
    """Hold the lock file ``<file>.create.lock`` of the storage file at ``location`` (nothing
    for other locations). It is Optuna's own lock object, which needs no ``fcntl`` and works on
    network file systems, as journal files do."""
    path = _local_file(location)
    if path is None:
        yield
        return
    optuna = import_optuna()
    lock = optuna.storages.journal.JournalFileOpenLock(
        f"{_prepared_path(path)}.create", grace_period=CREATION_LOCK_GRACE_S
    )
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


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
    that every process of a search and every resumed search calls the same. A storage given by
    its location is opened and the study created or loaded under one creation lock.

    :param study_name: the study's name in the storage.
    :param storage: a storage, or its location for :func:`create_storage`.
    :param sampler: proposes hyper-parameters (None: Optuna's TPE sampler).
    :param pruner: stops weak trials (None: Optuna's median pruner).
    """
    optuna = import_optuna()
    location = storage if isinstance(storage, str) else None
    with _creation_lock(location):
        return optuna.create_study(
            study_name=study_name,
            storage=storage if location is None else _open_storage(location, None),
            sampler=sampler,
            pruner=pruner,
            direction="maximize",
            load_if_exists=True,
        )
