"""A logger writing TensorBoard event files through a ``torch.utils.tensorboard.SummaryWriter``.

Checkpoint counters are stored as the scalars ``save/epoch``, ``save/env_step`` and
``save/gradient_step`` (the value is also the scalar's step), so
:meth:`TensorboardLogger.restore_data` can read them back with TensorBoard's own reader.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from tianshou.utils.logger.logger_base import VALID_LOG_VALS_TYPE, BaseLogger, nest_flat_keys

if TYPE_CHECKING:
    from torch.utils.tensorboard import SummaryWriter

_SAVE_KEYS = ("save/epoch", "save/env_step", "save/gradient_step")


def _load_scalars(log_path: str) -> Any:
    """An ``EventAccumulator`` over ``log_path`` with all scalars loaded (no sampling limit)."""
    from tensorboard.backend.event_processing import event_accumulator

    accumulator = event_accumulator.EventAccumulator(
        log_path, size_guidance={event_accumulator.SCALARS: 0}
    )
    accumulator.Reload()
    return accumulator


class TensorboardLogger(BaseLogger):
    """Write training statistics as TensorBoard scalars (and, if arrays are kept, histograms).

    Keys are ``<scope>/<flattened key>``, e.g. ``test/returns_stat/mean``; each write also records
    the step counter itself (e.g. ``training/env_step``).

    :param writer: the ``SummaryWriter`` to write to; its ``log_dir`` is read back on resume.
    :param training_interval: minimum env steps between two writes of training data.
    :param test_interval: minimum env steps between two writes of test data.
    :param update_interval: minimum update steps between two writes of update data.
    :param info_interval: minimum epochs between two writes of info data.
    :param save_interval: minimum epochs between two checkpoints.
    :param write_flush: flush the writer after every write, so the files are current while
        training runs (costs a little time per write).
    :param exclude_arrays: drop numpy arrays instead of writing them as histograms.
    """

    def __init__(
        self,
        writer: "SummaryWriter",
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int = 1,
        write_flush: bool = True,
        exclude_arrays: bool = True,
    ) -> None:
        super().__init__(
            training_interval,
            test_interval,
            update_interval,
            info_interval,
            save_interval,
            exclude_arrays,
        )
        self.write_flush = write_flush
        self.writer = writer

    def write(self, step_type: str, step: int, data: dict[str, VALID_LOG_VALS_TYPE]) -> None:
        scope = step_type.split("/", 1)[0]
        self.writer.add_scalar(step_type, step, global_step=step)
        for key, value in data.items():
            tag = f"{scope}/{key}"
            if isinstance(value, np.ndarray):
                self.writer.add_histogram(tag, value, global_step=step, bins="auto")
            else:
                self.writer.add_scalar(tag, value, global_step=step)
        if self.write_flush:
            self.writer.flush()

    def save_data(
        self,
        epoch: int,
        env_step: int,
        gradient_step: int,
        save_checkpoint_fn: Callable[[int, int, int], str] | None = None,
    ) -> None:
        if save_checkpoint_fn is None or not self.should_save(epoch):
            return
        self.last_save_step = epoch
        save_checkpoint_fn(epoch, env_step, gradient_step)
        for key, value in zip(_SAVE_KEYS, (epoch, env_step, gradient_step), strict=True):
            self.writer.add_scalar(key, value, global_step=value)
        self.writer.flush()

    def restore_data(self) -> tuple[int, int, int]:
        self.writer.flush()
        accumulator = _load_scalars(self.writer.log_dir)
        tags = set(accumulator.Tags()["scalars"])
        epoch, env_step, gradient_step = (
            int(accumulator.Scalars(key)[-1].step) if key in tags else 0 for key in _SAVE_KEYS
        )
        self._restore_intervals(epoch, env_step, gradient_step)
        return epoch, env_step, gradient_step

    def restore_logged_data(self, log_path: str) -> dict[str, Any]:
        accumulator = _load_scalars(log_path)
        flat = {
            tag: np.array([event.value for event in accumulator.Scalars(tag)])
            for tag in accumulator.Tags()["scalars"]
        }
        return nest_flat_keys(flat)

    def finalize(self) -> None:
        """Flush and close the event file (a later write opens a new one)."""
        self.writer.close()
