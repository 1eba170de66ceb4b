"""TensorboardLogger writes real event files: read them back with TensorBoard's own reader."""

from typing import Any

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter

from tianshou.utils.logger import TensorboardLogger


def scalars(log_dir: str) -> dict[str, list[tuple[int, float]]]:
    accumulator = EventAccumulator(log_dir)
    accumulator.Reload()
    return {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }


@pytest.fixture
def log_dir(tmp_path: Any) -> str:
    return str(tmp_path / "tb")


def test_written_scalars_read_back(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir), training_interval=1)
    logger.log_training_data({"returns_stat": {"mean": 3.5, "std": 0.5}, "returns": [1]}, 10)
    logger.log_test_data({"returns_stat": {"mean": 7.0}, "returns": np.ones(3)}, 10)
    logger.log_info_data({"best_reward": 7.0, "timing": {"total_time": 1.5}}, 1)
    logger.log_update_data({"loss": 0.25}, 3)  # within the first update interval (1000)
    read = scalars(log_dir)
    assert read["training/returns_stat/mean"] == [(10, 3.5)]
    assert read["training/returns_stat/std"] == [(10, 0.5)]
    assert read["training/env_step"] == [(10, 10.0)]
    assert read["test/returns_stat/mean"] == [(10, 7.0)]
    assert read["info/timing/total_time"] == [(1, 1.5)]
    assert read["info/epoch"] == [(1, 1.0)]
    assert "test/returns" not in read
    assert "update/loss" not in read


def test_update_interval(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir), update_interval=2)
    for step in range(1, 6):
        logger.log_update_data({"loss": float(step)}, step)
    assert scalars(log_dir)["update/loss"] == [(1, 1.0), (3, 3.0), (5, 5.0)]


def test_arrays_become_histograms(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir), exclude_arrays=False)
    logger.log_test_data({"returns": np.arange(5.0)}, 0)
    accumulator = EventAccumulator(log_dir)
    accumulator.Reload()
    assert "test/returns" in accumulator.Tags()["histograms"]


def test_save_and_restore_counters(log_dir: str) -> None:
    saved: list[tuple[int, int, int]] = []

    def save_checkpoint_fn(epoch: int, env_step: int, gradient_step: int) -> str:
        saved.append((epoch, env_step, gradient_step))
        return "ckpt.pt"

    logger = TensorboardLogger(SummaryWriter(log_dir), save_interval=2)
    for epoch in range(1, 6):
        logger.save_data(epoch, epoch * 100, epoch * 10, save_checkpoint_fn)
    logger.save_data(6, 600, 60)  # no callback: no checkpoint
    assert saved == [(1, 100, 10), (3, 300, 30), (5, 500, 50)]
    assert scalars(log_dir)["save/env_step"][-1] == (500, 500.0)

    fresh = TensorboardLogger(SummaryWriter(log_dir), training_interval=1)
    assert fresh.restore_data() == (5, 500, 50)
    assert fresh.last_save_step == 5 and fresh.last_log_update_step == 50
    fresh.log_training_data({"x": 1.0}, 500)  # already logged up to env step 500
    fresh.log_training_data({"x": 2.0}, 501)
    assert scalars(log_dir)["training/x"] == [(501, 2.0)]


def test_restore_without_checkpoint_starts_at_zero(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir))
    assert logger.restore_data() == (0, 0, 0)


def test_restore_logged_data_nests_keys(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir))
    for step, value in ((0, 1.0), (5, 2.0)):
        logger.log_test_data({"returns_stat": {"mean": value}}, step)
    logger.finalize()
    restored = logger.restore_logged_data(log_dir)
    assert np.array_equal(restored["test"]["returns_stat"]["mean"], [1.0, 2.0])
    assert np.array_equal(restored["test"]["env_step"], [0.0, 5.0])


def test_prepare_dict_for_logging_takes_the_published_arguments(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir), exclude_arrays=False)
    data = {"a": {"b": 1.0}, "arr": np.ones(2)}
    flat = logger.prepare_dict_for_logging(
        input_dict=data, parent_key="p", delimiter=".", exclude_arrays=True
    )
    assert flat == {"p.a.b": 1.0}
    assert logger.prepare_dict_for_logging(data) == {"a/b": 1.0}  # arrays excluded by default
    with_arrays = logger.prepare_dict_for_logging(data, exclude_arrays=False)
    assert set(with_arrays) == {"a/b", "arr"}


def test_log_methods_follow_the_loggers_exclude_arrays_setting(log_dir: str) -> None:
    """The published default of ``prepare_dict_for_logging`` drops arrays, but what the
    ``log_*`` methods write follows the logger's own setting."""
    data = {"returns": np.arange(3.0), "mean": 1.0}
    for exclude_arrays, subdir in ((True, "excluded"), (False, "kept")):
        path = f"{log_dir}/{subdir}"
        TensorboardLogger(SummaryWriter(path), exclude_arrays=exclude_arrays).log_test_data(data, 0)
        accumulator = EventAccumulator(path)
        accumulator.Reload()
        assert "test/mean" in accumulator.Tags()["scalars"]
        assert ("test/returns" in accumulator.Tags()["histograms"]) is not exclude_arrays


def test_default_save_interval_checkpoints_every_epoch(log_dir: str) -> None:
    saved: list[int] = []
    logger = TensorboardLogger(SummaryWriter(log_dir))
    for epoch in range(1, 4):
        logger.save_data(epoch, 10 * epoch, epoch, lambda e, *_: saved.append(e) or "ckpt.pt")
    assert saved == [1, 2, 3]
    assert TensorboardLogger(SummaryWriter(log_dir)).restore_data() == (3, 30, 3)


def test_save_data_takes_update_step_by_name(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir))
    logger.save_data(epoch=1, env_step=10, update_step=4, save_checkpoint_fn=lambda *_: "p")
    assert TensorboardLogger(SummaryWriter(log_dir)).restore_data() == (1, 10, 4)


def test_restore_info_data_reads_the_event_files(log_dir: str) -> None:
    logger = TensorboardLogger(SummaryWriter(log_dir))
    for epoch, best in ((1, 3.0), (2, 5.0), (3, 6.0)):
        logger.log_info_data({"best_reward": best, "timing": {"total_time": 1.0}}, epoch)
    fresh = TensorboardLogger(SummaryWriter(log_dir))
    assert fresh.logged_data_path() == log_dir
    assert fresh.restore_info_data(epoch=2) == {"epoch": 2.0, "best_reward": 5.0}
