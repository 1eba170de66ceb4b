"""A logger writing TensorBoard event files through a ``torch.utils.tensorboard.SummaryWriter``.

Checkpoint counters are stored as the scalars ``save/epoch``, ``save/env_step`` and
``save/gradient_step`` (the update step, under the name earlier releases wrote; the value is also
the scalar's step), so
:meth:`TensorboardLogger.restore_data` can read them back with TensorBoard's own reader.
"""

from typing import TYPE_CHECKING, Any

import numpy as np

from tianshou.utils.logger.logger_base import (
    VALID_LOG_VALS_TYPE,
    BaseLogger,
    TRestoredData,
    flatten_dict_for_logging,
    nest_flat_keys,
)

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
    :param save_interval: minimum epochs between two checkpoints; None: a checkpoint after
        every epoch (the trainer calls :meth:`save_data` once per epoch).
    :param write_flush: flush the writer after every write, so the files are current while
        training runs (costs a little time per write).
    :param exclude_arrays: drop numpy arrays from what the ``log_*`` methods write, instead of
        writing them as histograms.
    """

    def __init__(
        self,
        writer: "SummaryWriter",
        training_interval: int = 1000,
        test_interval: int = 1,
        update_interval: int = 1000,
        info_interval: int = 1,
        save_interval: int | None = None,
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

    def prepare_dict_for_logging(
        self,
        input_dict: dict[str, Any],
        parent_key: str = "",
        delimiter: str = "/",
        exclude_arrays: bool = True,
    ) -> dict[str, VALID_LOG_VALS_TYPE]:
        """Flatten ``input_dict`` into ``"a/b"`` tags with scalar (or array) values.

        Values that are neither numbers nor arrays (strings, None, tensors) are dropped.

        :param input_dict: nested dict, e.g. ``dataclasses.asdict`` of a stats record.
        :param parent_key: prefix of every tag.
        :param delimiter: joins the levels of a tag.
        :param exclude_arrays: drop numpy arrays, keeping scalars only. The ``log_*`` methods
            pass the logger's ``exclude_arrays`` setting instead of this default.
        """
        return flatten_dict_for_logging(input_dict, parent_key, delimiter, exclude_arrays)

    def _prepare_for_write(self, log_data: dict[str, Any]) -> dict[str, VALID_LOG_VALS_TYPE]:
        """Flatten with the logger's ``exclude_arrays`` setting, so that kept arrays become
        histograms."""
        return self.prepare_dict_for_logging(log_data, exclude_arrays=self.exclude_arrays)

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

    def _record_checkpoint(
        self, epoch: int, env_step: int, update_step: int, checkpoint_path: str
    ) -> None:
        for key, value in zip(_SAVE_KEYS, (epoch, env_step, update_step), strict=True):
            self.writer.add_scalar(key, value, global_step=value)
        self.writer.flush()

    def restore_data(self) -> tuple[int, int, int]:
        self.writer.flush()
        accumulator = _load_scalars(self.writer.log_dir)
        tags = set(accumulator.Tags()["scalars"])
        epoch, env_step, update_step = (
            int(accumulator.Scalars(key)[-1].step) if key in tags else 0 for key in _SAVE_KEYS
        )
        self._restore_intervals(epoch, env_step, update_step)
        return epoch, env_step, update_step

    def logged_data_path(self) -> str:
        """The writer's log directory."""
        return str(self.writer.log_dir)

    def restore_logged_data(self, log_path: str) -> TRestoredData:
        accumulator = _load_scalars(log_path)
        flat = {
            tag: np.array([event.value for event in accumulator.Scalars(tag)])
            for tag in accumulator.Tags()["scalars"]
        }
        return nest_flat_keys(flat)

    def finalize(self) -> None:
        """Flush and close the event file (a later write opens a new one)."""
        self.writer.close()
