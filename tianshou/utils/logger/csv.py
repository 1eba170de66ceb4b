"""A logger writing plain CSV files, one per scope, for people who use neither TensorBoard nor W&B.

``<log_dir>/training.csv``, ``test.csv``, ``update.csv`` and ``info.csv`` hold one row per write:
the step counter first, then the flattened statistics (``returns_stat/mean`` and so on). When a
later row brings a new key the file is rewritten with the wider header (older rows get empty
cells), so columns never shift. Checkpoint counters go to ``save.csv`` (the update step in its
``gradient_step`` column, the name earlier files used).
"""

import csv
import os
from typing import Any

import numpy as np

from tianshou.utils.logger.logger_base import (
    VALID_LOG_VALS_TYPE,
    BaseLogger,
    TRestoredData,
    nest_flat_keys,
)

_SAVE_FILE = "save.csv"
_SAVE_COLUMNS = ("epoch", "env_step", "gradient_step")


def _read_rows(path: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and rows of a CSV file (empty if it does not exist)."""
    if not os.path.exists(path):
        return [], []
    with open(path, newline="") as file:
        reader = csv.DictReader(file)
        return list(reader.fieldnames or []), list(reader)


def _to_float(cell: str) -> float:
    return float(cell) if cell != "" else np.nan


class CSVLogger(BaseLogger):
    """Write training statistics to CSV files in ``log_dir`` (created if missing).

    Arrays are always dropped: a CSV cell holds one number.

    :param log_dir: directory for the ``<scope>.csv`` files; existing files are appended to, so a
        resumed run continues them.
    :param training_interval: minimum env steps between two writes of training data.
    :param test_interval: minimum env steps between two writes of test data.
    :param update_interval: minimum update steps between two writes of update data.
    :param info_interval: minimum epochs between two writes of info data.
    :param save_interval: minimum epochs between two checkpoints; None: a checkpoint after
        every epoch, as with the other loggers.
    """

    def __init__(
        self,
        log_dir: str,
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int | None = None,
    ) -> None:
        super().__init__(
            training_interval, test_interval, update_interval, info_interval, save_interval
        )
        os.makedirs(log_dir, exist_ok=True)
        self.log_dir = log_dir
        self._columns: dict[str, list[str]] = {}

    def _path(self, name: str) -> str:
        return os.path.join(self.log_dir, f"{name}.csv")

    def _header(self, name: str) -> list[str]:
        if name not in self._columns:
            self._columns[name] = _read_rows(self._path(name))[0]
        return self._columns[name]

    def _append(self, name: str, row: dict[str, Any]) -> None:
        """Append ``row``, first widening the file's header if the row brings new columns."""
        header = self._header(name)
        new_columns = [key for key in row if key not in header]
        path = self._path(name)
        if new_columns:
            _, old_rows = _read_rows(path)
            header = header + new_columns
            self._columns[name] = header
            with open(path, "w", newline="") as file:
                writer = csv.DictWriter(file, fieldnames=header)
                writer.writeheader()
                writer.writerows(old_rows)
                writer.writerow(row)
            return
        with open(path, "a", newline="") as file:
            csv.DictWriter(file, fieldnames=header).writerow(row)

    def write(self, step_type: str, step: int, data: dict[str, VALID_LOG_VALS_TYPE]) -> None:
        scope, step_name = step_type.split("/", 1)
        row: dict[str, Any] = {step_name: step}
        for key, value in data.items():
            if not isinstance(value, np.ndarray):
                row[key] = int(value) if isinstance(value, bool | np.bool_) else value
        self._append(scope, row)

    def _record_checkpoint(
        self, epoch: int, env_step: int, update_step: int, checkpoint_path: str
    ) -> None:
        counters = (epoch, env_step, update_step)
        self._append("save", dict(zip(_SAVE_COLUMNS, counters, strict=True)))

    def restore_data(self) -> tuple[int, int, int]:
        rows = _read_rows(os.path.join(self.log_dir, _SAVE_FILE))[1]
        if not rows:
            return 0, 0, 0
        epoch, env_step, update_step = (int(rows[-1][key]) for key in _SAVE_COLUMNS)
        self._restore_intervals(epoch, env_step, update_step)
        return epoch, env_step, update_step

    def logged_data_path(self) -> str:
        """The directory holding the CSV files."""
        return self.log_dir

    def finalize(self) -> None:
        """Nothing to release: every write opens and closes its file."""

    def restore_logged_data(self, log_path: str) -> TRestoredData:
        """Read every ``<scope>.csv`` in ``log_path`` back; empty cells become NaN."""
        restored: TRestoredData = {}
        for file_name in sorted(os.listdir(log_path)):
            scope, extension = os.path.splitext(file_name)
            if extension != ".csv":
                continue
            header, rows = _read_rows(os.path.join(log_path, file_name))
            columns = {key: np.array([_to_float(row[key] or "") for row in rows]) for key in header}
            restored[scope] = nest_flat_keys(columns)
        return restored
