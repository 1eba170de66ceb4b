"""Validation, defaults and unpickling of the trainer parameter dataclasses."""

import pickle
from typing import Any

import gymnasium as gym
import pytest

from test.trainer.stand_ins import SwitchPolicy, count_env_collectors
from tianshou.data import AsyncCollector, ReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import (
    OfflineTrainerParams,
    OffPolicyTrainerParams,
    OnlineTrainerParams,
    OnPolicyTrainerParams,
    TrainerParams,
)
from tianshou.utils.logger import LazyLogger


@pytest.fixture
def collectors() -> tuple[Any, Any]:
    return count_env_collectors(SwitchPolicy(gym.spaces.Discrete(2)))


def test_defaults_match_the_published_api(collectors: tuple[Any, Any]) -> None:
    train, _ = collectors
    params = OffPolicyTrainerParams(training_collector=train)
    assert (params.max_epochs, params.epoch_num_steps, params.test_step_num_episodes) == (
        100,
        30000,
        1,
    )
    assert params.test_collector is None and params.logger is None
    assert params.verbose and params.show_progress and not params.resume_from_log
    assert params.collection_step_num_env_steps == 2048
    assert params.collection_step_num_episodes is None
    assert not params.test_in_training
    assert params.batch_size == 64 and params.update_step_num_gradient_steps_per_sample == 1.0
    on_policy = OnPolicyTrainerParams(training_collector=train)
    assert on_policy.batch_size == 64 and on_policy.update_step_num_repetitions == 1
    offline = OfflineTrainerParams(buffer=ReplayBuffer(10))
    assert offline.batch_size == 64


def test_fields_are_keyword_only(collectors: tuple[Any, Any]) -> None:
    with pytest.raises(TypeError):
        TrainerParams(10)  # type: ignore[misc]


def test_required_fields() -> None:
    with pytest.raises(TypeError, match="training_collector"):
        OnPolicyTrainerParams()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="buffer"):
        OfflineTrainerParams()  # type: ignore[call-arg]


@pytest.mark.parametrize("name", ["stop_fn", "test_fn", "save_best_fn"])
def test_test_callbacks_need_a_test_collector(name: str, collectors: tuple[Any, Any]) -> None:
    train, test = collectors
    kwargs: dict[str, Any] = {name: lambda *args: False}
    with pytest.raises(ValueError, match=rf"{name}.*test_collector"):
        OffPolicyTrainerParams(training_collector=train, **kwargs)
    OffPolicyTrainerParams(training_collector=train, test_collector=test, **kwargs)


def test_exactly_one_collection_size(collectors: tuple[Any, Any]) -> None:
    train, _ = collectors
    with pytest.raises(ValueError, match="exactly one of collection_step_num_env_steps"):
        OnPolicyTrainerParams(training_collector=train, collection_step_num_episodes=4)
    with pytest.raises(ValueError, match="exactly one"):
        OnPolicyTrainerParams(training_collector=train, collection_step_num_env_steps=None)
    params = OnPolicyTrainerParams(
        training_collector=train,
        collection_step_num_env_steps=None,
        collection_step_num_episodes=4,
    )
    assert params.collection_step_num_episodes == 4


def test_test_in_training_needs_test_collector_and_stop_fn(collectors: tuple[Any, Any]) -> None:
    train, test = collectors
    with pytest.raises(ValueError, match="test_in_training"):
        OffPolicyTrainerParams(training_collector=train, test_in_training=True)
    with pytest.raises(ValueError, match="test_in_training"):
        OffPolicyTrainerParams(training_collector=train, test_collector=test, test_in_training=True)
    params = OffPolicyTrainerParams(
        training_collector=train,
        test_collector=test,
        stop_fn=lambda r: r > 1,
        test_in_training=True,
    )
    assert params.test_in_training


def test_resume_needs_a_logger(collectors: tuple[Any, Any]) -> None:
    train, _ = collectors
    with pytest.raises(ValueError, match=r"resume_from_log.*logger"):
        OffPolicyTrainerParams(training_collector=train, resume_from_log=True)
    OffPolicyTrainerParams(training_collector=train, resume_from_log=True, logger=LazyLogger())


def test_async_test_collector_is_rejected(collectors: tuple[Any, Any]) -> None:
    train, _ = collectors
    policy = train.policy
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    async_collector = AsyncCollector(policy, envs)
    with pytest.raises(ValueError, match="AsyncCollector"):
        OffPolicyTrainerParams(training_collector=train, test_collector=async_collector)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epoch_num_steps": 0}, "epoch_num_steps must be a positive integer"),
        ({"max_epochs": -1}, "max_epochs"),
        ({"test_step_num_episodes": 0}, "test_step_num_episodes"),
        ({"collection_step_num_env_steps": -5}, "collection_step_num_env_steps"),
        ({"batch_size": 0}, "batch_size"),
        ({"update_step_num_gradient_steps_per_sample": -0.5}, "gradient_steps_per_sample"),
        ({"update_step_num_gradient_steps_per_sample": float("nan")}, "finite"),
    ],
)
def test_bad_values_are_named(
    kwargs: dict[str, Any], message: str, collectors: tuple[Any, Any]
) -> None:
    train, _ = collectors
    with pytest.raises(ValueError, match=message):
        OffPolicyTrainerParams(training_collector=train, **kwargs)


def test_on_policy_sizes(collectors: tuple[Any, Any]) -> None:
    train, _ = collectors
    # None and 0 both mean one mini-batch of everything collected
    assert OnPolicyTrainerParams(training_collector=train, batch_size=None).batch_size is None
    assert OnPolicyTrainerParams(training_collector=train, batch_size=0).batch_size == 0
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="batch_size must be a positive integer, or 0 or None"):
            OnPolicyTrainerParams(training_collector=train, batch_size=bad)
    with pytest.raises(ValueError, match="update_step_num_repetitions"):
        OnPolicyTrainerParams(training_collector=train, update_step_num_repetitions=0)


def test_offline_needs_a_buffer() -> None:
    with pytest.raises(ValueError, match="buffer must be a ReplayBuffer"):
        OfflineTrainerParams(buffer=[1, 2, 3])  # type: ignore[arg-type]


def test_online_params_is_the_common_base(collectors: tuple[Any, Any]) -> None:
    train, _ = collectors
    assert isinstance(OnPolicyTrainerParams(training_collector=train), OnlineTrainerParams)
    assert isinstance(OffPolicyTrainerParams(training_collector=train), TrainerParams)


def test_setstate_maps_old_field_names() -> None:
    params = OfflineTrainerParams(buffer=ReplayBuffer(10), max_epochs=3)
    state = dict(params.__dict__)
    state["train_fn"] = state.pop("training_fn")
    state["max_epoch"] = state.pop("max_epochs")
    del state["show_progress"]  # a field an old release did not have
    restored = OfflineTrainerParams.__new__(OfflineTrainerParams)
    restored.__setstate__(state)
    assert restored.max_epochs == 3
    assert restored.training_fn is None
    assert restored.show_progress is True
    assert "train_fn" not in restored.__dict__


def test_pickle_round_trip() -> None:
    params = OfflineTrainerParams(buffer=ReplayBuffer(10), max_epochs=7, batch_size=5)
    restored = pickle.loads(pickle.dumps(params))
    assert restored.max_epochs == 7 and restored.batch_size == 5
