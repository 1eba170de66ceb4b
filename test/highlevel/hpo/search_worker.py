"""A search process of the shared-study test: ``python search_worker.py STORAGE N_TRIALS``
adds trials to the study ``shared`` until it holds N_TRIALS finished ones, marking the trials it
ran with its process id."""

import os
import sys

import optuna
import torch

from test.highlevel.hpo.conftest import tiny_cartpole_ppo_template, tiny_space
from tianshou.highlevel.hpo.objective import SeedRobustObjective
from tianshou.highlevel.hpo.search import finished_trial_count
from tianshou.highlevel.hpo.storage import load_or_create_study


def main(storage: str, n_trials: int) -> None:
    torch.set_num_threads(1)
    objective = SeedRobustObjective(tiny_cartpole_ppo_template(max_epochs=1), tiny_space(), 1)
    study = load_or_create_study("shared", storage)

    def marked(trial: optuna.Trial) -> float:
        trial.set_user_attr("pid", os.getpid())
        return objective(trial)

    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
    study.optimize(
        marked,
        n_trials=n_trials - finished_trial_count(study),
        callbacks=[optuna.study.MaxTrialsCallback(n_trials, states=finished)],
    )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
