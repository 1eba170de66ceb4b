"""WandbLogger without the optional ``wandb`` package, and with a fake one standing in."""

import sys
import types
from typing import Any

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter

from test.utils.logger.fake_wandb import install_fake_wandb
from tianshou.utils.logger import WandbLogger


@pytest.fixture
def fake_wandb(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    return install_fake_wandb(monkeypatch)


def test_missing_wandb_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes `import wandb` fail
    with pytest.raises(
        ImportError,
        match=r"optional package 'wandb'.*pip install -c constraints.txt -e '\.\[wandb\]'",
    ):
        WandbLogger()


def test_writes_through_tensorboard(fake_wandb: types.SimpleNamespace, tmp_path: Any) -> None:
    logger = WandbLogger(project="proj", name="exp")
    assert fake_wandb.init_kwargs["project"] == "proj"
    assert fake_wandb.init_kwargs["sync_tensorboard"] is True
    with pytest.raises(RuntimeError, match=r"logger\.load"):
        logger.log_test_data({"r": 1.0}, 0)
    assert logger.logged_data_path() is None
    logger.load(SummaryWriter(str(tmp_path)))
    assert logger.logged_data_path() == str(tmp_path)
    logger.log_test_data({"r": 1.0}, 0)
    accumulator = EventAccumulator(str(tmp_path))
    accumulator.Reload()
    assert [e.value for e in accumulator.Scalars("test/r")] == [1.0]
    logger.finalize()
    assert fake_wandb.run.finished


def test_checkpoint_artifacts(fake_wandb: types.SimpleNamespace, tmp_path: Any) -> None:
    checkpoint = tmp_path / "ckpt.pt"
    checkpoint.write_text("weights")
    logger = WandbLogger(save_interval=1)
    logger.save_data(3, 300, 30, lambda *_: str(checkpoint))
    (artifact,) = fake_wandb.run.artifacts
    assert artifact.name == "run_run42_checkpoint" and artifact.files == [str(checkpoint)]
    assert logger.restore_data() == (3, 300, 30)
    assert artifact.downloaded_to == str(tmp_path)
    assert logger.restored


def test_real_wandb_offline_run(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the real package in offline mode: a run directory with the run's data file appears,
    the data goes through TensorBoard, and a checkpoint is logged as an artifact."""
    import wandb  # the project's `wandb` extra, which `make test` installs

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_CONSOLE", "off")
    # wandb keeps the settings of its first run in this process (e.g. a disabled-mode run of
    # another test): start from a fresh setup so that the offline mode above applies
    wandb.teardown()
    logger = WandbLogger(
        project="tianshou-test", name="offline", log_dir=str(tmp_path), save_interval=1
    )
    try:
        logger.load(SummaryWriter(str(tmp_path / "tb")))
        logger.log_test_data({"returns_stat": {"mean": 3.5}}, step=7)
        checkpoint = tmp_path / "ckpt.pt"
        checkpoint.write_bytes(b"weights")
        logger.save_data(1, 100, 10, lambda epoch, env_step, step: str(checkpoint))
    finally:
        logger.finalize()
    assert wandb.run is None  # finished
    runs = list((tmp_path / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    assert list(runs[0].glob("*.wandb")), "the offline run wrote no data file"
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("test/returns_stat/mean")] == [(7, 3.5)]


def test_run_grouping_and_system_stats_options(fake_wandb: types.SimpleNamespace) -> None:
    WandbLogger(group="seeds", job_type="train", disable_stats=True)
    kwargs = fake_wandb.init_kwargs
    assert (kwargs["group"], kwargs["job_type"]) == ("seeds", "train")
    assert kwargs["settings"] == ("Settings", {"x_disable_stats": True})
    WandbLogger()
    assert fake_wandb.init_kwargs["group"] is None and fake_wandb.init_kwargs["settings"] is None


def test_save_data_guard_and_update_step_keyword(
    fake_wandb: types.SimpleNamespace, tmp_path: Any
) -> None:
    checkpoint = tmp_path / "ckpt.pt"
    checkpoint.write_text("weights")
    logger = WandbLogger(save_interval=2)
    for epoch in (1, 2, 3):
        logger.save_data(
            epoch, env_step=epoch, update_step=10 * epoch, save_checkpoint_fn=lambda *_: checkpoint
        )
    saved = [artifact.metadata["save/epoch"] for artifact in fake_wandb.run.artifacts]
    assert saved == [1, 3]
    assert fake_wandb.run.artifacts[-1].metadata["save/gradient_step"] == 30


def test_default_save_interval_uploads_a_checkpoint_every_epoch(
    fake_wandb: types.SimpleNamespace, tmp_path: Any
) -> None:
    checkpoint = tmp_path / "ckpt.pt"
    checkpoint.write_text("weights")
    logger = WandbLogger()
    for epoch in (1, 2, 3):
        logger.save_data(epoch, epoch, epoch, save_checkpoint_fn=lambda *_: str(checkpoint))
    assert [a.metadata["save/epoch"] for a in fake_wandb.run.artifacts] == [1, 2, 3]
