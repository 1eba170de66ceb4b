"""What the hyper-parameter search scripts (``examples/hpo/``) share: choosing the pruner,
running the search and printing its report."""

import logging

import optuna

from tianshou.evaluation.launcher import RegisteredExpLauncher
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.search import SearchResult, run_search
from tianshou.highlevel.hpo.space import SearchSpace

PRUNERS = ("median", "halving", "none")


def create_pruner(name: str) -> optuna.pruners.BasePruner:
    """``"median"`` (stop a trial whose epoch score is below the median of earlier trials at that
    epoch), ``"halving"`` (successive halving) or ``"none"``."""
    if name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1)
    if name == "halving":
        return optuna.pruners.SuccessiveHalvingPruner()
    if name == "none":
        return optuna.pruners.NopPruner()
    raise ValueError(f"unknown pruner {name!r}; choose one of {PRUNERS}")


def search_and_report(
    template: ExperimentTemplate,
    space: SearchSpace,
    study_name: str,
    n_trials: int,
    seeds: int,
    storage: str | None,
    n_jobs: int,
    timeout: float | None,
    out: str,
    pruner: str,
    launcher: RegisteredExpLauncher,
    top_k: int,
    reevaluation_seeds: int,
    sampler_seed: int | None = 0,
) -> SearchResult:
    """Run the search, print its tables and where its files went.

    One progress bar per trial shows the search's progress; the library's INFO messages are
    silenced while it runs (the tables are the output; warnings still show), and the
    ``tianshou`` logger's level is restored afterwards. ``sampler_seed`` seeds the sampler, so
    that the same command proposes the same trials (None: unseeded).
    """
    library_logger = logging.getLogger("tianshou")
    level = library_logger.level
    library_logger.setLevel(logging.WARNING)
    try:
        result = run_search(
            template,
            space,
            study_name=study_name,
            n_trials=n_trials,
            num_seeds=seeds,
            storage=storage,
            n_jobs=n_jobs,
            timeout=timeout,
            pruner=create_pruner(pruner),
            launcher=launcher,
            top_k=top_k,
            num_reevaluation_seeds=reevaluation_seeds,
            out_dir=out,
            sampler_seed=sampler_seed,
            show_progress=True,
        )
    finally:
        library_logger.setLevel(level)
    print(result.format())
    print("\nWritten:\n  " + "\n  ".join(result.files))
    return result
