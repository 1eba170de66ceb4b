import pytest

from tianshou.highlevel.config import OffPolicyTrainingConfig, OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import (
    DQNExperimentBuilder,
    PPOExperimentBuilder,
    SACExperimentBuilder,
    TD3ExperimentBuilder,
)
from tianshou.highlevel.hpo.binding import (
    DQN_BINDING,
    PPO_BINDING,
    SAC_BINDING,
    TD3_BINDING,
    binding_of,
)
from tianshou.highlevel.params.algorithm_params import PPOParams
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
        binding_of("A2C")
    assert binding_of("sac") is SAC_BINDING
