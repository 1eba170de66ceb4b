"""What an update reports: ``TrainingStats``, the wrapper algorithms' ``TrainingStatsWrapper``, and
the two loss records most algorithms return (one gradient step, or a sequence of them).

``TrainingStats`` and ``TrainingStatsWrapper`` are re-exported by
:mod:`tianshou.algorithm.algorithm_base`; the loss records by
:mod:`tianshou.algorithm.modelfree.reinforce`, their public homes.
"""

from dataclasses import dataclass, field
from typing import Any

from tianshou.data.stats import SequenceSummaryStats
from tianshou.utils.print import DataclassPPrintMixin


@dataclass(kw_only=True)
class TrainingStats(DataclassPPrintMixin):
    """What one update produced; algorithms subclass it to add their losses as float fields.

    :param train_time: wall-clock seconds the update took.
    :param smoothed_loss: losses averaged over recent updates, filled in by the trainer.
    """

    train_time: float = 0.0
    smoothed_loss: dict[str, float] = field(default_factory=dict)

    def get_loss_stats_dict(self) -> dict[str, float]:
        """Return the float-valued loss fields of this record, for loggers and progress bars."""
        reserved = {"train_time", "smoothed_loss"}
        losses: dict[str, float] = {}
        for name, value in vars(self).items():
            if name in reserved or value is None:
                continue
            if isinstance(value, SequenceSummaryStats):
                losses[name] = float(value.mean)
            elif isinstance(value, int | float):
                losses[name] = float(value)
        return losses


def _wrapped_stats(self: "TrainingStatsWrapper") -> TrainingStats:
    """The stats returned by the wrapped algorithm's update."""
    return self._wrapped_stats


@dataclass(kw_only=True, init=False)
class TrainingStatsWrapper(TrainingStats):
    """The stats of a wrapper algorithm (e.g. ICM): the wrapped algorithm's stats plus its own.

    Subclasses add the wrapper's losses as attributes; declared as fields of a
    ``@dataclass(kw_only=True, init=False)`` subclass, they are logged too. Reading an attribute
    the wrapper lacks falls back to the wrapped stats, so code written for the wrapped
    algorithm's stats keeps working. ``train_time`` and ``smoothed_loss`` are those of the
    wrapped stats, read and written through, since one update produced both records.
    ``dataclasses.asdict`` (what the trainer logs) gives the wrapped stats as a nested dict under
    ``wrapped_stats``.

    Once constructed, the record only accepts assignments to attributes that exist: an attribute
    of the wrapped stats is changed there (on both records where both have it), and a new name
    raises ``AttributeError``, which catches a misspelt loss name instead of logging nothing.
    Subclasses therefore set their own attributes in ``__init__`` *before* calling
    ``super().__init__(wrapped_stats)``.

    :param wrapped_stats: the stats returned by the wrapped algorithm's update.
    """

    # A read-only property that is also a dataclass field, so that ``asdict`` nests the wrapped
    # stats while the class itself has the ``wrapped_stats`` attribute.
    wrapped_stats: TrainingStats = property(_wrapped_stats)  # type: ignore[assignment]  # noqa: RUF009

    def __init__(self, wrapped_stats: TrainingStats) -> None:
        self._wrapped_stats = wrapped_stats

    def __setattr__(self, name: str, value: Any) -> None:
        wrapped = self.__dict__.get("_wrapped_stats")
        if wrapped is None:  # still being constructed (or copied/unpickled)
            super().__setattr__(name, value)
            return
        is_own = name in self.__dict__ or hasattr(type(self), name)
        in_wrapped = hasattr(wrapped, name)
        if not (is_own or in_wrapped):
            raise AttributeError(
                f"cannot add the new attribute {name!r} to {type(self).__name__}: neither it nor "
                f"the wrapped {type(wrapped).__name__} has it; declare it as a field and set it "
                "in __init__ before calling TrainingStatsWrapper.__init__"
            )
        if is_own:
            super().__setattr__(name, value)
        # properties such as train_time already write through to the wrapped stats
        if in_wrapped and not isinstance(getattr(type(self), name, None), property):
            setattr(wrapped, name, value)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes the wrapper lacks. The guard stops infinite recursion
        # while ``_wrapped_stats`` is not set yet (copying and unpickling create bare objects).
        if name == "_wrapped_stats":
            raise AttributeError(name)
        return getattr(self._wrapped_stats, name)

    @property  # type: ignore[misc]
    def train_time(self) -> float:
        return self._wrapped_stats.train_time

    @train_time.setter
    def train_time(self, value: float) -> None:
        self._wrapped_stats.train_time = value

    @property  # type: ignore[misc]
    def smoothed_loss(self) -> dict[str, float]:
        return self._wrapped_stats.smoothed_loss

    @smoothed_loss.setter
    def smoothed_loss(self, value: dict[str, float]) -> None:
        self._wrapped_stats.smoothed_loss = value

    def get_loss_stats_dict(self) -> dict[str, float]:
        """The wrapped stats' losses and the wrapper's own; the wrapper's win on equal names."""
        own = super().get_loss_stats_dict()
        return {**self._wrapped_stats.get_loss_stats_dict(), **own}


@dataclass(kw_only=True)
class LossSequenceTrainingStats(TrainingStats):
    """Statistics of an update made of several gradient steps: a summary of their losses."""

    loss: SequenceSummaryStats


@dataclass(kw_only=True)
class SimpleLossTrainingStats(TrainingStats):
    """Statistics of an update made of a single gradient step."""

    loss: float
