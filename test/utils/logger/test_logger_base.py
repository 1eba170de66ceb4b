"""Interval gating, dict flattening, the checkpoint guard, reading back info records, and the
no-op logger."""

from typing import Any

import numpy as np
import pytest

from tianshou.utils.logger import BaseLogger, DataScope, LazyLogger
from tianshou.utils.logger.logger_base import (
    TRestoredData,
    flatten_dict_for_logging,
    nest_flat_keys,
)


class RecordingLogger(BaseLogger):
    """Keeps every write in memory."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.writes: list[tuple[str, int, dict[str, Any]]] = []

    def write(self, step_type: str, step: int, data: dict[str, Any]) -> None:
        self.writes.append((step_type, step, data))

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
    flat = flatten_dict_for_logging(data)
    assert flat == {
        "returns_stat/mean": 1.0,
        "returns_stat/std": np.float32(0.5),
        "per_dim/0/mean": 2,
        "flag": True,
    }
    with_arrays = flatten_dict_for_logging(data, exclude_arrays=False)
    assert np.array_equal(with_arrays["returns"], np.arange(3.0))
    assert flatten_dict_for_logging({"a": {"b": 1}}, parent_key="p") == {"p/a/b": 1}
    assert RecordingLogger().prepare_dict_for_logging(log_data=data) == flat


def test_exclude_arrays_setting_is_used() -> None:
    logger = RecordingLogger(exclude_arrays=False)
    logger.log_test_data({"returns": np.ones(2)}, 0)
    assert "returns" in logger.writes[0][2]


def test_nest_flat_keys_inverts_flattening() -> None:
    nested = {"a": {"b": 1, "c": {"d": 2}}, "e": 3}
    assert nest_flat_keys(flatten_dict_for_logging(nested)) == nested


def test_base_logger_is_abstract() -> None:
    with pytest.raises(TypeError):
        BaseLogger()  # type: ignore[abstract]


def test_lazy_logger_does_nothing() -> None:
    logger = LazyLogger()
    called: list[Any] = []
    logger.log_training_data({"a": 1}, 10_000)
    logger.log_update_data({"a": 1}, 10_000)
    logger.save_data(1, 2, update_step=3, save_checkpoint_fn=lambda *a: called.append(a) or "")
    assert called == []
    assert logger.restore_data() == (0, 0, 0)
    assert logger.restore_logged_data("anywhere") == {}
    assert logger.prepare_dict_for_logging(data={"a": {"b": "kept"}}) == {"a": {"b": "kept"}}
    assert logger.restore_info_data(epoch=5) is None
    logger.finalize()


class PublishedStyleLogger(RecordingLogger):
    """A user's logger written for Tianshou 2.x: it overrides ``prepare_dict_for_logging`` with
    the one-argument signature and keeps the data nested."""

    def prepare_dict_for_logging(self, log_data: dict[str, Any]) -> dict[str, Any]:
        return {"wrapped": log_data}


def test_log_methods_call_an_overridden_prepare_dict_for_logging() -> None:
    logger = PublishedStyleLogger()
    logger.log_test_data({"a": {"b": 1}}, 0)
    assert logger.writes == [("test/env_step", 0, {"wrapped": {"a": {"b": 1}}})]


class CheckpointRecordingLogger(RecordingLogger):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.recorded: list[tuple[int, int, int, str]] = []

    def _record_checkpoint(
        self, epoch: int, env_step: int, update_step: int, checkpoint_path: str
    ) -> None:
        self.recorded.append((epoch, env_step, update_step, checkpoint_path))


def test_save_data_guard_lives_in_the_base_logger() -> None:
    """Any logger gets the same rule: no callback, or too few epochs since the last checkpoint,
    means no checkpoint; otherwise the callback runs and its path is recorded."""
    logger = CheckpointRecordingLogger(save_interval=2)
    calls: list[tuple[int, int, int]] = []

    def save_checkpoint_fn(epoch: int, env_step: int, update_step: int) -> str:
        calls.append((epoch, env_step, update_step))
        return f"ckpt_{epoch}.pt"

    logger.save_data(0, 0, 0)  # no callback: nothing, not even the interval moves
    for epoch in range(1, 6):
        logger.save_data(
            epoch, env_step=10 * epoch, update_step=epoch, save_checkpoint_fn=save_checkpoint_fn
        )
    assert calls == [(1, 10, 1), (3, 30, 3), (5, 50, 5)]
    assert [entry[3] for entry in logger.recorded] == ["ckpt_1.pt", "ckpt_3.pt", "ckpt_5.pt"]
    assert logger.last_save_step == 5


class InfoReadingLogger(RecordingLogger):
    """Reads back a fixed info log, as a file-backed logger would."""

    def __init__(self, logged: TRestoredData) -> None:
        super().__init__()
        self.logged = logged

    def logged_data_path(self) -> str:
        return "somewhere"

    def restore_logged_data(self, log_path: str) -> TRestoredData:
        assert log_path == "somewhere"
        return self.logged


def test_restore_info_data_picks_the_last_record_up_to_the_epoch() -> None:
    info: TRestoredData = {
        "epoch": np.array([1.0, 2.0, 3.0]),
        "best_reward": np.array([5.0, 8.0, 9.0]),
        "timing": {"total_time": np.array([1.0, 2.0, 3.0])},  # nested: not a top-level field
    }
    logger = InfoReadingLogger({"info": info})
    assert logger.restore_info_data(epoch=2) == {"epoch": 2.0, "best_reward": 8.0}
    assert logger.restore_info_data(epoch=10) == {"epoch": 3.0, "best_reward": 9.0}
    assert logger.restore_info_data(epoch=0) is None
    assert InfoReadingLogger({"test": info}).restore_info_data(epoch=2) is None
    assert RecordingLogger().restore_info_data(epoch=2) is None  # cannot read back
