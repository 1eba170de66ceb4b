"""Running statistics: a windowed moving average and a running mean/std for normalisation."""

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import torch


class MovAvg:
    """Moving average and standard deviation over the last ``size`` finite values.

    Infinite and NaN values are dropped on arrival, so one diverged episode does not poison the
    reported average.

    :param size: window length; values older than the last ``size`` are forgotten (a size of 0
        or less keeps everything).

    Example::

        >>> stat = MovAvg(size=2)
        >>> stat.add([1.0, float("nan"), 3.0, 5.0])
        4.0
        >>> stat.std()
        1.0
    """

    def __init__(self, size: int = 100) -> None:
        self.size = size
        self.cache: list[float] = []

    def add(self, data_array: "float | Sequence[float] | np.ndarray | torch.Tensor") -> float:
        """Add a scalar, a sequence of scalars or a tensor; return the new average."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(data_array, torch.Tensor):
            data_array = data_array.detach().cpu().numpy()
        values = np.asarray(data_array, dtype=float).reshape(-1)
        self.cache.extend(values[np.isfinite(values)].tolist())
        if self.size > 0 and len(self.cache) > self.size:
            self.cache = self.cache[-self.size :]
        return self.get()

    def get(self) -> float:
        """The average of the window (0.0 while empty)."""
        return float(np.mean(self.cache)) if self.cache else 0.0

    def mean(self) -> float:
        """Same as :meth:`get`."""
        return self.get()

    def std(self) -> float:
        """The (population) standard deviation of the window (0.0 while empty)."""
        return float(np.std(self.cache)) if self.cache else 0.0


def _mean_and_variance(data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.mean`` and ``np.var`` over the first axis, bit for bit; for float32/float64 arrays
    computed with the same reductions directly, at half the cost of the two calls' argument
    handling (which is most of their time for the few rows of one vector step)."""
    if isinstance(data, np.ndarray) and data.dtype in (np.float32, np.float64):
        n = len(data)
        mean = np.add.reduce(data, axis=0) / n
        centred = data - mean
        return mean, np.add.reduce(centred * centred, axis=0) / n
    return np.mean(data, axis=0), np.var(data, axis=0)


class RunningMeanStd:
    """Running mean and variance of a stream of batches, used to normalise observations.

    Batches are merged with the parallel-variance formula of Chan et al., so the result equals
    the statistics of all data seen so far regardless of how it was split into batches.

    :param mean: initial mean estimate (a float or an array shaped like one sample).
    :param std: initial variance estimate. (The name ``std`` is kept from the API we match,
        where this value has always been used as the variance.)
    :param clip_max: normalised values are clipped to ``[-clip_max, clip_max]``; None or 0
        disables clipping.
    :param epsilon: added to the variance before the square root, to avoid division by zero.

    Example::

        >>> rms = RunningMeanStd()
        >>> rms.update(np.array([[0.0], [2.0]]))
        >>> rms.mean, rms.var
        (array([1.]), array([1.]))
        >>> rms.norm(np.array([3.0])).round(6)  # (3 - 1) / sqrt(1 + eps)
        array([2.])
    """

    def __init__(
        self,
        mean: float | np.ndarray = 0.0,
        std: float | np.ndarray = 1.0,
        clip_max: float | None = 10.0,
        epsilon: float = np.finfo(np.float32).eps.item(),
    ) -> None:
        self.mean, self.var = mean, std
        self.clip_max = clip_max
        self.count = 0
        self.eps = epsilon

    def norm(self, data_array: Any) -> Any:
        """Return ``(data - mean) / sqrt(var + eps)``, clipped to ``clip_max``."""
        data_array = (data_array - self.mean) / np.sqrt(self.var + self.eps)
        if self.clip_max:
            data_array = np.clip(data_array, -self.clip_max, self.clip_max)
        return data_array

    def update(self, data_array: np.ndarray) -> None:
        """Merge a batch of samples (first axis = samples) into the running mean and variance."""
        batch_mean, batch_var = _mean_and_variance(data_array)
        batch_count = len(data_array)
        total_count = self.count + batch_count
        delta = batch_mean - self.mean
        new_mean = self.mean + delta * batch_count / total_count
        sum_sq = (
            self.var * self.count
            + batch_var * batch_count
            + delta**2 * self.count * batch_count / total_count
        )
        self.mean, self.var = new_mean, sum_sq / total_count
        self.count = total_count
