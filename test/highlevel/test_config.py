"""Tests of the training configurations: defaults, the -1 env count, validation, and that the
on/off-policy fields match the trainer parameters they are passed on to."""

import multiprocessing
from dataclasses import fields

import pytest

from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnlineTrainingConfig,
    OnPolicyTrainingConfig,
    TrainingConfig,
)
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams


def test_defaults_are_the_published_ones() -> None:
    config = TrainingConfig(num_training_envs=3)
    assert (config.max_epochs, config.epoch_num_steps) == (100, 30000)
    assert (config.num_training_envs, config.num_test_envs) == (3, 1)
    assert (config.test_step_num_episodes, config.buffer_size) == (-1, 4096)
    assert (config.collection_step_num_env_steps, config.collection_step_num_episodes) == (
        2048,
        None,
    )
    assert (config.start_timesteps, config.start_timesteps_random) == (0, False)
    assert not config.replay_buffer_ignore_obs_next
    assert not config.replay_buffer_save_only_last_obs
    assert config.replay_buffer_stack_num == 1
    assert not config.test_in_training
    online = OnlineTrainingConfig(num_training_envs=1)
    assert (online.collection_step_num_env_steps, online.collection_step_num_episodes) == (
        2048,
        None,
    )
    on_policy = OnPolicyTrainingConfig(num_training_envs=1)
    assert (on_policy.batch_size, on_policy.update_step_num_repetitions) == (64, 1)
    off_policy = OffPolicyTrainingConfig(num_training_envs=1)
    assert off_policy.batch_size == 64
    assert off_policy.update_step_num_gradient_steps_per_sample == 1.0


def test_minus_one_training_envs_means_one_per_cpu() -> None:
    assert TrainingConfig().num_training_envs == multiprocessing.cpu_count()


def test_configs_are_keyword_only_and_print_their_fields() -> None:
    with pytest.raises(TypeError):
        TrainingConfig(10)  # type: ignore[call-arg]
    text = str(OffPolicyTrainingConfig(num_training_envs=2, batch_size=32))
    assert text.startswith("OffPolicyTrainingConfig[")
    assert "batch_size=32" in text and "num_training_envs=2" in text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_epochs": -1}, "max_epochs"),
        ({"epoch_num_steps": 0}, "epoch_num_steps"),
        ({"num_training_envs": 0}, "num_training_envs"),
        ({"num_training_envs": -2}, "num_training_envs"),
        ({"num_test_envs": -1}, "num_test_envs"),
        ({"test_step_num_episodes": 0}, "test_step_num_episodes"),
        ({"test_step_num_episodes": -2}, "test_step_num_episodes"),
        ({"buffer_size": 0}, "buffer_size"),
        ({"buffer_size": 10.5}, "buffer_size"),
        ({"start_timesteps": -1}, "start_timesteps"),
        ({"replay_buffer_stack_num": 0}, "replay_buffer_stack_num"),
    ],
)
def test_invalid_values_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TrainingConfig(**{"num_training_envs": 1, **kwargs})


def test_exactly_one_collection_amount() -> None:
    with pytest.raises(ValueError, match="exactly one of"):
        TrainingConfig(num_training_envs=1, collection_step_num_episodes=4)
    with pytest.raises(ValueError, match="exactly one of"):
        OnlineTrainingConfig(num_training_envs=1, collection_step_num_episodes=4)
    with pytest.raises(ValueError, match="exactly one of"):
        OnlineTrainingConfig(num_training_envs=1, collection_step_num_env_steps=None)
    config = OnPolicyTrainingConfig(
        num_training_envs=1, collection_step_num_env_steps=None, collection_step_num_episodes=4
    )
    assert config.collection_step_num_episodes == 4
    with pytest.raises(ValueError, match="collection_step_num_env_steps"):
        OnlineTrainingConfig(num_training_envs=1, collection_step_num_env_steps=0)


def test_on_and_off_policy_validation() -> None:
    assert OnPolicyTrainingConfig(num_training_envs=1, batch_size=None).batch_size is None
    assert OnPolicyTrainingConfig(num_training_envs=1, batch_size=0).batch_size == 0
    with pytest.raises(ValueError, match="batch_size"):
        OnPolicyTrainingConfig(num_training_envs=1, batch_size=-1)
    with pytest.raises(ValueError, match="update_step_num_repetitions"):
        OnPolicyTrainingConfig(num_training_envs=1, update_step_num_repetitions=0)
    with pytest.raises(ValueError, match="batch_size"):
        OffPolicyTrainingConfig(num_training_envs=1, batch_size=None)  # type: ignore[arg-type]
    for ratio in (-0.1, float("inf"), True):
        with pytest.raises(ValueError, match="update_step_num_gradient_steps_per_sample"):
            OffPolicyTrainingConfig(
                num_training_envs=1, update_step_num_gradient_steps_per_sample=ratio
            )


@pytest.mark.parametrize(
    ("config_class", "params_class"),
    [
        (OnPolicyTrainingConfig, OnPolicyTrainerParams),
        (OffPolicyTrainingConfig, OffPolicyTrainerParams),
    ],
)
def test_trainer_fields_have_the_trainer_params_names_and_defaults(
    config_class: type, params_class: type
) -> None:
    trainer_fields = {f.name: f.default for f in fields(params_class)}
    shared = {
        "max_epochs",
        "epoch_num_steps",
        "test_step_num_episodes",
        "collection_step_num_env_steps",
        "collection_step_num_episodes",
        "test_in_training",
        "batch_size",
    }
    shared |= {f.name for f in fields(config_class)} & set(trainer_fields)
    config_fields = {f.name: f.default for f in fields(config_class)}
    for name in shared - {"test_step_num_episodes"}:
        assert config_fields[name] == trainer_fields[name], name
    # -1: one episode per test env, resolved when the trainer is built
    assert config_fields["test_step_num_episodes"] == -1
    assert "update_step_num_repetitions" in shared or config_class is OffPolicyTrainingConfig
    assert (
        "update_step_num_gradient_steps_per_sample" in shared
        or config_class is OnPolicyTrainingConfig
    )
