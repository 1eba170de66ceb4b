import optuna
import pytest

from test.highlevel.hpo.conftest import tiny_cartpole_ppo_template
from tianshou.highlevel.hpo.reevaluation import (
    ReevaluatedConfiguration,
    ReevaluationReport,
    reevaluate_top_trials,
)
from tianshou.highlevel.hpo.score import ScoreWithInterval


def configuration(trial: int, search_rank: int, new_rank: int) -> ReevaluatedConfiguration:
    score = ScoreWithInterval(1.0, 0.0, 2.0)
    return ReevaluatedConfiguration(trial, {}, search_rank, score, new_rank, score, [1.0])


def test_report_says_whether_the_winner_held_and_how_rankings_agree() -> None:
    held = ReevaluationReport([configuration(4, 1, 1), configuration(2, 2, 2)], seeds=[9])
    assert not held.winner_changed and held.kendall_tau == pytest.approx(1.0)
    assert "trial 4" in held.summary() and "too" in held.summary()
    changed = ReevaluationReport([configuration(2, 2, 1), configuration(4, 1, 2)], seeds=[9])
    assert changed.winner_changed and changed.kendall_tau == pytest.approx(-1.0)
    assert "did not hold up" in changed.summary()
    assert ReevaluationReport([configuration(4, 1, 1)], seeds=[9]).kendall_tau is None


def test_fresh_seeds_must_not_be_search_seeds() -> None:
    study = optuna.create_study(direction="maximize")
    study.add_trial(
        optuna.trial.create_trial(
            value=1.0,
            user_attrs={"hyperparameters": {}, "seeds": [1, 2], "score": {}},
        )
    )
    with pytest.raises(ValueError, match="used in the search"):
        reevaluate_top_trials(study, tiny_cartpole_ppo_template(), 1, first_seed=2, num_seeds=2)
    with pytest.raises(ValueError, match="no complete trial"):
        reevaluate_top_trials(
            optuna.create_study(), tiny_cartpole_ppo_template(), 1, first_seed=5, num_seeds=1
        )
