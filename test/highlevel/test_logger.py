"""Tests of the logger factory: each logger type writes its files."""

import os
from pathlib import Path

import pytest

from tianshou.highlevel.logger import LoggerFactoryDefault
from tianshou.utils.logger import CSVLogger, TensorboardLogger, WandbLogger


def test_tensorboard_logger_writes_an_event_file_with_the_config(tmp_path: Path) -> None:
    factory = LoggerFactoryDefault(save_interval=3)
    logger = factory.create_logger(str(tmp_path), "exp", None, {"lr": 0.5})
    assert isinstance(logger, TensorboardLogger)
    assert factory.get_logger_class() is TensorboardLogger
    assert logger.save_interval == 3
    logger.write("test/env_step", 7, {"returns": 1.5})
    logger.finalize()
    events = [name for name in os.listdir(tmp_path) if name.startswith("events.out.tfevents")]
    assert len(events) == 1
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert [(e.step, e.value) for e in accumulator.Scalars("test/returns")] == [(7, 1.5)]
    assert "args/text_summary" in accumulator.Tags()["tensors"]


def test_defaults_checkpoint_every_epoch_and_record_no_config(tmp_path: Path) -> None:
    logger = LoggerFactoryDefault().create_logger(str(tmp_path), "exp", None)
    assert isinstance(logger, TensorboardLogger)
    assert logger.save_interval == 1
    logger.finalize()
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert "args/text_summary" not in accumulator.Tags()["tensors"]
    csv_logger = LoggerFactoryDefault("csv").create_logger(str(tmp_path / "csv"), "exp", None)
    assert isinstance(csv_logger, CSVLogger)
    assert csv_logger.save_interval == 1


@pytest.mark.parametrize("logger_type", ["pandas", "csv"])
def test_csv_logger(tmp_path: Path, logger_type: str) -> None:
    factory = LoggerFactoryDefault(logger_type=logger_type)  # type: ignore[arg-type]
    logger = factory.create_logger(str(tmp_path), "exp", None, {})
    assert isinstance(logger, CSVLogger)
    assert factory.get_logger_class() is CSVLogger
    logger.write("test/env_step", 7, {"returns": 1.5})
    assert (tmp_path / "test.csv").read_text().splitlines() == ["env_step,returns", "7,1.5"]


def test_wandb_logger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "disabled")
    factory = LoggerFactoryDefault(logger_type="wandb", wandb_project="proj")
    logger = factory.create_logger(str(tmp_path), os.path.join("a", "b"), None, {"lr": 1})
    assert isinstance(logger, WandbLogger)
    assert factory.get_logger_class() is WandbLogger
    logger.write("test/env_step", 1, {"returns": 2.0})
    logger.finalize()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(tmp_path))


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="unknown logger_type 'mlflow'"):
        LoggerFactoryDefault(logger_type="mlflow")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs wandb_project"):
        LoggerFactoryDefault(logger_type="wandb")
