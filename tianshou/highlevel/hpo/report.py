"""The report of a search: ``study.json``, a printed table of the top trials and of the
re-evaluation, and plots (optimisation history, parameter importances, re-evaluation).

Reading it: a trial's *score* is the IQM over the search seeds of the final test returns, with
its 95 % bootstrap interval; wide, overlapping intervals mean the search cannot tell those
configurations apart with that many seeds. The re-evaluation table is what to trust: it gives
each top configuration's search rank next to its rank on fresh seeds.
"""

import json
import logging
import os
import warnings
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from tianshou.highlevel.hpo._optuna import import_optuna
from tianshou.highlevel.hpo.best_config import BestConfiguration
from tianshou.highlevel.hpo.reevaluation import ReevaluationReport, top_trials
from tianshou.highlevel.hpo.space import format_hyperparameters

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)


def _trial_entry(trial: "optuna.trial.FrozenTrial", rank: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "trial_number": trial.number,
        "score": trial.user_attrs.get("score"),
        "hyperparameters": trial.user_attrs.get("hyperparameters"),
        "seeds": trial.user_attrs.get("seeds"),
        "final_test_returns": [r[-1] for r in trial.user_attrs.get("test_returns", [])],
    }


def study_report(
    study: "optuna.Study",
    algorithm: str,
    num_top_trials: int,
    reevaluation: ReevaluationReport | None,
    best: BestConfiguration | None,
) -> dict[str, Any]:
    """The content of ``study.json``.

    :param study: the searched study.
    :param algorithm: the algorithm's name.
    :param num_top_trials: how many of the best complete trials to list.
    :param reevaluation: the re-evaluation of the top configurations (None: not done).
    :param best: the chosen configuration (None: no complete trial).
    """
    optuna = import_optuna()
    states = [t.state for t in study.get_trials(deepcopy=False)]
    return {
        "study_name": study.study_name,
        "algorithm": algorithm,
        "num_trials": len(states),
        "num_trials_by_state": {s.name: states.count(s) for s in optuna.trial.TrialState},
        "top_trials": [
            _trial_entry(t, rank)
            for rank, t in enumerate(top_trials(study, num_top_trials), start=1)
        ],
        "reevaluation": None if reevaluation is None else reevaluation.to_dict(),
        "reevaluation_summary": None if reevaluation is None else reevaluation.summary(),
        "best": None if best is None else vars(best),
    }


def save_report(report: dict[str, Any], path: str) -> None:
    """Write ``report`` as JSON (tuples as lists)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(report, f, indent=2, default=list)


def _score_text(score: dict[str, float] | None) -> str:
    if score is None:
        return "-"
    return f"{score['iqm']:8.2f} [{score['ci_low']:.2f}, {score['ci_high']:.2f}]"


def format_report(report: dict[str, Any]) -> str:
    """The printed tables: the top trials by search score, then the re-evaluation."""
    lines = [
        f"Study {report['study_name']} ({report['algorithm']}): {report['num_trials']} trials, "
        + ", ".join(f"{n} {s.lower()}" for s, n in report["num_trials_by_state"].items() if n),
        "",
        f"{'rank':>4}  {'trial':>5}  {'IQM [95% CI] on search seeds':<32}  hyper-parameters",
    ]
    for entry in report["top_trials"]:
        lines.append(
            f"{entry['rank']:>4}  {entry['trial_number']:>5}  {_score_text(entry['score']):<32}  "
            f"{format_hyperparameters(entry['hyperparameters'])}"
        )
    reevaluation = report["reevaluation"]
    if reevaluation is not None:
        lines += [
            "",
            f"Re-evaluation on fresh seeds {reevaluation['seeds']}:",
            f"{'trial':>5}  {'search rank':>11}  {'new rank':>8}  "
            f"{'search IQM [95% CI]':<32}  {'fresh-seed IQM [95% CI]':<32}",
        ]
        for c in reevaluation["configurations"]:
            lines.append(
                f"{c['trial_number']:>5}  {c['search_rank']:>11}  {c['reevaluation_rank']:>8}  "
                f"{_score_text(c['search_score']):<32}  {_score_text(c['reevaluation_score']):<32}"
            )
        lines.append(report["reevaluation_summary"])
    return "\n".join(lines)


def _save_optuna_plot(plot: Any, study: "optuna.Study", path: str) -> bool:
    """Draw one of ``optuna.visualization.matplotlib``'s plots into ``path``; False (with a
    warning in the log) if the study cannot be drawn that way yet (e.g. too few trials)."""
    import matplotlib.pyplot as plt

    optuna = import_optuna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        try:
            ax = plot(study)
        except (ValueError, RuntimeError) as error:
            log.warning(f"{os.path.basename(path)} not drawn: {error}")
            return False
    figure = ax.figure
    figure.savefig(path, bbox_inches="tight")
    plt.close(figure)
    return True


def _save_reevaluation_plot(reevaluation: ReevaluationReport, path: str) -> None:
    """Each re-evaluated configuration's search score next to its fresh-seed score, with
    intervals, in search-rank order."""
    configurations = sorted(reevaluation.configurations, key=lambda c: c.search_rank)
    figure = Figure(figsize=(max(5, 1.5 * len(configurations)), 4))
    ax = figure.add_subplot()
    for offset, label, key in ((-0.15, "search seeds", "search"), (0.15, "fresh seeds", "re")):
        scores = [
            c.search_score if key == "search" else c.reevaluation_score for c in configurations
        ]
        ax.errorbar(
            [i + offset for i in range(len(scores))],
            [s.iqm for s in scores],
            yerr=[[s.iqm - s.low for s in scores], [s.high - s.iqm for s in scores]],
            fmt="o",
            capsize=4,
            label=label,
        )
    ax.set_xticks(
        range(len(configurations)),
        [
            f"trial {c.trial_number}\nrank {c.search_rank}→{c.reevaluation_rank}"
            for c in configurations
        ],
    )
    ax.set_ylabel("IQM of final test returns (95% CI)")
    ax.set_title("Top configurations: search vs. fresh seeds")
    ax.legend()
    figure.savefig(path, bbox_inches="tight")


def save_plots(
    study: "optuna.Study", reevaluation: ReevaluationReport | None, out_dir: str
) -> list[str]:
    """Save ``optimization_history.png``, ``param_importances.png`` and (if re-evaluated)
    ``reevaluation.png`` into ``out_dir``; return the paths written (a plot the study cannot
    have yet, e.g. importances with fewer than two complete trials, is left out and not
    returned)."""
    optuna = import_optuna()
    os.makedirs(out_dir, exist_ok=True)
    plots = optuna.visualization.matplotlib
    drawn = [("optimization_history.png", plots.plot_optimization_history)]
    if len(top_trials(study, 2)) == 2:  # importances compare complete trials
        drawn.append(("param_importances.png", plots.plot_param_importances))
    written = []
    for name, plot in drawn:
        path = os.path.join(out_dir, name)
        if _save_optuna_plot(plot, study, path):
            written.append(path)
    if reevaluation is not None:
        path = os.path.join(out_dir, "reevaluation.png")
        _save_reevaluation_plot(reevaluation, path)
        written.append(path)
    return written
