"""A logger for Weights & Biases that writes through TensorBoard and syncs it to a W&B run.

``wandb`` is an optional dependency, imported only when a :class:`WandbLogger` is created. Offline
use works as with W&B itself: set ``WANDB_MODE=offline`` (runs are synced later with
``wandb sync``).
"""

import argparse
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tianshou.utils.logger.logger_base import VALID_LOG_VALS_TYPE, BaseLogger, TRestoredData
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.optional_dependency import install_hint

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter


def _import_wandb() -> ModuleType:
    try:
        import wandb
    except ImportError as error:
        raise ImportError(
            f"WandbLogger needs the optional package 'wandb'; {install_hint('wandb')}"
        ) from error
    return wandb


class WandbLogger(BaseLogger):
    """Log to a W&B run: data goes to a TensorBoard writer that W&B mirrors (``sync_tensorboard``),
    and checkpoints are uploaded as W&B artifacts.

    Call :meth:`load` with a ``SummaryWriter`` before training, e.g.
    ``logger.load(SummaryWriter(log_path))``.

    :param training_interval: minimum env steps between two writes of training data.
    :param test_interval: minimum env steps between two writes of test data.
    :param update_interval: minimum update steps between two writes of update data.
    :param info_interval: minimum epochs between two writes of info data.
    :param save_interval: minimum epochs between two checkpoint uploads; None: an upload after
        every epoch (the trainer calls :meth:`save_data` once per epoch).
    :param write_flush: flush the TensorBoard writer after every write.
    :param project: the W&B project (default: ``$WANDB_PROJECT`` or ``"tianshou"``).
    :param name: the run's display name.
    :param entity: the W&B team or user.
    :param run_id: the id of a run to resume (W&B resumes it if it exists).
    :param group: W&B group to file the run under (e.g. all seeds of one experiment).
    :param job_type: W&B job type of the run (e.g. ``"train"``, ``"eval"``), to filter runs by.
    :param config: hyper-parameters to store with the run (e.g. ``vars(args)``).
    :param monitor_gym: let W&B upload videos recorded by gymnasium.
    :param disable_stats: stop W&B from sampling system metrics (CPU, GPU, memory) in the
        background; None keeps W&B's default (sampling on).
    :param log_dir: directory for W&B's local files.
    """

    def __init__(
        self,
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int | None = None,
        write_flush: bool = True,
        project: str | None = None,
        name: str | None = None,
        entity: str | None = None,
        run_id: str | None = None,
        group: str | None = None,
        job_type: str | None = None,
        config: argparse.Namespace | dict[str, Any] | None = None,
        monitor_gym: bool = True,
        disable_stats: bool | None = False,
        log_dir: str | None = None,
    ) -> None:
        super().__init__(
            training_interval, test_interval, update_interval, info_interval, save_interval
        )
        self._wandb = _import_wandb()
        self.write_flush = write_flush
        self.restored = False
        self.wandb_run = self._wandb.run or self._wandb.init(
            project=project or os.getenv("WANDB_PROJECT", "tianshou"),
            name=name,
            id=run_id,
            resume="allow",
            entity=entity,
            group=group,
            job_type=job_type,
            sync_tensorboard=True,
            monitor_gym=monitor_gym,
            dir=log_dir,
            config=config,
            settings=self._wandb.Settings(x_disable_stats=disable_stats) if disable_stats else None,
        )
        self.tensorboard_logger: TensorboardLogger | None = None
        self.writer: SummaryWriter | None = None

    def load(self, writer: "SummaryWriter") -> None:
        """Attach the TensorBoard writer all data goes through."""
        self.writer = writer
        self.tensorboard_logger = TensorboardLogger(
            writer,
            self.training_interval,
            self.test_interval,
            self.update_interval,
            self.info_interval,
            self.save_interval,
            self.write_flush,
        )

    def write(self, step_type: str, step: int, data: dict[str, VALID_LOG_VALS_TYPE]) -> None:
        if self.tensorboard_logger is None:
            raise RuntimeError(
                "WandbLogger has no TensorBoard writer yet; call "
                "logger.load(SummaryWriter(log_path)) before training"
            )
        self.tensorboard_logger.write(step_type, step, data)

    def _record_checkpoint(
        self, epoch: int, env_step: int, update_step: int, checkpoint_path: str
    ) -> None:
        """Upload the checkpoint file as a ``model`` artifact carrying the three counters in
        its metadata."""
        artifact = self._wandb.Artifact(
            f"run_{self.wandb_run.id}_checkpoint",
            type="model",
            metadata={
                "save/epoch": epoch,
                "save/env_step": env_step,
                "save/gradient_step": update_step,
                "checkpoint_path": str(checkpoint_path),
            },
        )
        artifact.add_file(str(checkpoint_path))
        self.wandb_run.log_artifact(artifact)

    def restore_data(self) -> tuple[int, int, int]:
        """Download the run's latest checkpoint artifact next to its original path and return its
        counters."""
        artifact = self.wandb_run.use_artifact(f"run_{self.wandb_run.id}_checkpoint:latest")
        if artifact is None:
            raise RuntimeError(f"W&B run {self.wandb_run.id} has no checkpoint artifact to resume")
        metadata = artifact.metadata
        artifact.download(os.path.dirname(metadata["checkpoint_path"]))
        epoch, env_step, update_step = (
            int(metadata.get(key, 0))
            for key in ("save/epoch", "save/env_step", "save/gradient_step")
        )
        self._restore_intervals(epoch, env_step, update_step)
        self.restored = True
        return epoch, env_step, update_step

    def logged_data_path(self) -> str | None:
        """The TensorBoard writer's log directory (None before :meth:`load`)."""
        return None if self.writer is None else str(self.writer.log_dir)

    def restore_logged_data(self, log_path: str) -> TRestoredData:
        """Read the mirrored TensorBoard files under ``log_path`` back."""
        if self.tensorboard_logger is None:
            raise RuntimeError("WandbLogger has no TensorBoard writer; call logger.load(...) first")
        return self.tensorboard_logger.restore_logged_data(log_path)

    def finalize(self) -> None:
        """Close the TensorBoard writer and finish the W&B run."""
        if self.tensorboard_logger is not None:
            self.tensorboard_logger.finalize()
        self.wandb_run.finish()
