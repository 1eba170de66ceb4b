"""Merging running statistics (:class:`~tianshou.utils.statistics.RunningMeanStd`) across ranks.

Every rank updates its statistics with its own data (observations of its envs, returns of its
rollouts). At a merge, each rank contributes what it added since the previous merge, and every
rank folds all contributions into the agreed state in rank order, with the same arithmetic on
the same numbers, so the statistics come out bit-identical on every rank and equal (to float
rounding) to the statistics of all ranks' data together.
"""

from dataclasses import dataclass

import numpy as np

from tianshou.utils.statistics import RunningMeanStd


@dataclass(frozen=True)
class Moments:
    """Count, mean and sum of squared deviations (``M2``) of a stretch of samples, computed in
    float64, and the float type the statistics are kept in."""

    count: int
    mean: np.ndarray
    m2: np.ndarray
    dtype: np.dtype

    @staticmethod
    def of(stats: RunningMeanStd) -> "Moments":
        """The moments ``stats`` holds now."""
        mean = np.asarray(stats.mean, dtype=np.float64)
        var = np.asarray(stats.var, dtype=np.float64)
        dtype = np.result_type(np.asarray(stats.mean).dtype, np.float32)
        return Moments(int(stats.count), mean, var * stats.count, dtype)

    def since(self, earlier: "Moments") -> "Moments":
        """The moments of the samples added after ``earlier`` (inverting the merge formula);
        ``M2`` is floored at 0 against rounding."""
        added = self.count - earlier.count
        if added <= 0:
            return Moments(0, np.zeros_like(self.mean), np.zeros_like(self.m2), self.dtype)
        mean = (self.mean * self.count - earlier.mean * earlier.count) / added
        delta = mean - earlier.mean
        m2 = self.m2 - earlier.m2 - delta**2 * earlier.count * added / self.count
        return Moments(added, mean, np.maximum(m2, 0.0), self.dtype)

    def merged(self, other: "Moments") -> "Moments":
        """The moments of both stretches together (Chan et al.'s parallel formula), kept in
        the float type of the one that holds samples (``other``'s if both do)."""
        if other.count == 0:
            return self
        if self.count == 0:
            return other
        total = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * other.count / total
        m2 = self.m2 + other.m2 + delta**2 * self.count * other.count / total
        return Moments(total, mean, m2, other.dtype)

    def write_to(self, stats: RunningMeanStd) -> None:
        """Set ``stats`` to these moments, in their float type (nothing but the count changes
        while there are no samples)."""
        stats.count = self.count
        if self.count == 0:
            return
        stats.mean = self.mean.astype(self.dtype)
        stats.var = (self.m2 / self.count).astype(self.dtype)


def fold_contributions(agreed: Moments, contributions: list[Moments]) -> Moments:
    """``agreed`` merged with every rank's contribution, in rank order."""
    result = agreed
    for contribution in contributions:
        result = result.merged(contribution)
    return result
