"""Re-running the best configurations of a search on fresh seeds and ranking them again.

A search picks the configuration with the best score on its search seeds, and with many trials
some configurations score well by luck of those seeds. Running the top-k configurations again on
seeds no trial used, and ranking them by the new scores, shows whether the ranking holds:
the report gives each configuration's search rank and re-evaluation rank with both scores and
their confidence intervals, whether the winner changed, and Kendall's tau between the two
rankings (1: same order, -1: reversed).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.stats

from tianshou.highlevel.hpo._optuna import import_optuna
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.score import ScoreWithInterval
from tianshou.highlevel.hpo.seed_runs import SeedRunner

if TYPE_CHECKING:
    import optuna


@dataclass
class ReevaluatedConfiguration:
    """One of the top configurations, scored in the search and again on fresh seeds.

    :param trial_number: the trial that found it.
    :param hyperparameters: its values.
    :param search_rank: its rank among the top-k by the search score (1: best).
    :param search_score: its score on the search seeds.
    :param reevaluation_rank: its rank by the score on the fresh seeds (1: best).
    :param reevaluation_score: its score on the fresh seeds.
    :param reevaluation_returns: the final test return of each fresh seed.
    """

    trial_number: int
    hyperparameters: dict[str, Any]
    search_rank: int
    search_score: ScoreWithInterval
    reevaluation_rank: int
    reevaluation_score: ScoreWithInterval
    reevaluation_returns: list[float]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "trial_number": self.trial_number,
            "hyperparameters": self.hyperparameters,
            "search_rank": self.search_rank,
            "search_score": self.search_score.to_dict(),
            "reevaluation_rank": self.reevaluation_rank,
            "reevaluation_score": self.reevaluation_score.to_dict(),
            "reevaluation_returns": self.reevaluation_returns,
        }


@dataclass
class ReevaluationReport:
    """How the ranking of the top configurations changed on fresh seeds.

    :param configurations: the re-evaluated configurations, best re-evaluation score first.
    :param seeds: the fresh seeds.
    """

    configurations: list[ReevaluatedConfiguration]
    seeds: list[int]

    @property
    def winner_changed(self) -> bool:
        """Whether the search's best configuration is not the best on fresh seeds."""
        return self.configurations[0].search_rank != 1

    @property
    def kendall_tau(self) -> float | None:
        """Kendall's tau between the search ranks and the re-evaluation ranks (None for fewer
        than two configurations)."""
        if len(self.configurations) < 2:
            return None
        search = [c.search_rank for c in self.configurations]
        again = [c.reevaluation_rank for c in self.configurations]
        return float(scipy.stats.kendalltau(search, again).statistic)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "seeds": self.seeds,
            "winner_changed": self.winner_changed,
            "kendall_tau": self.kendall_tau,
            "configurations": [c.to_dict() for c in self.configurations],
        }

    def summary(self) -> str:
        """One sentence on how the ranking changed."""
        best = self.configurations[0]
        tau = self.kendall_tau
        agreement = "" if tau is None else f" Kendall's tau of the rankings: {tau:.2f}."
        if self.winner_changed:
            return (
                f"The search's winner did not hold up: on fresh seeds trial {best.trial_number} "
                f"(search rank {best.search_rank}) is best.{agreement}"
            )
        return (
            f"The search's winner (trial {best.trial_number}) is best on fresh seeds too."
            f"{agreement}"
        )


def top_trials(study: "optuna.Study", k: int) -> list["optuna.trial.FrozenTrial"]:
    """The ``k`` complete trials with the highest scores, best first."""
    optuna = import_optuna()
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    return sorted(complete, key=lambda t: float(t.value or 0.0), reverse=True)[:k]


def _search_score(trial: "optuna.trial.FrozenTrial") -> ScoreWithInterval:
    score = trial.user_attrs["score"]
    return ScoreWithInterval(score["iqm"], score["ci_low"], score["ci_high"])


def reevaluate_top_trials(
    study: "optuna.Study",
    template: ExperimentTemplate,
    top_k: int,
    first_seed: int,
    num_seeds: int,
    seed_runner: SeedRunner | None = None,
) -> ReevaluationReport:
    """Run the ``top_k`` best complete trials' configurations on the seeds ``first_seed, ...,
    first_seed + num_seeds - 1`` and rank them again.

    :param study: the searched study (its trials carry their values and search seeds).
    :param template: the experiment the search varied.
    :param top_k: how many configurations to re-run.
    :param first_seed: the first fresh seed.
    :param num_seeds: fresh seeds per configuration.
    :param seed_runner: how the seeds run (default: sequentially).
    :raises ValueError: if the study has no complete trial, or a fresh seed was a search seed.
    """
    if top_k < 1 or num_seeds < 1:
        raise ValueError(f"top_k and num_seeds must be at least 1, got {top_k}, {num_seeds}")
    trials = top_trials(study, top_k)
    if not trials:
        raise ValueError(f"study {study.study_name!r} has no complete trial to re-evaluate")
    seeds = list(range(first_seed, first_seed + num_seeds))
    used = {s for t in trials for s in t.user_attrs.get("seeds", [])}
    if used & set(seeds):
        raise ValueError(
            f"the re-evaluation seeds {sorted(used & set(seeds))} were used in the search; "
            f"choose a first_seed above {max(used)}"
        )
    runner = seed_runner if seed_runner is not None else SeedRunner()
    scored = []
    for search_rank, trial in enumerate(trials, start=1):
        values = trial.user_attrs["hyperparameters"]
        experiments = template.seeded_experiments(
            values, first_seed, num_seeds, f"reevaluation/trial_{trial.number}"
        )
        final_returns = runner.run(experiments)[:, -1]
        scored.append(
            (trial, search_rank, ScoreWithInterval.of_returns(final_returns), final_returns)
        )
    scored.sort(key=lambda entry: (-entry[2].iqm, entry[1]))
    return ReevaluationReport(
        configurations=[
            ReevaluatedConfiguration(
                trial_number=trial.number,
                hyperparameters=dict(trial.user_attrs["hyperparameters"]),
                search_rank=search_rank,
                search_score=_search_score(trial),
                reevaluation_rank=rank,
                reevaluation_score=score,
                reevaluation_returns=np.asarray(returns).tolist(),
            )
            for rank, (trial, search_rank, score, returns) in enumerate(scored, start=1)
        ],
        seeds=seeds,
    )
