"""Evaluate an experiment run with several seeds the way Agarwal et al. (2021), "Deep
Reinforcement Learning at the Edge of the Statistical Precipice", recommend: the interquartile
mean (IQM) of the runs' returns with stratified-bootstrap confidence intervals, over env steps,
and the performance profile (fraction of runs whose final return exceeds a threshold).

:meth:`MultiRunExperimentResult.load_from_disk` reads back what the runs logged (one run
directory per seed below the experiment directory, as written by an experiment collection, e.g.
``ExperimentBuilder.build_seeded_collection``); :meth:`MultiRunExperimentResult.eval_results`
computes the statistics (:mod:`tianshou.evaluation.interval_estimates`, on rliable), plots
them with ``rliable.plot_utils`` and saves plots and numbers.

The intervals are rliable's percentile stratified bootstrap: at every env step (and for the
final returns of the profile) the runs are resampled with replacement, seeded by the rule of
:mod:`tianshou.evaluation.interval_estimates`, so that evaluating the same runs twice gives the
same intervals. rliable is imported only when an evaluation runs, as it is an optional
dependency (the ``eval`` extra).
"""

import json
import logging
import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal, cast

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tianshou.evaluation.interval_estimates import (
    DEFAULT_BOOTSTRAP_REPS,
    iqm_with_interval,
    performance_profile_with_interval,
)
from tianshou.utils.logger import DataScope
from tianshou.utils.logger.reading import read_logged_data, reader_for

log = logging.getLogger(__name__)

BOOTSTRAP_REPS = DEFAULT_BOOTSTRAP_REPS
"""Bootstrap replications of every confidence interval of an evaluation."""


@dataclass
class LoggedSummaryData:
    """A logged :class:`~tianshou.data.stats.SequenceSummaryStats`, one entry per write."""

    mean: np.ndarray
    std: np.ndarray
    max: np.ndarray
    min: np.ndarray


@dataclass
class LoggedCollectStats:
    """The logged collect statistics of one data scope of one run, one entry per write (fields
    the run did not log are None)."""

    env_step: np.ndarray | None = None
    n_collected_episodes: np.ndarray | None = None
    n_collected_steps: np.ndarray | None = None
    collect_time: np.ndarray | None = None
    collect_speed: np.ndarray | None = None
    returns_stat: LoggedSummaryData | None = None
    lens_stat: LoggedSummaryData | None = None

    @classmethod
    def from_data_dict(cls, data: dict) -> "LoggedCollectStats":
        """Build the record from the restored data of one scope (e.g. ``restored["test"]``).

        Nested summaries become :class:`LoggedSummaryData`; keys that are not fields of this
        class (e.g. per-dimension action spreads) are ignored.

        :param data: ``{"env_step": array, "returns_stat": {"mean": array, ...}, ...}``.
        """
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                continue
            if isinstance(value, dict):
                value = LoggedSummaryData(**{k: value[k] for k in ("mean", "std", "max", "min")})
            values[key] = value
        return cls(**values)


@dataclass
class EvaluationSequenceEntry:
    """The statistics of the runs' returns at one env step.

    :param env_step: the env step the runs were evaluated at.
    :param iqm: the interquartile mean of the runs' mean episode returns at that step.
    :param iqm_confidence_interval: the lower and upper bound of the IQM's stratified-bootstrap
        confidence interval (95 % coverage).
    :param rew: the mean over the runs of their mean episode returns.
    :param rew_std: the standard deviation over the runs of their mean episode returns.
    :param returns: the mean episode return of each run at that step, shape ``(num_runs,)``;
        None if not recorded.
    """

    env_step: int
    iqm: float
    iqm_confidence_interval: tuple[float, float]
    rew: float
    rew_std: float
    returns: np.ndarray | None = None


def _read_scope(run_dir: str, scope: DataScope) -> LoggedCollectStats:
    """The collect statistics logged in ``run_dir`` for ``scope``."""
    data = read_logged_data(run_dir).get(scope.value)
    return LoggedCollectStats.from_data_dict(data if isinstance(data, dict) else {})


def _returns_over_steps(
    stats: LoggedCollectStats, run_dir: str, max_env_step: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """The env steps and mean returns a run logged, up to ``max_env_step``, NaNs dropped."""
    if stats.env_step is None or stats.returns_stat is None:
        return np.array([]), np.array([])
    steps, returns = stats.env_step, stats.returns_stat.mean
    if len(steps) != len(returns):
        raise ValueError(
            f"{run_dir}: {len(steps)} env steps but {len(returns)} logged mean returns; "
            f"returns cannot be matched to steps (some collections finished no episode)"
        )
    keep = ~np.isnan(returns)
    if max_env_step is not None:
        keep &= steps <= max_env_step
    return steps[keep].astype(int), returns[keep]


def _align(runs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Put the runs' returns on common env steps: the steps themselves if all runs share them,
    else the steps of the run evaluated least often (within the range every run covers), with
    each run's returns linearly interpolated there."""
    steps_list = [steps for steps, _ in runs]
    if all(np.array_equal(steps_list[0], steps) for steps in steps_list):
        return steps_list[0], np.stack([returns for _, returns in runs])
    low = max(steps[0] for steps in steps_list)
    high = min(steps[-1] for steps in steps_list)
    grid = min(steps_list, key=len)
    grid = grid[(grid >= low) & (grid <= high)]
    if len(grid) == 0:
        raise ValueError("the runs' evaluation env steps do not overlap; cannot align them")
    return grid, np.stack([np.interp(grid, steps, returns) for steps, returns in runs])


def _aligned_returns_of_runs(
    stats: list[LoggedCollectStats], run_dirs: list[str], max_env_step: int | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """The common env steps ``(E,)`` and the runs' mean returns there ``(R, E)``; None if some
    run logged no returns (of the scope ``stats`` belong to)."""
    runs = [_returns_over_steps(s, d, max_env_step) for s, d in zip(stats, run_dirs, strict=True)]
    if any(len(steps) == 0 for steps, _ in runs):
        return None
    return _align(runs)


@dataclass
class MultiRunExperimentResult:
    """The logged returns of several runs (e.g. seeds) of one experiment, on common env steps.

    The arrays' suffixes name their axes: ``E`` env steps, ``R`` runs.

    :param exp_dir: the experiment directory; plots and JSON are saved here.
    :param exp_name: the name shown in plots and results (e.g. the algorithm).
    :param test_episode_returns_RE: each run's mean test episode return at each of
        ``test_env_steps_E``; None if some run logged no test returns.
    :param test_env_steps_E: the env steps of the test returns.
    :param training_episode_returns_RE: each run's mean return of the episodes finished in the
        training collection at each of ``training_env_steps_E``; None if some run logged none.
    :param training_env_steps_E: the env steps of the training returns.
    :param run_dirs: the run directories, one per run (empty if not read from disk).
    :param test_stats: all logged test statistics of each run.
    :param training_stats: all logged training-collection statistics of each run.
    :param max_env_step: evaluations after this env step were left out (None: none).
    """

    exp_dir: str
    exp_name: str
    test_episode_returns_RE: np.ndarray | None
    test_env_steps_E: np.ndarray | None
    training_episode_returns_RE: np.ndarray | None
    training_env_steps_E: np.ndarray | None
    run_dirs: list[str] = field(default_factory=list)
    test_stats: list[LoggedCollectStats] = field(default_factory=list)
    training_stats: list[LoggedCollectStats] = field(default_factory=list)
    max_env_step: int | None = None

    @classmethod
    def load_from_disk(
        cls, exp_dir: str, exp_name: str | None = None, max_env_step: int | None = None
    ) -> "MultiRunExperimentResult":
        """Read the logs of every run directory directly below ``exp_dir``.

        A run directory holds TensorBoard event files or the CSV logger's files; other entries
        (e.g. saved plots) are skipped. Runs evaluated at different env steps are interpolated
        onto common ones: the steps of the run evaluated least often, within the range all runs
        cover.

        :param exp_dir: the experiment directory.
        :param exp_name: the name shown in plots; None: the name of ``exp_dir``.
        :param max_env_step: ignore evaluations after this env step (None: all).
        :raises ValueError: if ``exp_dir`` holds no run directory with logs.
        """
        exp_dir = os.path.abspath(exp_dir)
        candidates = sorted(
            entry.path
            for entry in os.scandir(exp_dir)
            if entry.is_dir() and not entry.name.startswith(".")
        )
        run_dirs = [path for path in candidates if reader_for(path) is not None]
        if not run_dirs:
            raise ValueError(
                f"no run directories with logs (TensorBoard event files or CSV files) found "
                f"directly below {exp_dir}; pass the directory that holds one sub-directory per "
                f"run (seed) of the experiment"
            )
        log.info(f"Loading {len(run_dirs)} runs from {exp_dir}")
        test_stats = [_read_scope(d, DataScope.TEST) for d in run_dirs]
        training_stats = [_read_scope(d, DataScope.TRAINING) for d in run_dirs]
        test = _aligned_returns_of_runs(test_stats, run_dirs, max_env_step)
        training = _aligned_returns_of_runs(training_stats, run_dirs, max_env_step)
        return cls(
            exp_dir=exp_dir,
            exp_name=exp_name if exp_name is not None else os.path.basename(exp_dir),
            test_episode_returns_RE=None if test is None else test[1],
            test_env_steps_E=None if test is None else test[0],
            training_episode_returns_RE=None if training is None else training[1],
            training_env_steps_E=None if training is None else training[0],
            run_dirs=run_dirs,
            test_stats=test_stats,
            training_stats=training_stats,
            max_env_step=max_env_step,
        )

    def _aligned_returns(self, scope: DataScope) -> tuple[np.ndarray, np.ndarray]:
        """The env steps ``(E,)`` and the runs' mean returns there ``(R, E)`` of ``scope``."""
        if scope == DataScope.TEST:
            steps, returns = self.test_env_steps_E, self.test_episode_returns_RE
            stats = self.test_stats
        else:
            steps, returns = self.training_env_steps_E, self.training_episode_returns_RE
            stats = self.training_stats
        if steps is not None and returns is not None:
            return steps, returns
        without = [
            d
            for s, d in zip(stats, self.run_dirs, strict=True)
            if len(_returns_over_steps(s, d, self.max_env_step)[0]) == 0
        ]
        raise ValueError(f"no {scope.value} returns logged in {', '.join(without) or self.exp_dir}")

    def to_evaluation_sequence(
        self, scope: DataScope = DataScope.TEST
    ) -> list[EvaluationSequenceEntry]:
        """The statistics of the runs' returns at each common env step, in order of env steps.

        :param scope: ``DataScope.TEST`` (test episodes) or ``DataScope.TRAINING`` (episodes
            finished during training collection).
        """
        scope = DataScope(scope)
        steps_E, returns_RE = self._aligned_returns(scope)
        iqm_E, iqm_ci_2E = iqm_with_interval(returns_RE[:, None, :], reps=BOOTSTRAP_REPS)
        mean_E, std_E = returns_RE.mean(axis=0), returns_RE.std(axis=0)
        return [
            EvaluationSequenceEntry(
                env_step=int(step),
                iqm=float(iqm_E[i]),
                iqm_confidence_interval=(float(iqm_ci_2E[0, i]), float(iqm_ci_2E[1, i])),
                rew=float(mean_E[i]),
                rew_std=float(std_E[i]),
                returns=returns_RE[:, i],
            )
            for i, step in enumerate(steps_E)
        ]

    def eval_results(
        self,
        algo_name: str | None = None,
        score_thresholds: np.ndarray | None = None,
        save_as_json: bool = True,
        save_plots: bool = True,
        show_plots: bool = True,
        scope: DataScope = DataScope.TEST,
        ax_iqm_sample_efficiency: Axes | None = None,
        ax_performance_profile: Axes | None = None,
        algo2color: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Compute the IQM over env steps and the performance profile of the final returns,
        both with 95 % stratified-bootstrap confidence intervals, and plot them.

        :param algo_name: the label in plots and results; None: :attr:`exp_name`.
        :param score_thresholds: the return thresholds of the performance profile; None: 101
            values from the lowest to the highest final return.
        :param save_as_json: write the numbers to ``<exp_dir>/<scope>_rliable_results.json``.
        :param save_plots: save ``<scope>_iqm_sample_efficiency.png`` and
            ``<scope>_performance_profile.png`` into ``exp_dir`` (the default).
        :param show_plots: show the plots in a window (``pyplot.show``); otherwise they are
            drawn on figures that need no GUI backend.
        :param scope: ``DataScope.TEST`` or ``DataScope.TRAINING`` returns.
        :param ax_iqm_sample_efficiency: draw the IQM curve here (e.g. to compare algorithms in
            one plot); None: on a new figure.
        :param ax_performance_profile: draw the performance profile here; None: a new figure.
        :param algo2color: colors by algorithm label; None: seaborn's colorblind palette.
        :return: the numbers (also written as JSON): env steps, IQM with lower/upper bounds,
            the runs' returns, and the profile's thresholds, fractions and bounds.
        """
        scope = DataScope(scope)
        name = algo_name if algo_name is not None else self.exp_name
        steps_E, returns_RE = self._aligned_returns(scope)
        final_R = returns_RE[:, -1]
        if score_thresholds is None:
            score_thresholds = np.linspace(final_R.min(), final_R.max(), 101)
        thresholds = np.asarray(score_thresholds, dtype=float)
        iqm, iqm_ci = iqm_with_interval(returns_RE[:, None, :], reps=BOOTSTRAP_REPS)
        profile, profile_ci = performance_profile_with_interval(
            final_R, thresholds, reps=BOOTSTRAP_REPS
        )
        results = {
            "algo_name": name,
            "scope": scope.value,
            "num_runs": len(returns_RE),
            "env_steps": steps_E,
            "iqm": iqm,
            "iqm_ci": iqm_ci,
            "returns": returns_RE,
            "score_thresholds": thresholds,
            "performance_profile": profile,
            "performance_profile_ci": profile_ci,
        }
        results = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in results.items()}
        if save_as_json:
            with open(os.path.join(self.exp_dir, f"{scope.value}_rliable_results.json"), "w") as f:
                json.dump(results, f, indent=2)
        self._plot(
            results,
            save_plots,
            show_plots,
            ax_iqm_sample_efficiency,
            ax_performance_profile,
            algo2color,
        )
        return results

    def _plot(
        self,
        results: dict[str, Any],
        save_plots: bool,
        show_plots: bool,
        ax_iqm: Axes | None,
        ax_profile: Axes | None,
        algo2color: dict[str, str] | None,
    ) -> None:
        """Draw the IQM curve and the performance profile of ``results``; save and show them."""
        from rliable import plot_utils

        name, scope = results["algo_name"], results["scope"]
        ax_iqm = ax_iqm if ax_iqm is not None else _new_axes(show_plots)
        plot_utils.plot_sample_efficiency_curve(
            np.asarray(results["env_steps"]),
            {name: np.asarray(results["iqm"])},
            {name: np.asarray(results["iqm_ci"])},
            algorithms=[name],
            colors=algo2color,
            xlabel="env steps",
            ylabel=f"IQM of {scope} episode return",
            ax=ax_iqm,
            labelsize="large",
            ticklabelsize="large",
        )
        ax_iqm.legend()
        ax_profile = ax_profile if ax_profile is not None else _new_axes(show_plots)
        plot_utils.plot_performance_profiles(
            {name: np.asarray(results["performance_profile"])},
            np.asarray(results["score_thresholds"]),
            performance_profile_cis={name: np.asarray(results["performance_profile_ci"])},
            colors=algo2color,
            xlabel=r"final episode return ($\tau$)",
            ylabel=r"fraction of runs with return $> \tau$",
            ax=ax_profile,
        )
        ax_profile.legend()
        if save_plots:
            for ax, file in (
                (ax_iqm, "iqm_sample_efficiency"),
                (ax_profile, "performance_profile"),
            ):
                cast(Figure, ax.figure).savefig(
                    os.path.join(self.exp_dir, f"{scope}_{file}.png"), bbox_inches="tight"
                )
        if show_plots:
            import matplotlib.pyplot as plt

            plt.show()


def _new_axes(interactive: bool) -> Axes:
    """New axes: on a pyplot figure (shown by ``pyplot.show``) if ``interactive``, else on a
    plain figure rendered by the non-interactive Agg canvas, touching no global pyplot state."""
    if interactive:
        import matplotlib.pyplot as plt

        return plt.subplots(figsize=(7, 5))[1]
    return Figure(figsize=(7, 5)).add_subplot()


def load_and_eval_experiment(
    log_dir: str,
    show_plots: bool = True,
    save_plots: bool = True,
    save_as_json: bool = True,
    scope: DataScope | Literal["both"] = DataScope.TEST,
    max_env_step: int | None = None,
) -> MultiRunExperimentResult:
    """Load the runs below ``log_dir`` and evaluate them (see
    :meth:`MultiRunExperimentResult.eval_results`).

    :param log_dir: the experiment directory with one sub-directory per run.
    :param show_plots: show the plots.
    :param save_plots: save the plots into ``log_dir``.
    :param save_as_json: save the numbers into ``log_dir``.
    :param scope: evaluate ``DataScope.TEST`` or ``DataScope.TRAINING`` returns, or ``"both"``
        (test first, each with its own plots and JSON file).
    :param max_env_step: ignore evaluations after this env step.
    """
    scopes = [DataScope.TEST, DataScope.TRAINING] if scope == "both" else [DataScope(scope)]
    result = MultiRunExperimentResult.load_from_disk(log_dir, max_env_step=max_env_step)
    for evaluated_scope in scopes:
        result.eval_results(
            save_as_json=save_as_json,
            save_plots=save_plots,
            show_plots=show_plots,
            scope=evaluated_scope,
        )
    return result
