"""Reading back what a run logged, whichever file logger wrote it.

A run directory holds TensorBoard event files or CSV files; :func:`read_logged_data` finds out
which and returns the logged values as the nested dicts of
:meth:`~tianshou.utils.logger.BaseLogger.restore_logged_data`, so that evaluations and reports
of finished runs need not know which logger a run used.
"""

import os
from typing import Any, cast

from tianshou.utils.logger.csv import CSVLogger
from tianshou.utils.logger.logger_base import BaseLogger, TRestoredData
from tianshou.utils.logger.tensorboard import TensorboardLogger


def reader_for(log_dir: str) -> BaseLogger | None:
    """A logger that reads back the logs in ``log_dir`` (TensorBoard event files or CSV
    files); None if the directory holds neither.

    :param log_dir: a run's log directory.
    """
    names = os.listdir(log_dir)
    if any(name.startswith("events.out.tfevents") for name in names):
        # reading opens the event files only; no writer is needed
        return TensorboardLogger(writer=cast(Any, None))
    if any(name.endswith(".csv") for name in names):
        return CSVLogger(log_dir)
    return None


def read_logged_data(log_dir: str) -> TRestoredData:
    """Everything logged in ``log_dir``, e.g. ``{"test": {"returns_stat": {"mean": array}}}``;
    empty if the directory holds no logs.

    :param log_dir: a run's log directory.
    """
    reader = reader_for(log_dir)
    return reader.restore_logged_data(log_dir) if reader is not None else {}
