import dataclasses

import pytest
from torch import nn

from test.highlevel.conftest import make_envs
from tianshou.highlevel import experiment_builders
from tianshou.highlevel.config import OffPolicyTrainingConfig, OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import (
    DQNExperimentBuilder,
    PPOExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
)
from tianshou.highlevel.experiment_builders import AlgorithmExperimentBuilder
from tianshou.highlevel.hpo.binding import (
    BINDINGS,
    DQN_BINDING,
    HIDDEN_SIZES,
    PPO_BINDING,
    SAC_BINDING,
    SCRIPT_ALIASES,
    TD3_BINDING,
    binding_of,
)
from tianshou.highlevel.params.algorithm_params import PPOParams, SACParams
from tianshou.highlevel.params.alpha import AutoAlphaFactoryDefault
from tianshou.highlevel.params.env_param import MaxActionScaled
from tianshou.highlevel.params.noise import MaxActionScaledGaussian


def env(task: str) -> EnvFactoryRegistered:
    return EnvFactoryRegistered(task=task, venv_type=VectorEnvType.DUMMY)


def test_ppo_values_set_params_training_config_and_networks() -> None:
    builder = PPOExperimentBuilder(env("CartPole-v1"))
    PPO_BINDING.configure(
        builder,
        {"lr": 5e-4, "gae_lambda": 0.9, "batch_size": 32, "epoch": 7, "hidden_sizes": [16]},
        params=PPOParams(ent_coef=0.02),
        training_config=OnPolicyTrainingConfig(num_training_envs=1, max_epochs=1),
    )
    experiment = builder.build()
    params = experiment.algorithm_factory.params  # type: ignore[attr-defined]
    assert (params.lr, params.gae_lambda, params.ent_coef) == (5e-4, 0.9, 0.02)
    training = experiment.training_config
    assert (training.batch_size, training.max_epochs, training.num_training_envs) == (32, 7, 1)
    critic_factory = experiment.algorithm_factory.critic_factory  # type: ignore[attr-defined]
    assert tuple(critic_factory.hidden_sizes) == (16,)


def test_sac_rules_tie_critic_rates_and_make_alpha_learned_or_fixed() -> None:
    learned = SAC_BINDING.params_updates(
        {"critic_lr": 1e-3, "auto_alpha": True, "alpha_lr": 5e-4, "alpha": 0.3}
    )
    assert learned["critic1_lr"] == learned["critic2_lr"] == 1e-3
    assert isinstance(learned["alpha"], AutoAlphaFactoryDefault)
    assert learned["alpha"].lr == 5e-4
    fixed = SAC_BINDING.params_updates({"auto_alpha": False, "alpha": 0.3})
    assert fixed == {"alpha": 0.3}
    builder = SAC_BINDING.configure(
        SACExperimentBuilder(env("Pendulum-v1")), {"auto_alpha": True, "alpha_lr": 5e-4}
    )
    assert isinstance(builder.build().algorithm_factory.params.alpha, AutoAlphaFactoryDefault)  # type: ignore[attr-defined]


def test_td3_and_dqn_rules_convert_script_options() -> None:
    td3 = TD3_BINDING.params_updates({"exploration_noise": 0.1, "policy_noise": 0.2})
    assert isinstance(td3["exploration_noise"], MaxActionScaledGaussian)
    assert isinstance(td3["policy_noise"], MaxActionScaled)
    dqn = DQN_BINDING.params_updates({"n_step": 3, "eps_train": 0.2, "lr": 1e-3})
    assert dqn == {"n_step_return_horizon": 3, "eps_training": 0.2, "lr": 1e-3}
    builder = DQN_BINDING.configure(
        DQNExperimentBuilder(env("CartPole-v1")),
        {"n_step": 3, "batch_size": 16},
        training_config=OffPolicyTrainingConfig(num_training_envs=1),
    )
    experiment = builder.build()
    assert experiment.algorithm_factory.params.n_step_return_horizon == 3  # type: ignore[attr-defined]
    assert experiment.training_config.batch_size == 16
    assert TD3_BINDING.builder_class is TD3ExperimentBuilder


def test_unknown_names_and_wrong_builders_are_refused() -> None:
    with pytest.raises(ValueError, match="learning_rate"):
        PPO_BINDING.check_names(["lr", "learning_rate"])
    with pytest.raises(TypeError, match="PPOExperimentBuilder"):
        PPO_BINDING.configure(SACExperimentBuilder(env("Pendulum-v1")), {})
    with pytest.raises(ValueError, match="known"):
        binding_of("A3C")
    with pytest.raises(TypeError, match="PPOParams"):
        PPO_BINDING.configure(PPOExperimentBuilder(env("CartPole-v1")), {}, params=SACParams())
    assert binding_of("sac") == SAC_BINDING


def builder_classes() -> list[type[AlgorithmExperimentBuilder]]:
    members = [getattr(experiment_builders, name) for name in experiment_builders.__all__]
    return [m for m in members if issubclass(m, AlgorithmExperimentBuilder)]


def test_every_builder_has_a_binding_derived_from_it() -> None:
    classes = builder_classes()
    assert len(classes) == len(experiment_builders.__all__) == 12
    assert {binding.builder_class for binding in BINDINGS.values()} == set(classes)
    for builder_class in classes:
        binding = binding_of(builder_class.params_class.__name__.removesuffix("Params"))
        assert binding.builder_class is builder_class
        assert binding.params_class is builder_class.params_class
        assert binding.training_config_class is builder_class.training_config_class


def sample_value(name: str) -> object:
    """A value a search could sample for ``name`` (an int where the field is one)."""
    return {"n_step": 2, "auto_alpha": True, "hidden_sizes": (7,)}.get(name, 0.1)


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_every_bound_name_sets_a_real_field(name: str) -> None:
    binding = BINDINGS[name]
    params_fields = {f.name for f in dataclasses.fields(binding.params_class)}
    for rule_name, rule in binding.param_rules.items():
        set_fields = set(rule(sample_value(rule_name), {}))
        assert set_fields <= params_fields, rule_name
    binding.check_names(sorted(binding.known_names()))


def test_every_script_alias_names_a_real_field() -> None:
    for alias, target in SCRIPT_ALIASES.items():
        users = [
            b
            for b in BINDINGS.values()
            if target
            in {f.name for f in dataclasses.fields(b.params_class)}
            | {f.name for f in dataclasses.fields(b.training_config_class)}
        ]
        assert users, alias
        assert all(alias in b.known_names() for b in users)


@pytest.mark.parametrize("name", sorted(BINDINGS))
def test_rules_and_hidden_sizes_configure_a_buildable_experiment(name: str) -> None:
    """Every rule of every binding and ``hidden_sizes`` at once: the values land in real fields
    (``dataclasses.replace`` refuses others) and the networks are sized by ``hidden_sizes``."""
    binding = BINDINGS[name]
    discrete = binding.name in ("Reinforce", "DQN", "IQN", "DiscreteSAC")
    envs = make_envs("CartPole-v1" if discrete else "Pendulum-v1")
    values = {rule_name: sample_value(rule_name) for rule_name in binding.param_rules}
    values[HIDDEN_SIZES] = sample_value(HIDDEN_SIZES)
    builder = binding.configure(binding.builder_class(None), values)  # type: ignore[arg-type]
    factory = builder.build().algorithm_factory
    params = factory.params  # type: ignore[attr-defined]
    if "auto_alpha" in values:
        assert isinstance(params.alpha, AutoAlphaFactoryDefault)
    if HIDDEN_SIZES in {f.name for f in dataclasses.fields(params)}:
        assert tuple(params.hidden_sizes) == (7,)  # IQN: the quantile head
        return
    algorithm = factory.create_algorithm(envs, "cpu")
    layers = [m for m in algorithm.modules() if isinstance(m, nn.Linear)]
    assert layers
    assert all(7 in (layer.in_features, layer.out_features) for layer in layers)
