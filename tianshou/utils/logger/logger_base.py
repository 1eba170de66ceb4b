"""The logger interface the trainers talk to, and the no-op logger used when none is given.

A trainer hands a logger plain nested dicts (``dataclasses.asdict`` of the stats records) together
with a step counter. The logger decides whether enough steps passed since it last wrote that
scope, flattens the dict to ``"a/b/c"`` keys with scalar values and calls :meth:`BaseLogger.write`,
the one method a concrete backend has to provide besides checkpoint bookkeeping.

Checkpoints follow the same pattern: :meth:`BaseLogger.save_data` decides whether a checkpoint is
due and calls the user's ``save_checkpoint_fn``; a backend only stores the counters
(:meth:`BaseLogger._record_checkpoint`) and reads them back (:meth:`BaseLogger.restore_data`).
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from enum import StrEnum
from numbers import Number
from typing import Any

import numpy as np

VALID_LOG_VALS_TYPE = int | Number | np.number | np.ndarray | float
"""Values a logger can write: numbers, and (unless excluded) numpy arrays."""
VALID_LOG_VALS = (int, Number, np.number, np.ndarray, float)

TRestoredData = dict[str, "np.ndarray | TRestoredData"]
"""Logged data read back by :meth:`BaseLogger.restore_logged_data`: nested dicts (one level per
``/`` of the logged keys) whose leaves are arrays holding the logged values in order."""

SaveCheckpointFn = Callable[[int, int, int], str]
"""``save_checkpoint_fn(epoch, env_step, update_step) -> path of the written checkpoint``."""


class DataScope(StrEnum):
    """The four kinds of data a trainer logs, each with its own step counter and interval."""

    TRAINING = "training"
    """Training collection statistics, stepped by env steps."""
    TEST = "test"
    """Test collection statistics, stepped by env steps."""
    UPDATE = "update"
    """Algorithm update statistics (losses), stepped by update steps."""
    INFO = "info"
    """The trainer's counters and timing (``InfoStats``), stepped by epochs."""
    TRAIN = "training"
    """Alias of :attr:`TRAINING`, the name earlier releases used."""


class BaseLogger(ABC):
    """Rate-limits, flattens and forwards training statistics to a backend's :meth:`write`.

    Each scope is written at most once per interval of its step counter, so a trainer can call the
    ``log_*`` methods on every step without flooding the backend.

    :param training_interval: minimum env steps between two writes of training data.
    :param test_interval: minimum env steps between two writes of test data.
    :param update_interval: minimum update steps between two writes of update data.
    :param info_interval: minimum epochs between two writes of info data.
    :param save_interval: minimum epochs between two checkpoints in :meth:`save_data`
        (None: every epoch).
    :param exclude_arrays: drop numpy arrays (e.g. per-episode returns) when flattening, keeping
        only scalars; backends that can draw histograms may set it to False.
    """

    def __init__(
        self,
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int | None = None,
        exclude_arrays: bool = True,
    ) -> None:
        self.training_interval = training_interval
        self.test_interval = test_interval
        self.update_interval = update_interval
        self.info_interval = info_interval
        self.save_interval = 1 if save_interval is None else save_interval
        self.exclude_arrays = exclude_arrays
        self.last_log_train_step = -1
        self.last_log_test_step = -1
        self.last_log_update_step = -1
        self.last_log_info_step = -1
        self.last_save_step = -1

    @abstractmethod
    def write(self, step_type: str, step: int, data: dict[str, VALID_LOG_VALS_TYPE]) -> None:
        """Write flattened ``data`` to the backend.

        :param step_type: ``"<scope>/<step name>"``, e.g. ``"training/env_step"``; the backend
            prefixes the keys of ``data`` with the scope.
        :param step: the value of the step counter the data belongs to.
        :param data: flat mapping from ``"a/b"`` keys to numbers (or arrays).
        """

    def prepare_dict_for_logging(self, log_data: dict[str, Any]) -> dict[str, VALID_LOG_VALS_TYPE]:
        """Turn a trainer's nested stats dict into what :meth:`write` accepts: ``"a/b"`` keys
        with numbers (and arrays, unless ``exclude_arrays``).

        A backend that needs another shape (e.g. nested dicts) overrides this method; the
        ``log_*`` methods call it on every write that is due.

        :param log_data: nested dict, e.g. ``dataclasses.asdict`` of a stats record.
        """
        return flatten_dict_for_logging(log_data, exclude_arrays=self.exclude_arrays)

    def _prepare_for_write(self, log_data: dict[str, Any]) -> dict[str, VALID_LOG_VALS_TYPE]:
        """What the ``log_*`` methods pass to :meth:`write` for ``log_data``: by default the
        result of :meth:`prepare_dict_for_logging`, which a user's logger may override.

        A backend whose :meth:`prepare_dict_for_logging` takes further options overrides this to
        apply the logger's own settings to what it writes.
        """
        return self.prepare_dict_for_logging(log_data)

    def _log_if_due(self, scope: DataScope, step_name: str, log_data: dict, step: int) -> bool:
        """Write ``log_data`` under ``scope`` if its interval has passed; return whether it did."""
        attr = _LAST_STEP_ATTR[scope]
        if step - getattr(self, attr) < getattr(self, _INTERVAL_ATTR[scope]):
            return False
        flat = self._prepare_for_write(log_data)
        self.write(f"{scope.value}/{step_name}", step, flat)
        setattr(self, attr, step)
        return True

    def log_training_data(self, log_data: dict[str, Any], step: int) -> None:
        """Log the statistics of a training collection (``asdict(CollectStats)``) at env step
        ``step``."""
        self._log_if_due(DataScope.TRAINING, "env_step", log_data, step)

    def log_train_data(self, log_data: dict[str, Any], step: int) -> None:
        """Same as :meth:`log_training_data` (the name earlier releases used)."""
        self.log_training_data(log_data, step)

    def log_test_data(self, log_data: dict[str, Any], step: int) -> None:
        """Log the statistics of a test collection at env step ``step``."""
        self._log_if_due(DataScope.TEST, "env_step", log_data, step)

    def log_update_data(self, log_data: dict[str, Any], step: int) -> None:
        """Log the statistics of an algorithm update (losses) at update step ``step``."""
        self._log_if_due(DataScope.UPDATE, "update_step", log_data, step)

    def log_info_data(self, log_data: dict[str, Any], step: int) -> None:
        """Log the trainer's ``InfoStats`` at epoch ``step``."""
        self._log_if_due(DataScope.INFO, "epoch", log_data, step)

    def should_save(self, epoch: int) -> bool:
        """Whether :meth:`save_data` would checkpoint at ``epoch`` (its interval has passed)."""
        return epoch - self.last_save_step >= self.save_interval

    def save_data(
        self,
        epoch: int,
        env_step: int,
        update_step: int,
        save_checkpoint_fn: SaveCheckpointFn | None = None,
    ) -> None:
        """Checkpoint if one is due: call ``save_checkpoint_fn(epoch, env_step, update_step)``
        and record the three counters so that :meth:`restore_data` can return them.

        Nothing happens without ``save_checkpoint_fn`` or before ``save_interval`` epochs have
        passed since the last checkpoint.

        :param epoch: the epoch just finished.
        :param env_step: the env steps taken so far.
        :param update_step: the trainer's update steps so far.
        :param save_checkpoint_fn: writes the checkpoint and returns its path.
        """
        if save_checkpoint_fn is None or not self.should_save(epoch):
            return
        self.last_save_step = epoch
        checkpoint_path = save_checkpoint_fn(epoch, env_step, update_step)
        self._record_checkpoint(epoch, env_step, update_step, checkpoint_path)

    def _record_checkpoint(  # noqa: B027 (optional hook: loggers that cannot resume skip it)
        self, epoch: int, env_step: int, update_step: int, checkpoint_path: str
    ) -> None:
        """Store a checkpoint's counters (and, if the backend wants, its file) where
        :meth:`restore_data` finds them. A logger that cannot resume stores nothing."""

    @abstractmethod
    def restore_data(self) -> tuple[int, int, int]:
        """Return ``(epoch, env_step, update_step)`` of the last checkpoint ((0, 0, 0) if none)
        and advance the logging intervals so a resumed run does not write the same steps
        twice."""

    @abstractmethod
    def restore_logged_data(self, log_path: str) -> TRestoredData:
        """Read everything logged under ``log_path`` back as nested dicts of value arrays, keyed
        like the flattened names (``{"test": {"returns_stat": {"mean": array([...])}}}``)."""

    def logged_data_path(self) -> str | None:
        """Where this logger's own data can be read back with :meth:`restore_logged_data`, or
        None for a logger that cannot read it back (the default)."""
        return None

    def restore_info_data(self, epoch: int) -> dict[str, float] | None:
        """The info record (the trainer's counters, ``InfoStats``) logged last at or before
        ``epoch``, as ``{field: value}`` for its top-level numeric fields.

        Lets a resumed trainer recover what the checkpoint counters do not hold, such as the
        best score so far. None when the logger cannot read its data back or logged no info
        record up to ``epoch``.
        """
        log_path = self.logged_data_path()
        if log_path is None:
            return None
        info = self.restore_logged_data(log_path).get(DataScope.INFO.value)
        epochs = info.get("epoch") if isinstance(info, dict) else None
        if not isinstance(info, dict) or not isinstance(epochs, np.ndarray):
            return None
        rows = np.flatnonzero(epochs <= epoch)
        if rows.size == 0:
            return None
        row = rows[-1]
        return {
            key: float(values[row])
            for key, values in info.items()
            if isinstance(values, np.ndarray) and len(values) == len(epochs)
        }

    def restore_best_epoch(self, epoch: int) -> int:
        """The epoch in which the best score logged up to ``epoch`` was reached, read from the
        logged info records (the first of the run of records that end with that best score)
        and, for epoch 0, the initial test logged at env step 0.

        The info record holds the best score but not its epoch (it is the published
        ``InfoStats``), so a resumed trainer recovers the epoch this way. With an
        ``info_interval`` above 1 the answer is the first *logged* epoch with that score. 0
        when nothing was logged.
        """
        log_path = self.logged_data_path()
        if log_path is None:
            return 0
        logged = self.restore_logged_data(log_path)
        info = logged.get(DataScope.INFO.value)
        if not isinstance(info, dict):
            return 0
        epochs, scores = info.get("epoch"), info.get("best_score")
        if not isinstance(epochs, np.ndarray) or not isinstance(scores, np.ndarray):
            return 0
        rows = np.flatnonzero(epochs <= epoch)
        if rows.size == 0:
            return 0
        first = len(rows) - 1
        while first > 0 and scores[rows[first - 1]] == scores[rows[-1]]:
            first -= 1
        if first == 0 and _initial_test_scored(logged, info, rows[-1]):
            return 0
        return int(epochs[rows[first]])

    @abstractmethod
    def finalize(self) -> None:
        """Flush and release the backend at the end of training."""

    def _restore_intervals(self, epoch: int, env_step: int, update_step: int) -> None:
        """Mark the checkpoint's steps as already logged, so resumed logging continues after
        them."""
        self.last_save_step = epoch
        self.last_log_info_step = epoch
        self.last_log_train_step = env_step
        self.last_log_test_step = env_step
        self.last_log_update_step = update_step


def _initial_test_scored(logged: TRestoredData, info: TRestoredData, row: int) -> bool:
    """Whether the test logged at env step 0 (a run's initial test) returned the best reward
    that the info record at ``row`` holds, mean and deviation alike."""
    test = logged.get(DataScope.TEST.value)
    returns = test.get("returns_stat") if isinstance(test, dict) else None
    steps = test.get("env_step") if isinstance(test, dict) else None
    best_mean, best_std = info.get("best_reward"), info.get("best_reward_std")
    if not (
        isinstance(returns, dict)
        and isinstance(steps, np.ndarray)
        and isinstance(best_mean, np.ndarray)
        and isinstance(best_std, np.ndarray)
    ):
        return False
    means, stds = returns.get("mean"), returns.get("std")
    if not isinstance(means, np.ndarray) or not isinstance(stds, np.ndarray):
        return False
    initial = np.flatnonzero(steps == 0)
    if initial.size == 0:
        return False
    first = initial[0]
    return bool(means[first] == best_mean[row] and stds[first] == best_std[row])


_LAST_STEP_ATTR = {
    DataScope.TRAINING: "last_log_train_step",
    DataScope.TEST: "last_log_test_step",
    DataScope.UPDATE: "last_log_update_step",
    DataScope.INFO: "last_log_info_step",
}
_INTERVAL_ATTR = {
    DataScope.TRAINING: "training_interval",
    DataScope.TEST: "test_interval",
    DataScope.UPDATE: "update_interval",
    DataScope.INFO: "info_interval",
}


def flatten_dict_for_logging(
    input_dict: dict[str, Any],
    parent_key: str = "",
    delimiter: str = "/",
    exclude_arrays: bool = True,
) -> dict[str, VALID_LOG_VALS_TYPE]:
    """Flatten nested dicts into ``delimiter``-joined keys, keeping only loggable values.

    Strings, None, tensors and other objects are dropped; arrays are dropped too when
    ``exclude_arrays``. Non-string keys (e.g. action dimensions) are converted with ``str``.

    >>> flatten_dict_for_logging({"a": {"b": 1.0, "c": "x"}, "n": 2})
    {'a/b': 1.0, 'n': 2}

    :param input_dict: the nested dict to flatten.
    :param parent_key: prefix of every resulting key.
    :param delimiter: joins the levels of a key.
    :param exclude_arrays: drop numpy arrays instead of keeping them as values.
    """
    result: dict[str, VALID_LOG_VALS_TYPE] = {}

    def flatten_into(prefix: str, current: dict[Any, Any]) -> None:
        for key, value in current.items():
            name = f"{prefix}{delimiter}{key}" if prefix else str(key)
            if isinstance(value, dict):
                flatten_into(name, value)
            elif isinstance(value, np.ndarray):
                if not exclude_arrays:
                    result[name] = value
            elif isinstance(value, VALID_LOG_VALS):
                result[name] = value

    flatten_into(parent_key, input_dict)
    return result


def nest_flat_keys(flat: dict[str, Any], delimiter: str = "/") -> dict[str, Any]:
    """Turn ``{"a/b": v}`` into ``{"a": {"b": v}}``; the inverse of the flattening loggers do."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *parents, leaf = key.split(delimiter)
        current = nested
        for parent in parents:
            current = current.setdefault(parent, {})
        current[leaf] = value
    return nested


class LazyLogger(BaseLogger):
    """A logger that writes nothing; the trainers' default when no logger is given."""

    def __init__(self) -> None:
        super().__init__()

    def write(self, step_type: str, step: int, data: dict[str, VALID_LOG_VALS_TYPE]) -> None:
        """Discard the data."""

    def log_training_data(self, log_data: dict[str, Any], step: int) -> None:
        """Discard the data (without flattening it first)."""

    def log_test_data(self, log_data: dict[str, Any], step: int) -> None:
        """Discard the data (without flattening it first)."""

    def log_update_data(self, log_data: dict[str, Any], step: int) -> None:
        """Discard the data (without flattening it first)."""

    def log_info_data(self, log_data: dict[str, Any], step: int) -> None:
        """Discard the data (without flattening it first)."""

    def prepare_dict_for_logging(self, data: dict[str, Any]) -> dict[str, VALID_LOG_VALS_TYPE]:
        """Return ``data`` unchanged: it is discarded anyway."""
        return data

    def save_data(
        self,
        epoch: int,
        env_step: int,
        update_step: int,
        save_checkpoint_fn: SaveCheckpointFn | None = None,
    ) -> None:
        """Do nothing: there is nowhere to record a checkpoint, so none is written."""

    def restore_data(self) -> tuple[int, int, int]:
        """Nothing was saved: start from zero."""
        return 0, 0, 0

    def restore_logged_data(self, log_path: str) -> TRestoredData:
        """Nothing was logged."""
        return {}

    def finalize(self) -> None:
        """Nothing to release."""
