"""CSVLogger: one plain CSV file per scope, widened when new keys appear, and resume."""

import csv
import os
from typing import Any

import numpy as np

from tianshou.utils.logger.csv import CSVLogger


def read_csv(path: str) -> list[dict[str, str]]:
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def test_rows_per_scope(tmp_path: Any) -> None:
    logger = CSVLogger(str(tmp_path), training_interval=1)
    logger.log_training_data({"returns_stat": {"mean": 2.5}, "returns": np.ones(2)}, 4)
    logger.log_test_data({"returns_stat": {"mean": 7.0}, "flag": True}, 4)
    assert read_csv(str(tmp_path / "training.csv")) == [
        {"env_step": "4", "returns_stat/mean": "2.5"}
    ]
    assert read_csv(str(tmp_path / "test.csv")) == [
        {"env_step": "4", "returns_stat/mean": "7.0", "flag": "1"}
    ]


def test_new_keys_widen_the_header(tmp_path: Any) -> None:
    logger = CSVLogger(str(tmp_path))
    logger.log_test_data({"a": 1.0}, 0)
    logger.log_test_data({"a": 2.0, "b": 3.0}, 1)
    logger.log_test_data({"b": 4.0}, 2)
    rows = read_csv(str(tmp_path / "test.csv"))
    assert rows == [
        {"env_step": "0", "a": "1.0", "b": ""},
        {"env_step": "1", "a": "2.0", "b": "3.0"},
        {"env_step": "2", "a": "", "b": "4.0"},
    ]
    restored = logger.restore_logged_data(str(tmp_path))
    assert np.array_equal(restored["test"]["a"], [1.0, 2.0, np.nan], equal_nan=True)
    assert np.array_equal(restored["test"]["env_step"], [0, 1, 2])


def test_save_restore_and_continue(tmp_path: Any) -> None:
    saved: list[int] = []
    logger = CSVLogger(str(tmp_path / "run"))
    for epoch in (1, 2):
        logger.save_data(epoch, epoch * 10, epoch * 3, lambda e, s, g: saved.append(e) or "p")
    assert saved == [1, 2]
    logger.log_info_data({"best_reward": 1.0}, 2)

    resumed = CSVLogger(str(tmp_path / "run"))
    assert resumed.restore_data() == (2, 20, 6)
    assert resumed.last_log_info_step == 2
    resumed.log_info_data({"best_reward": 2.0}, 3)
    rows = read_csv(os.path.join(str(tmp_path / "run"), "info.csv"))
    assert [row["epoch"] for row in rows] == ["2", "3"]
    resumed.finalize()


def test_restore_without_checkpoint(tmp_path: Any) -> None:
    assert CSVLogger(str(tmp_path)).restore_data() == (0, 0, 0)


def test_restore_info_data_reads_info_csv(tmp_path: Any) -> None:
    logger = CSVLogger(str(tmp_path))
    for epoch, best in ((1, 3.0), (2, 5.0)):
        logger.log_info_data({"best_reward": best, "timing": {"total_time": 1.0}}, epoch)
    assert CSVLogger(str(tmp_path)).restore_info_data(epoch=1) == {
        "epoch": 1.0,
        "best_reward": 3.0,
    }
