"""Aggregate scores of several runs with stratified-bootstrap confidence intervals, the way
Agarwal et al. (2021), "Deep Reinforcement Learning at the Edge of the Statistical Precipice",
recommend, computed by their library rliable: the interquartile mean (IQM) and the performance
profile.

Scores are laid out as rliable lays them out: runs (e.g. seeds) x tasks, optionally followed by
further axes (e.g. env steps), each of which gets its own estimate; a one-dimensional array is
the runs of one task. The bootstrap resamples the runs of each task ("stratified").

The seeding rule: every interval takes a ``seed`` (default :data:`DEFAULT_BOOTSTRAP_SEED`), and
each estimate's bootstrap starts afresh from it, so the same scores always give the same
interval, whatever else was estimated before. rliable's stratified bootstrap draws its
resamples from numpy's global generator (whatever generator it is handed); that generator is
therefore seeded for the duration of the bootstrap and its previous state restored afterwards,
leaving the caller's own draws from it undisturbed. rliable is imported only when an interval
is computed, as it is an optional dependency (the ``eval`` extra).
"""

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import scipy.stats

DEFAULT_BOOTSTRAP_SEED = 0
"""The seed of every bootstrap unless the caller chooses another."""
DEFAULT_BOOTSTRAP_REPS = 2000
"""Bootstrap replications of an interval unless the caller chooses another number."""
DEFAULT_CONFIDENCE = 0.95
"""Coverage of an interval unless the caller chooses another."""


def iqm(scores: np.ndarray | Sequence[float]) -> float:
    """The interquartile mean of all ``scores`` (any shape): the mean of the middle half, scipy's
    25 % trimmed mean, which is rliable's ``metrics.aggregate_iqm``. Robust to one lucky or
    unlucky run; with fewer than four scores nothing is trimmed and it is the plain mean.

    :raises ValueError: for no scores.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.size == 0:
        raise ValueError("the IQM of no scores is undefined")
    return float(scipy.stats.trim_mean(values, proportiontocut=0.25, axis=None))


def iqm_with_interval(
    scores: np.ndarray | Sequence[float],
    reps: int = DEFAULT_BOOTSTRAP_REPS,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """The IQM over runs and tasks of ``scores`` and its percentile stratified-bootstrap
    confidence interval.

    :param scores: runs x tasks (x further axes, each estimated separately), or the runs of one
        task as a one-dimensional array.
    :param reps: bootstrap replications; more give a steadier interval, taking longer.
    :param confidence: the interval's coverage, e.g. 0.95.
    :param seed: seeds the bootstrap (see the module docstring).
    :return: the IQM, shaped as the further axes (a 0-d array if there are none), and the lower
        and upper bounds of its interval stacked along a new first axis of length 2.
    """
    runs_tasks = _runs_by_tasks(scores)
    further_shape = runs_tasks.shape[2:]

    def iqm_over_runs_and_tasks(resampled: np.ndarray) -> np.ndarray:
        # the bootstrap evaluates this once per replication: one call for all further axes,
        # and scipy's quicker path over a whole array where there are none
        if resampled.ndim == 2:
            return np.array([scipy.stats.trim_mean(resampled, proportiontocut=0.25, axis=None)])
        flat = resampled.reshape(resampled.shape[0] * resampled.shape[1], -1)
        return np.asarray(scipy.stats.trim_mean(flat, proportiontocut=0.25, axis=0))

    point, interval = _interval_estimates(
        runs_tasks, iqm_over_runs_and_tasks, reps, confidence, seed
    )
    return point.reshape(further_shape), interval.reshape(2, *further_shape)


def performance_profile_with_interval(
    scores: np.ndarray | Sequence[float],
    thresholds: np.ndarray,
    reps: int = DEFAULT_BOOTSTRAP_REPS,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> tuple[np.ndarray, np.ndarray]:
    """The performance profile of ``scores`` (the fraction of all runs' scores above each
    threshold, rliable's score distribution) and its percentile stratified-bootstrap interval.

    :param scores: runs x tasks, or the runs of one task as a one-dimensional array.
    :param thresholds: the thresholds, one-dimensional.
    :param reps: bootstrap replications.
    :param confidence: the interval's coverage.
    :param seed: seeds the bootstrap (see the module docstring).
    :return: the profile ``(T,)`` and its lower and upper bounds ``(2, T)``.
    """
    from rliable import library

    taus = np.asarray(thresholds, dtype=np.float64)
    return _interval_estimates(
        _runs_by_tasks(scores),
        lambda resampled: library.score_distributions(resampled, taus),
        reps,
        confidence,
        seed,
    )


def _runs_by_tasks(scores: np.ndarray | Sequence[float]) -> np.ndarray:
    """``scores`` as a float array of at least two axes (runs x tasks x ...)."""
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]
    if values.ndim == 0 or values.size == 0:
        raise ValueError(
            f"scores must be runs x tasks (x further axes) with at least one run, got shape "
            f"{values.shape}"
        )
    return values


def _interval_estimates(
    scores: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    reps: int,
    confidence: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """rliable's point estimate ``statistic(scores)`` (one-dimensional) and its percentile
    stratified-bootstrap interval ``(2, ...)``, seeded by ``seed``."""
    from rliable import library

    absl_logger = logging.getLogger("absl")  # rliable says "Calculating estimates" at INFO
    absl_level = absl_logger.level
    absl_logger.setLevel(max(absl_level, logging.WARNING))
    try:
        with _seeded_global_rng(seed):
            points, intervals = library.get_interval_estimates(
                {"scores": scores},
                statistic,
                reps=reps,
                confidence_interval_size=confidence,
            )
    finally:
        absl_logger.setLevel(absl_level)
    return np.asarray(points["scores"]), np.asarray(intervals["scores"])


@contextmanager
def _seeded_global_rng(seed: int) -> Iterator[None]:
    """Seed numpy's global generator for the block (rliable's bootstrap draws from it), then
    restore its previous state."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)
