"""Statistics records shared by collectors, algorithms and trainers.

They are keyword-only dataclasses so that a logger can flatten them into scalars by field name,
and so that adding a field never silently shifts positional arguments in user code.
"""

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from tianshou.utils.print import DataclassPPrintMixin

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import TrainingStats
    from tianshou.data.collector import CollectStats, CollectStatsBase


@dataclass(kw_only=True)
class SequenceSummaryStats(DataclassPPrintMixin):
    """Mean, standard deviation, maximum and minimum of a sequence of numbers (e.g. returns)."""

    mean: float
    std: float
    max: float
    min: float

    @classmethod
    def from_sequence(cls, sequence: Sequence[float | int] | np.ndarray) -> "SequenceSummaryStats":
        """Summarise ``sequence``; an empty sequence is an error, since it has no mean."""
        values = np.asarray(sequence, dtype=float)
        if values.size == 0:
            raise ValueError("cannot summarise an empty sequence: it has no mean, std, max or min")
        return cls(
            mean=float(values.mean()),
            std=float(values.std()),
            max=float(values.max()),
            min=float(values.min()),
        )

    @classmethod
    def from_single_value(cls, value: float | int) -> "SequenceSummaryStats":
        """The summary of a one-element sequence: the value itself with zero spread."""
        return cls(mean=float(value), std=0.0, max=float(value), min=float(value))

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def compute_dim_to_summary_stats(
    arr: Sequence[Sequence[float]] | np.ndarray,
) -> dict[int, SequenceSummaryStats]:
    """Summarise each column of a 2-d array separately, keyed by the column index.

    Used for per-dimension statistics such as the standard deviation of a continuous action
    distribution, where each action dimension is its own sequence over the collected steps.
    """
    values = np.asarray(arr, dtype=float)
    if values.ndim != 2:
        raise ValueError(f"expected a 2-d array (steps, dims), got shape {values.shape}")
    return {
        dim: SequenceSummaryStats.from_sequence(values[:, dim]) for dim in range(values.shape[1])
    }


@dataclass(kw_only=True)
class TimingStats(DataclassPPrintMixin):
    """Wall-clock seconds spent in each phase of training, and the resulting update speed."""

    total_time: float = 0.0
    """Seconds since the trainer started."""
    train_time: float = 0.0
    """Seconds spent in training steps (collection plus updates)."""
    train_time_collect: float = 0.0
    """Seconds spent collecting training data."""
    train_time_update: float = 0.0
    """Seconds spent in algorithm updates."""
    test_time: float = 0.0
    """Seconds spent in test collection."""
    update_speed: float = 0.0
    """Environment steps collected for training per second of training time."""


@dataclass(kw_only=True)
class InfoStats(DataclassPPrintMixin):
    """The trainer's counters and best result so far; what ``run_training`` returns."""

    update_step: int
    """Number of update steps (one per collect-and-update cycle, not per gradient step)."""
    best_score: float
    """The best test score so far (the mean test return unless a custom score is used)."""
    best_reward: float
    """The mean test return of the test step that reached ``best_score``."""
    best_reward_std: float
    """The standard deviation of the test returns of that test step."""
    train_step: int
    """Environment steps collected for training."""
    train_episode: int
    """Episodes finished during training collection."""
    test_step: int
    """Environment steps collected in test steps."""
    test_episode: int
    """Episodes run in test steps."""
    timing: TimingStats
    """Wall-clock timing of the run so far."""


@dataclass(kw_only=True)
class EpochStats(DataclassPPrintMixin):
    """What one epoch of training produced: last collection and update results, and counters."""

    epoch: int
    """The epoch number, starting from 1."""
    train_collect_stat: "CollectStatsBase | None"
    """The statistics of the last training collection of the epoch (None for offline training)."""
    test_collect_stat: "CollectStats | None"
    """The statistics of the epoch's test step (None if no test was run)."""
    training_stat: "TrainingStats | None"
    """The statistics of the last update of the epoch."""
    info_stat: InfoStats
    """The trainer's counters at the end of the epoch."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
