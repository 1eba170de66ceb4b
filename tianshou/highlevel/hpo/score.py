"""Scoring a configuration over seeds: the interquartile mean (IQM) of the seeds' final returns,
as recommended by Agarwal et al. (2021), with a stratified-bootstrap confidence interval
(:mod:`tianshou.evaluation.interval_estimates`).

The IQM is robust to one lucky or unlucky seed, which is what makes a tuned configuration hold
up on other seeds; with fewer than four seeds nothing is trimmed and it is the plain mean.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from tianshou.evaluation.interval_estimates import DEFAULT_BOOTSTRAP_SEED, iqm_with_interval


@dataclass(frozen=True)
class ScoreWithInterval:
    """The IQM of the seeds' returns and the bounds of its confidence interval.

    :param iqm: the interquartile mean.
    :param low: the lower bound of the interval.
    :param high: the upper bound of the interval.
    """

    iqm: float
    low: float
    high: float

    @classmethod
    def of_returns(
        cls, returns: Sequence[float] | np.ndarray, bootstrap_seed: int = DEFAULT_BOOTSTRAP_SEED
    ) -> "ScoreWithInterval":
        """The IQM of ``returns`` (one per seed) with its 95 % percentile stratified-bootstrap
        interval.

        :param returns: the final test return of each seed.
        :param bootstrap_seed: seeds the bootstrap, so that the same returns give the same
            interval.
        """
        point, (low, high) = iqm_with_interval(np.asarray(returns), seed=bootstrap_seed)
        return cls(iqm=float(point), low=float(low), high=float(high))

    def to_dict(self) -> dict[str, float]:
        """The score as JSON-ready numbers."""
        return {"iqm": self.iqm, "ci_low": self.low, "ci_high": self.high}

    def __str__(self) -> str:
        return f"{self.iqm:.2f} [{self.low:.2f}, {self.high:.2f}]"
