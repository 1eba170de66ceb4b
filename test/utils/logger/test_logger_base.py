"""Interval gating, dict flattening and the no-op logger."""

from typing import Any

import numpy as np
import pytest

from tianshou.utils.logger import BaseLogger, DataScope, LazyLogger
from tianshou.utils.logger.logger_base import nest_flat_keys


class RecordingLogger(BaseLogger):
    """Keeps every write in memory."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.writes: list[tuple[str, int, dict[str, Any]]] = []

    def write(self, step_type: str, step: int, data: dict[str, Any]) -> None:
        self.writes.append((step_type, step, data))

    def save_data(self, epoch: int, env_step: int, gradient_step: int, fn: Any = None) -> None:
        pass

    def restore_data(self) -> tuple[int, int, int]:
        return 0, 0, 0

    def restore_logged_data(self, log_path: str) -> dict[str, Any]:
        return {}

    def finalize(self) -> None:
        pass


def test_defaults() -> None:
    logger = RecordingLogger()
    assert (logger.training_interval, logger.test_interval) == (1000, 1)
    assert (logger.update_interval, logger.info_interval) == (1000, 1)
    assert logger.save_interval == 1 and logger.exclude_arrays


def test_scopes_and_step_names() -> None:
    logger = RecordingLogger(training_interval=1, update_interval=1)
    logger.log_training_data({"a": 1}, 5)
    logger.log_test_data({"a": 2}, 5)
    logger.log_update_data({"a": 3}, 7)
    logger.log_info_data({"a": 4}, 1)
    assert [w[0] for w in logger.writes] == [
        "training/env_step",
        "test/env_step",
        "update/update_step",
        "info/epoch",
    ]
    assert DataScope.TRAIN is DataScope.TRAINING and str(DataScope.TRAINING) == "training"


def test_intervals_gate_writes() -> None:
    logger = RecordingLogger(training_interval=10)
    for step in range(0, 35, 5):
        logger.log_train_data({"x": step}, step)  # the old name still works
    # the first write needs a full interval after the initial step -1
    assert [w[1] for w in logger.writes] == [10, 20, 30]
    assert logger.last_log_train_step == 30


def test_flattening_keeps_numbers_only() -> None:
    data = {
        "returns": np.arange(3.0),
        "returns_stat": {"mean": 1.0, "std": np.float32(0.5)},
        "name": "x",
        "missing": None,
        "per_dim": {0: {"mean": 2}},
        "flag": True,
    }
    flat = BaseLogger.prepare_dict_for_logging(data)
    assert flat == {
        "returns_stat/mean": 1.0,
        "returns_stat/std": np.float32(0.5),
        "per_dim/0/mean": 2,
        "flag": True,
    }
    with_arrays = BaseLogger.prepare_dict_for_logging(data, exclude_arrays=False)
    assert np.array_equal(with_arrays["returns"], np.arange(3.0))
    assert BaseLogger.prepare_dict_for_logging({"a": {"b": 1}}, parent_key="p") == {"p/a/b": 1}


def test_exclude_arrays_setting_is_used() -> None:
    logger = RecordingLogger(exclude_arrays=False)
    logger.log_test_data({"returns": np.ones(2)}, 0)
    assert "returns" in logger.writes[0][2]


def test_nest_flat_keys_inverts_flattening() -> None:
    nested = {"a": {"b": 1, "c": {"d": 2}}, "e": 3}
    assert nest_flat_keys(BaseLogger.prepare_dict_for_logging(nested)) == nested


def test_base_logger_is_abstract() -> None:
    with pytest.raises(TypeError):
        BaseLogger()  # type: ignore[abstract]


def test_lazy_logger_does_nothing() -> None:
    logger = LazyLogger()
    called: list[Any] = []
    logger.log_training_data({"a": 1}, 10_000)
    logger.log_update_data({"a": 1}, 10_000)
    logger.save_data(1, 2, 3, lambda *args: called.append(args) or "")
    assert called == []
    assert logger.restore_data() == (0, 0, 0)
    assert logger.restore_logged_data("anywhere") == {}
    logger.finalize()
