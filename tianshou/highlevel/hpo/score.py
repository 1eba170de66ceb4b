"""Scoring a configuration over seeds: the interquartile mean (IQM) of the runs' returns, as
recommended by Agarwal et al. (2021), with a stratified-bootstrap confidence interval from
``rliable``.

The IQM (the mean of the middle half, scipy's 25 % trimmed mean) is robust to one lucky or
unlucky seed, which is what makes a tuned configuration hold up on other seeds; with fewer than
four seeds nothing is trimmed and it is the plain mean.
"""

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.stats

BOOTSTRAP_REPS = 2000
"""Bootstrap replications of a confidence interval."""
CONFIDENCE = 0.95
"""Coverage of the confidence intervals."""


def iqm(returns: Sequence[float] | np.ndarray) -> float:
    """The interquartile mean of ``returns`` (one per seed)."""
    values = np.asarray(returns, dtype=float)
    if values.size == 0:
        raise ValueError("the IQM of no returns is undefined")
    return float(scipy.stats.trim_mean(values, proportiontocut=0.25))


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

    def to_dict(self) -> dict[str, float]:
        """The score as JSON-ready numbers."""
        return {"iqm": self.iqm, "ci_low": self.low, "ci_high": self.high}

    def __str__(self) -> str:
        return f"{self.iqm:.2f} [{self.low:.2f}, {self.high:.2f}]"


def iqm_with_interval(
    returns: Sequence[float] | np.ndarray, bootstrap_seed: int = 0
) -> ScoreWithInterval:
    """The IQM of ``returns`` (one per seed) with its :data:`CONFIDENCE` percentile-bootstrap
    interval (rliable's stratified bootstrap over the seeds).

    :param returns: the final test return of each seed.
    :param bootstrap_seed: seeds the bootstrap, so that the same returns give the same
        interval (the global numpy generator, which rliable also draws from, is seeded for the
        bootstrap and restored afterwards).
    """
    values = np.asarray(returns, dtype=float)
    point = iqm(values)
    global_state = np.random.get_state()  # rliable also draws from it; restored below
    try:
        intervals = _bootstrap_intervals(values, bootstrap_seed)
    finally:
        np.random.set_state(global_state)
    low, high = intervals[:, 0]
    return ScoreWithInterval(iqm=point, low=float(low), high=float(high))


def _bootstrap_intervals(values: np.ndarray, bootstrap_seed: int) -> np.ndarray:
    """rliable's interval of the IQM of ``values``, shape ``(2, 1)``."""
    from rliable import library

    absl_logger = logging.getLogger("absl")  # rliable says "Calculating estimates" at INFO
    absl_level = absl_logger.level
    absl_logger.setLevel(max(absl_level, logging.WARNING))
    try:
        return _rliable_intervals(library, values, bootstrap_seed)
    finally:
        absl_logger.setLevel(absl_level)


def _rliable_intervals(library: Any, values: np.ndarray, bootstrap_seed: int) -> np.ndarray:
    with warnings.catch_warnings():
        # rliable hands its generator to arch under a keyword that arch deprecates
        warnings.filterwarnings("ignore", category=FutureWarning, module="arch")
        np.random.seed(bootstrap_seed)
        _, intervals = library.get_interval_estimates(
            {"scores": values[:, None]},
            lambda scores: np.array([iqm(scores.ravel())]),
            reps=BOOTSTRAP_REPS,
            confidence_interval_size=CONFIDENCE,
            random_state=np.random.RandomState(bootstrap_seed),
        )
    return intervals["scores"]
