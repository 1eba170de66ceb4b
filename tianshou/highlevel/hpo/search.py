"""A whole seed-robust search: optimise, re-evaluate the top configurations on fresh seeds,
choose and save the best one, and write the report.

Several processes may run :func:`run_search` on one study (same ``study_name`` and
``storage``): each adds trials until the study holds ``n_trials`` finished (complete or pruned)
trials, so a search that was killed continues where it stopped when started again, with the
trial numbers going on from there. Only one process needs to re-evaluate and report (pass
``top_k=0`` to the others).
"""

import logging
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tianshou.evaluation.launcher import ExpLauncher, RegisteredExpLauncher
from tianshou.highlevel.hpo._optuna import import_optuna
from tianshou.highlevel.hpo.best_config import BestConfiguration
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.objective import SeedRobustObjective
from tianshou.highlevel.hpo.reevaluation import (
    ReevaluationReport,
    reevaluate_top_trials,
    top_trials,
)
from tianshou.highlevel.hpo.report import format_report, save_plots, save_report, study_report
from tianshou.highlevel.hpo.seed_runs import SeedRunner
from tianshou.highlevel.hpo.space import SearchSpace
from tianshou.highlevel.hpo.storage import load_or_create_study

if TYPE_CHECKING:
    import optuna

log = logging.getLogger(__name__)

STUDY_REPORT_FILENAME = "study.json"
BEST_CONFIG_FILENAME = "best_config.json"


@dataclass
class SearchResult:
    """What a search produced.

    :param study: the study with all trials (of every process that shared it).
    :param report: the content of ``study.json``.
    :param best: the chosen configuration; None if no trial completed.
    :param reevaluation: the re-evaluation of the top configurations (None: not done).
    :param files: the files written (report, best configuration, plots).
    """

    study: "optuna.Study"
    report: dict
    best: BestConfiguration | None
    reevaluation: ReevaluationReport | None
    files: list[str] = field(default_factory=list)

    def format(self) -> str:
        """The printed tables of the report."""
        return format_report(self.report)


def finished_trial_count(study: "optuna.Study") -> int:
    """The study's complete and pruned trials (what ``n_trials`` of a search counts)."""
    optuna = import_optuna()
    states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    return len(study.get_trials(deepcopy=False, states=states))


def _choose_best(
    study: "optuna.Study", algorithm: str, reevaluation: ReevaluationReport | None
) -> BestConfiguration | None:
    """The re-evaluation's winner if there was one, else the search's best trial."""
    if reevaluation is not None:
        winner = reevaluation.configurations[0]
        return BestConfiguration(
            algorithm=algorithm,
            hyperparameters=winner.hyperparameters,
            trial_number=winner.trial_number,
            chosen_by="reevaluation",
            score=winner.reevaluation_score.to_dict(),
        )
    best = top_trials(study, 1)
    if not best:
        return None
    return BestConfiguration(
        algorithm=algorithm,
        hyperparameters=dict(best[0].user_attrs["hyperparameters"]),
        trial_number=best[0].number,
        chosen_by="search",
        score=dict(best[0].user_attrs["score"]),
    )


def run_search(
    template: ExperimentTemplate,
    space: SearchSpace,
    study_name: str,
    n_trials: int,
    num_seeds: int = 3,
    storage: "str | optuna.storages.BaseStorage | None" = None,
    n_jobs: int = 1,
    timeout: float | None = None,
    sampler: "optuna.samplers.BaseSampler | None" = None,
    pruner: "optuna.pruners.BasePruner | None" = None,
    launcher: ExpLauncher | RegisteredExpLauncher | str = RegisteredExpLauncher.SEQUENTIAL,
    top_k: int = 3,
    num_reevaluation_seeds: int | None = None,
    out_dir: str | None = None,
    num_report_trials: int = 10,
    sampler_seed: int | None = None,
    show_progress: bool = False,
) -> SearchResult:
    """Search, re-evaluate the ``top_k`` configurations on fresh seeds, choose the best and
    (with ``out_dir``) write ``study.json``, ``best_config.json`` and the plots there.

    :param template: the experiment the trials vary.
    :param space: the hyper-parameters to search.
    :param study_name: the study's name in ``storage``.
    :param n_trials: finished trials the study should hold in the end (over all processes
        and earlier, killed searches); this call adds the missing ones.
    :param num_seeds: seeds per trial (the template's seed and the following ones).
    :param storage: where the study lives (see :mod:`~tianshou.highlevel.hpo.storage`);
        None: in memory.
    :param n_jobs: trials run at once in threads of this process (Optuna's ``n_jobs``); for
        CPU-bound training prefer several processes on one storage.
    :param timeout: stop starting trials after this many seconds (None: no limit).
    :param sampler: proposes hyper-parameters (None: TPE).
    :param pruner: stops weak trials after an epoch (None: median pruner).
    :param launcher: runs each trial's seeds (``"sequential"``: in lockstep, prunable per
        epoch; ``"joblib"``, ``"ray"``: in parallel).
    :param top_k: configurations re-run on fresh seeds (0: no re-evaluation).
    :param num_reevaluation_seeds: fresh seeds per re-run configuration (None: ``num_seeds``);
        they follow the search seeds, so no trial has seen them.
    :param out_dir: where to write the report, best configuration and plots (None: nowhere).
    :param num_report_trials: how many of the best trials the report lists.
    :param sampler_seed: seeds the default TPE sampler, so that the same search proposes the
        same trials (processes sharing a storage should each get their own); ignored when a
        ``sampler`` is given. None: unseeded.
    :param show_progress: show one progress bar per trial (each run's own bars stay off).
        Optuna's per-trial INFO lines are held back while the search runs (the report and the
        ``tianshou.highlevel.hpo`` log say the same, in one spelling).
    """
    optuna = import_optuna()
    if n_trials < 1 or top_k < 0:
        raise ValueError(f"n_trials must be >= 1 and top_k >= 0, got {n_trials}, {top_k}")
    seed_runner = SeedRunner(launcher)
    objective = SeedRobustObjective(
        template, space, num_seeds, seed_runner, show_progress=show_progress
    )
    if sampler is None and sampler_seed is not None:
        sampler = optuna.samplers.TPESampler(seed=sampler_seed)
    study = load_or_create_study(study_name, storage, sampler, pruner)
    missing = n_trials - finished_trial_count(study)
    if missing > 0:
        finished_states = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
        verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(max(verbosity, optuna.logging.WARNING))
        try:
            study.optimize(
                objective,
                n_trials=missing,
                timeout=timeout,
                n_jobs=n_jobs,
                callbacks=[optuna.study.MaxTrialsCallback(n_trials, states=finished_states)],
            )
        finally:
            optuna.logging.set_verbosity(verbosity)
    else:
        log.info(f"Study {study_name!r} holds {n_trials - missing} finished trials already")
    reevaluation = None
    if top_k > 0 and top_trials(study, 1):
        reevaluation = reevaluate_top_trials(
            study,
            template,
            top_k,
            first_seed=objective.search_seeds[-1] + 1,
            num_seeds=num_reevaluation_seeds or num_seeds,
            seed_runner=seed_runner,
        )
    best = _choose_best(study, template.binding.name, reevaluation)
    report = study_report(study, template.binding.name, num_report_trials, reevaluation, best)
    result = SearchResult(study, report, best, reevaluation)
    if out_dir is not None:
        result.files = _write_outputs(result, out_dir)
    return result


def _write_outputs(result: SearchResult, out_dir: str) -> list[str]:
    report_path = os.path.join(out_dir, STUDY_REPORT_FILENAME)
    save_report(result.report, report_path)
    files = [report_path]
    if result.best is not None:
        best_path = os.path.join(out_dir, BEST_CONFIG_FILENAME)
        result.best.save(best_path)
        files.append(best_path)
    return files + save_plots(result.study, result.reevaluation, out_dir)
