import logging
import time

import optuna
import pytest

from test.highlevel.hpo.conftest import tiny_cartpole_ppo_template, tiny_space
from tianshou.evaluation.interval_estimates import iqm
from tianshou.highlevel.config import OnPolicyTrainingConfig
from tianshou.highlevel.hpo.experiment_template import epoch_env_steps
from tianshou.highlevel.hpo.objective import SeedRobustObjective
from tianshou.highlevel.hpo.space import CategoricalDimension, FloatDimension, SearchSpace


def test_four_trial_two_seed_study_scores_each_trial_by_the_iqm_of_final_returns() -> None:
    objective = SeedRobustObjective(tiny_cartpole_ppo_template(seed=1), tiny_space(), 2)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.RandomSampler(0))
    start = time.perf_counter()
    study.optimize(objective, n_trials=4)
    assert time.perf_counter() - start < 60
    assert [t.state for t in study.trials] == [optuna.trial.TrialState.COMPLETE] * 4
    for trial in study.trials:
        returns = trial.user_attrs["test_returns"]
        assert trial.user_attrs["seeds"] == [1, 2]
        assert len(returns) == 2 and len(returns[0]) == 2
        assert trial.value == pytest.approx(iqm([r[-1] for r in returns]))
        score = trial.user_attrs["score"]
        assert score["ci_low"] <= trial.value <= score["ci_high"]
        assert sorted(trial.intermediate_values) == [1, 2]
        assert trial.intermediate_values[1] == pytest.approx(iqm([r[0] for r in returns]))
        assert trial.user_attrs["hyperparameters"]["hidden_sizes"] in ([16], [32, 32])


def test_pruning_stops_a_trial_after_its_first_epoch() -> None:
    objective = SeedRobustObjective(tiny_cartpole_ppo_template(max_epochs=3), tiny_space(), 2)
    study = optuna.create_study(
        direction="maximize", pruner=optuna.pruners.ThresholdPruner(lower=1e9)
    )
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    assert trial.state == optuna.trial.TrialState.PRUNED
    assert list(trial.intermediate_values) == [1]
    assert [len(r) for r in trial.user_attrs["test_returns"]] == [1, 1]


def test_objective_refuses_names_the_algorithm_cannot_use() -> None:
    space = SearchSpace([FloatDimension("learning_rate", 1e-4, 1e-3)])
    with pytest.raises(ValueError, match="learning_rate"):
        SeedRobustObjective(tiny_cartpole_ppo_template(), space, 2)
    with pytest.raises(ValueError, match="num_seeds"):
        SeedRobustObjective(tiny_cartpole_ppo_template(), tiny_space(), 0)


def test_longer_epochs_than_asked_for_are_announced_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A tuned collection size above the epoch length makes every epoch that size."""
    space = SearchSpace([CategoricalDimension("collection_step_num_env_steps", [160])])
    objective = SeedRobustObjective(tiny_cartpole_ppo_template(max_epochs=1), space, 1)
    study = optuna.create_study(direction="maximize")
    with caplog.at_level(logging.WARNING, logger="tianshou.highlevel.hpo.objective"):
        study.optimize(objective, n_trials=2)
    warnings = [r.getMessage() for r in caplog.records if "rounded up" in r.getMessage()]
    assert warnings == [
        "epoch_num_steps=100 is rounded up to 160 env steps per epoch: an epoch consists of "
        "whole collection steps of collection_step_num_env_steps=160 (over 2 training envs)"
    ]


def test_one_progress_bar_per_trial_names_the_trial(capsys: pytest.CaptureFixture) -> None:
    objective = SeedRobustObjective(
        tiny_cartpole_ppo_template(max_epochs=2), tiny_space(), 2, show_progress=True
    )
    optuna.create_study(direction="maximize").optimize(objective, n_trials=2)
    err = capsys.readouterr().err
    assert "trial 0 (2 seeds): 100%" in err and "trial 1 (2 seeds): 100%" in err
    assert "2/2" in err and "IQM=" in err
    assert "Epoch #" not in err  # the runs' own bars stay off


def test_epoch_env_steps_rounds_up_to_whole_collections() -> None:
    config = OnPolicyTrainingConfig(
        epoch_num_steps=500, collection_step_num_env_steps=2048, num_training_envs=4
    )
    assert epoch_env_steps(config) == 2048
    config = OnPolicyTrainingConfig(
        epoch_num_steps=1000, collection_step_num_env_steps=30, num_training_envs=4
    )
    assert epoch_env_steps(config) == 1024  # collections of 32 (8 steps of 4 envs)
    episodes = OnPolicyTrainingConfig(
        epoch_num_steps=1000, collection_step_num_env_steps=None, collection_step_num_episodes=2
    )
    assert epoch_env_steps(episodes) == 1000
