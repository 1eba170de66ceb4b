"""The campaign's statistics over seeds, shared by the report's table and its figures: the
interquartile mean (IQM) of a task and algorithm's final returns with its bootstrap interval,
and the mean learning curve with its bootstrap band.

The IQM and its interval are the library's (:mod:`tianshou.evaluation.interval_estimates`,
rliable's percentile stratified bootstrap, seeded by its rule), with more replications than
its default: a report is built rarely and read often.
"""

from collections.abc import Sequence

import numpy as np

from tianshou.evaluation.interval_estimates import (
    DEFAULT_BOOTSTRAP_SEED,
    DEFAULT_CONFIDENCE,
    iqm,
    iqm_with_interval,
)

BOOTSTRAP_REPS = 10_000
"""Bootstrap replications of every interval and band of the report."""


def iqm_interval(
    scores: Sequence[float], reps: int = BOOTSTRAP_REPS
) -> tuple[float, tuple[float, float] | None]:
    """The IQM of ``scores`` (one per seed) and its 95% bootstrap confidence interval from
    ``reps`` resamples; None instead of an interval for fewer than two seeds, which have
    none."""
    if len(scores) < 2:
        return iqm(scores), None
    point, (low, high) = iqm_with_interval(np.asarray(scores), reps=reps)
    return float(point), (float(low), float(high))


def mean_band(
    curves: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = DEFAULT_BOOTSTRAP_SEED
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean over seeds (rows) of ``curves`` and its 95% percentile-bootstrap band from ``reps``
    resamples of whole curves, drawn from a generator seeded by ``seed``; the band is the mean
    itself for a single seed."""
    mean = curves.mean(axis=0)
    if len(curves) < 2:
        return mean, mean, mean
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(curves), size=(reps, len(curves)))
    means = curves[picks].mean(axis=1)
    tail = (1 - DEFAULT_CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail], axis=0)
    return mean, low, high
