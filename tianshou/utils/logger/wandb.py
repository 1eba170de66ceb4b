"""A logger for Weights & Biases that writes through TensorBoard and syncs it to a W&B run.

``wandb`` is an optional dependency, imported only when a :class:`WandbLogger` is created. Offline
use works as with W&B itself: set ``WANDB_MODE=offline`` (runs are synced later with
``wandb sync``).
"""

import os
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tianshou.utils.logger.logger_base import VALID_LOG_VALS_TYPE, BaseLogger
from tianshou.utils.logger.tensorboard import TensorboardLogger

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter


def _import_wandb() -> ModuleType:
    try:
        import wandb
    except ImportError as error:
        raise ImportError(
            "WandbLogger needs the optional package 'wandb'; install it with "
            "`pip install wandb` (or the 'wandb' extra of this package)"
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
    :param save_interval: minimum epochs between two checkpoint uploads.
    :param write_flush: flush the TensorBoard writer after every write.
    :param project: the W&B project (default: ``$WANDB_PROJECT`` or ``"tianshou"``).
    :param name: the run's display name.
    :param entity: the W&B team or user.
    :param run_id: the id of a run to resume (W&B resumes it if it exists).
    :param config: hyper-parameters to store with the run (e.g. ``vars(args)``).
    :param monitor_gym: let W&B upload videos recorded by gymnasium.
    :param log_dir: directory for W&B's local files.
    """

    def __init__(
        self,
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int = 1000,
        write_flush: bool = True,
        project: str | None = None,
        name: str | None = None,
        entity: str | None = None,
        run_id: str | None = None,
        config: Any = None,
        monitor_gym: bool = True,
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
            sync_tensorboard=True,
            monitor_gym=monitor_gym,
            dir=log_dir,
            config=config,
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

    def save_data(
        self,
        epoch: int,
        env_step: int,
        gradient_step: int,
        save_checkpoint_fn: Callable[[int, int, int], str] | None = None,
    ) -> None:
        """Call ``save_checkpoint_fn`` and upload the file it returns as a ``model`` artifact
        carrying the three counters in its metadata."""
        if save_checkpoint_fn is None or not self.should_save(epoch):
            return
        self.last_save_step = epoch
        checkpoint_path = str(save_checkpoint_fn(epoch, env_step, gradient_step))
        artifact = self._wandb.Artifact(
            f"run_{self.wandb_run.id}_checkpoint",
            type="model",
            metadata={
                "save/epoch": epoch,
                "save/env_step": env_step,
                "save/gradient_step": gradient_step,
                "checkpoint_path": checkpoint_path,
            },
        )
        artifact.add_file(checkpoint_path)
        self.wandb_run.log_artifact(artifact)

    def restore_data(self) -> tuple[int, int, int]:
        """Download the run's latest checkpoint artifact next to its original path and return its
        counters."""
        artifact = self.wandb_run.use_artifact(f"run_{self.wandb_run.id}_checkpoint:latest")
        if artifact is None:
            raise RuntimeError(f"W&B run {self.wandb_run.id} has no checkpoint artifact to resume")
        metadata = artifact.metadata
        artifact.download(os.path.dirname(metadata["checkpoint_path"]))
        epoch, env_step, gradient_step = (
            int(metadata.get(key, 0))
            for key in ("save/epoch", "save/env_step", "save/gradient_step")
        )
        self._restore_intervals(epoch, env_step, gradient_step)
        self.restored = True
        return epoch, env_step, gradient_step

    def restore_logged_data(self, log_path: str) -> dict[str, Any]:
        """Read the mirrored TensorBoard files under ``log_path`` back."""
        if self.tensorboard_logger is None:
            raise RuntimeError("WandbLogger has no TensorBoard writer; call logger.load(...) first")
        return self.tensorboard_logger.restore_logged_data(log_path)

    def finalize(self) -> None:
        """Close the TensorBoard writer and finish the W&B run."""
        if self.tensorboard_logger is not None:
            self.tensorboard_logger.finalize()
        self.wandb_run.finish()
