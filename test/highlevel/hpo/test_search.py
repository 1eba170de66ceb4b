import json
import logging
from pathlib import Path

import numpy as np
import optuna

from test.highlevel.hpo.conftest import tiny_cartpole_ppo_template, tiny_space
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import ExperimentConfig
from tianshou.highlevel.hpo.best_config import load_best_params
from tianshou.highlevel.hpo.binding import binding_of
from tianshou.highlevel.hpo.experiment_template import ExperimentTemplate
from tianshou.highlevel.hpo.objective import to_json_values
from tianshou.highlevel.hpo.search import run_search
from tianshou.highlevel.hpo.space import (
    CategoricalDimension,
    FloatDimension,
    SearchSpace,
    format_hyperparameters,
)


def test_search_reevaluates_on_fresh_seeds_and_writes_report_best_config_and_plots(
    tmp_path: Path,
) -> None:
    result = run_search(
        tiny_cartpole_ppo_template(seed=1, max_epochs=1),
        tiny_space(),
        study_name="report",
        n_trials=3,
        num_seeds=2,
        sampler=optuna.samplers.RandomSampler(0),
        top_k=2,
        out_dir=str(tmp_path),
    )
    names = sorted(Path(f).name for f in result.files)
    assert names == [
        "best_config.json",
        "optimization_history.png",
        "param_importances.png",
        "reevaluation.png",
        "study.json",
    ]
    report = json.loads((tmp_path / "study.json").read_text())
    reevaluation = report["reevaluation"]
    assert reevaluation["seeds"] == [3, 4]  # after the search seeds 1, 2
    configurations = reevaluation["configurations"]
    assert sorted(c["search_rank"] for c in configurations) == [1, 2]
    assert [c["reevaluation_rank"] for c in configurations] == [1, 2]
    new_scores = [c["reevaluation_score"]["iqm"] for c in configurations]
    assert new_scores == sorted(new_scores, reverse=True)
    assert report["best"]["trial_number"] == configurations[0]["trial_number"]
    assert report["best"]["chosen_by"] == "reevaluation"
    assert load_best_params(str(tmp_path / "best_config.json")) == {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in configurations[0]["hyperparameters"].items()
    }
    table = result.format()
    assert "Re-evaluation on fresh seeds [3, 4]" in table
    for entry in report["top_trials"]:
        assert f"{entry['trial_number']:>5}" in table


def test_resumed_search_continues_the_trial_count(tmp_path: Path) -> None:
    storage = str(tmp_path / "study.journal")
    template = tiny_cartpole_ppo_template(max_epochs=1)
    first = run_search(template, tiny_space(), "resume", 2, num_seeds=1, storage=storage, top_k=0)
    assert [t.number for t in first.study.trials] == [0, 1]
    again = run_search(template, tiny_space(), "resume", 2, num_seeds=1, storage=storage, top_k=0)
    assert len(again.study.trials) == 2  # nothing missing: no new trial
    more = run_search(template, tiny_space(), "resume", 3, num_seeds=1, storage=storage, top_k=0)
    assert [t.number for t in more.study.trials] == [0, 1, 2]
    assert more.best is not None and more.best.chosen_by == "search"


def test_the_same_sampler_seed_proposes_the_same_trials() -> None:
    def proposals(sampler_seed: int) -> list[dict]:
        result = run_search(
            tiny_cartpole_ppo_template(max_epochs=1),
            tiny_space(),
            study_name=f"seeded_{sampler_seed}",
            n_trials=2,
            num_seeds=1,
            top_k=0,
            sampler_seed=sampler_seed,
        )
        return [trial.params for trial in result.study.trials]

    assert proposals(7) == proposals(7)
    assert proposals(7) != proposals(8)


def test_optuna_s_trial_lines_are_held_back_during_the_search_only() -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    optuna_logger = logging.getLogger("optuna")
    optuna_logger.addHandler(handler)
    optuna.logging.set_verbosity(optuna.logging.INFO)
    try:
        run_search(
            tiny_cartpole_ppo_template(max_epochs=1),
            tiny_space(),
            study_name="quiet",
            n_trials=1,
            num_seeds=1,
            top_k=0,
        )
    finally:
        optuna_logger.removeHandler(handler)
    assert records  # the study's creation is still announced
    assert not [r for r in records if "finished with value" in r.getMessage()]
    assert optuna.logging.get_verbosity() == optuna.logging.INFO


def test_a_search_tunes_discrete_sac_with_its_derived_binding() -> None:
    """An algorithm beyond the four with default spaces: the binding derived from its builder
    ties both critics' rates, makes alpha learned and sizes actor and critics."""
    template = ExperimentTemplate(
        binding=binding_of("DiscreteSAC"),
        env_factory=EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY),
        experiment_config=ExperimentConfig(seed=1, persistence_enabled=False, device="cpu"),
        training_config=OffPolicyTrainingConfig(
            max_epochs=1,
            epoch_num_steps=60,
            num_training_envs=2,
            num_test_envs=2,
            collection_step_num_env_steps=20,
            buffer_size=200,
            batch_size=16,
        ),
    )
    space = SearchSpace(
        [
            FloatDimension("critic_lr", 1e-4, 1e-2, log=True),
            CategoricalDimension("auto_alpha", [True]),
            FloatDimension("alpha_lr", 1e-4, 1e-3, log=True),
            CategoricalDimension("hidden_sizes", [(8,), (16,)]),
        ]
    )
    result = run_search(
        template, space, "discrete_sac", n_trials=2, num_seeds=1, top_k=0, sampler_seed=0
    )
    trials = result.study.trials
    assert len(trials) == 2
    assert all(trial.value is not None and np.isfinite(trial.value) for trial in trials)
    assert result.best is not None and result.best.algorithm == "DiscreteSAC"
    best = result.best.hyperparameters
    builder = template.builder(best)
    params = builder.build().algorithm_factory.params  # type: ignore[attr-defined]
    assert params.critic1_lr == params.critic2_lr == best["critic_lr"]
    assert params.alpha.lr == best["alpha_lr"]


def test_hyper_parameters_have_one_spelling() -> None:
    values = {"lr": 0.00021578743809662107, "hidden_sizes": (64, 64), "batch_size": 32}
    assert format_hyperparameters(values) == "lr=0.0002158, hidden_sizes=[64, 64], batch_size=32"
    assert format_hyperparameters(to_json_values(values)) == format_hyperparameters(values)
