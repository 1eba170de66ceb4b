"""The logger hooks a trainer calls, compared with the calls the published trainer makes.

A program written for the published library often subclasses a logger and overrides a hook
(``log_test_data`` to capture test results, say). Each test here subclasses one of the published
logger classes with a recorder of every hook call and checks the sequence against the one the
published trainer produces, written down from its behaviour:

* the initial test step logs its test data at env step 0;
* each online training step logs one ``log_update_data`` per gradient step at the training
  step's number (several with the same number off-policy), then ``log_training_data`` with the
  step's collection statistics at the env steps counted so far, finished episodes or not;
* each epoch ends with ``save_data``, the test step's ``log_test_data`` and ``log_info_data``
  with the epoch's ``InfoStats``;
* offline, each training step is one update, logged at its number.
"""

import dataclasses
from typing import Any

import gymnasium as gym
import pytest
from torch.utils.tensorboard import SummaryWriter

from test.trainer.stand_ins import (
    StandInOffline,
    StandInOffPolicy,
    StandInOnPolicy,
    SwitchPolicy,
    count_env_collectors,
)
from test.utils.logger.fake_wandb import install_fake_wandb
from tianshou.data import CollectStats, InfoStats, ReplayBuffer
from tianshou.trainer import (
    OfflineTrainer,
    OfflineTrainerParams,
    OffPolicyTrainer,
    OffPolicyTrainerParams,
    OnPolicyTrainer,
    OnPolicyTrainerParams,
)
from tianshou.utils import BaseLogger, LazyLogger, TensorboardLogger, WandbLogger

Call = tuple[Any, ...]

_COLLECT_KEYS = {field.name for field in dataclasses.fields(CollectStats)}
_INFO_KEYS = {field.name for field in dataclasses.fields(InfoStats)}


class _Recording:
    """Mixin: records each hook call as ``(hook, *counters)`` and checks the logged dicts' keys,
    then lets the logger class do what it does."""

    calls: list[Call]

    def log_training_data(self, log_data: dict[str, Any], step: int) -> None:
        assert set(log_data) == _COLLECT_KEYS
        self.calls.append(("training", step))
        super().log_training_data(log_data, step)  # type: ignore[misc]

    def log_test_data(self, log_data: dict[str, Any], step: int) -> None:
        assert set(log_data) == _COLLECT_KEYS and log_data["n_collected_episodes"] > 0
        self.calls.append(("test", step))
        super().log_test_data(log_data, step)  # type: ignore[misc]

    def log_update_data(self, log_data: dict[str, Any], step: int) -> None:
        assert "loss" in log_data and "train_time" in log_data
        self.calls.append(("update", step))
        super().log_update_data(log_data, step)  # type: ignore[misc]

    def log_info_data(self, log_data: dict[str, Any], step: int) -> None:
        assert set(log_data) == _INFO_KEYS  # the published InfoStats, nothing added
        self.calls.append(("info", step))
        super().log_info_data(log_data, step)  # type: ignore[misc]

    def save_data(self, epoch: int, env_step: int, update_step: int, fn: Any = None) -> None:
        self.calls.append(("save", epoch, env_step, update_step))
        super().save_data(epoch, env_step, update_step, fn)  # type: ignore[misc]

    def restore_data(self) -> tuple[int, int, int]:
        self.calls.append(("restore",))
        return super().restore_data()  # type: ignore[misc]


class RecordingLazyLogger(_Recording, LazyLogger):
    def __init__(self) -> None:
        super().__init__()
        self.calls = []


class RecordingBaseLogger(_Recording, BaseLogger):
    """The smallest custom logger: ``write`` keeps the rows."""

    def __init__(self) -> None:
        super().__init__(training_interval=1, update_interval=1)
        self.calls = []
        self.rows: list[tuple[str, int]] = []

    def write(self, step_type: str, step: int, data: dict[str, Any]) -> None:
        self.rows.append((step_type, step))

    def restore_data(self) -> tuple[int, int, int]:
        self.calls.append(("restore",))
        return 0, 0, 0

    def restore_logged_data(self, log_path: str) -> dict:
        return {}

    def finalize(self) -> None:
        pass


class RecordingTensorboardLogger(_Recording, TensorboardLogger):
    def __init__(self, log_dir: str) -> None:
        super().__init__(SummaryWriter(log_dir))
        self.calls = []


class RecordingWandbLogger(_Recording, WandbLogger):
    def __init__(self, log_dir: str) -> None:
        super().__init__(project="calls")
        self.load(SummaryWriter(log_dir))
        self.calls = []


def _make_logger(kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> _Recording:
    if kind == "lazy":
        return RecordingLazyLogger()
    if kind == "base":
        return RecordingBaseLogger()
    if kind == "tensorboard":
        return RecordingTensorboardLogger(str(tmp_path / "tb"))
    install_fake_wandb(monkeypatch)
    return RecordingWandbLogger(str(tmp_path / "wandb"))


LOGGER_KINDS = ["lazy", "base", "tensorboard", "wandb"]
QUIET = {"verbose": False, "show_progress": False}


def run_off_policy(logger: BaseLogger, switch_after: int | None = None, **params: Any) -> None:
    """Train the stand-in off-policy algorithm on ``CountEnv``s, logging to ``logger``: tests
    of 2 episodes, mini-batches of 4, one gradient step per env step, unless ``params`` say
    otherwise."""
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    train, test = count_env_collectors(policy)
    settings: dict[str, Any] = {"test_step_num_episodes": 2, "batch_size": 4, **QUIET, **params}
    OffPolicyTrainer(
        StandInOffPolicy(policy, switch_after=switch_after),
        OffPolicyTrainerParams(
            training_collector=train, test_collector=test, logger=logger, **settings
        ),
    ).run()


def _online_epoch(
    epoch: int, steps_per_epoch: int, env_steps_per_step: int, updates_per_step: int
) -> list[Call]:
    """What the published trainer logs in one online epoch (training steps numbered from 1)."""
    calls: list[Call] = []
    first = (epoch - 1) * steps_per_epoch + 1
    for step in range(first, first + steps_per_epoch):
        calls += [("update", step)] * updates_per_step
        calls.append(("training", step * env_steps_per_step))
    last = first + steps_per_epoch - 1
    env_step = last * env_steps_per_step
    return [*calls, ("save", epoch, env_step, last), ("test", env_step), ("info", epoch)]


@pytest.mark.parametrize("kind", LOGGER_KINDS)
def test_off_policy_calls(kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    logger = _make_logger(kind, tmp_path, monkeypatch)
    run_off_policy(
        logger,  # type: ignore[arg-type]
        max_epochs=2,
        epoch_num_steps=10,
        collection_step_num_env_steps=4,  # 3 training steps of 4 env steps per epoch
        update_step_num_gradient_steps_per_sample=0.5,  # 2 gradient steps each
        save_checkpoint_fn=lambda epoch, *_: str(tmp_path / f"ckpt{epoch}"),
    )
    assert logger.calls == [
        ("test", 0),
        *_online_epoch(1, steps_per_epoch=3, env_steps_per_step=4, updates_per_step=2),
        *_online_epoch(2, steps_per_epoch=3, env_steps_per_step=4, updates_per_step=2),
    ]


@pytest.mark.parametrize("kind", LOGGER_KINDS)
def test_on_policy_calls(kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    logger = _make_logger(kind, tmp_path, monkeypatch)
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    train, test = count_env_collectors(policy)
    trainer = OnPolicyTrainer(
        StandInOnPolicy(policy),
        OnPolicyTrainerParams(
            training_collector=train,
            test_collector=test,
            max_epochs=2,
            epoch_num_steps=6,
            collection_step_num_env_steps=6,  # 1 training step per epoch, no episode ends
            test_step_num_episodes=2,  # in the first step (5-step episodes, 2 envs: 3 each)
            batch_size=4,
            logger=logger,  # type: ignore[arg-type]
            **QUIET,
        ),
    )
    trainer.run()
    assert logger.calls == [
        ("test", 0),
        *_online_epoch(1, steps_per_epoch=1, env_steps_per_step=6, updates_per_step=1),
        *_online_epoch(2, steps_per_epoch=1, env_steps_per_step=6, updates_per_step=1),
    ]


@pytest.mark.parametrize("kind", LOGGER_KINDS)
def test_offline_calls(kind: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    logger = _make_logger(kind, tmp_path, monkeypatch)
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    train, test = count_env_collectors(policy)
    train.collect(n_step=20, reset_before_collect=True)
    buffer: ReplayBuffer = train.buffer
    trainer = OfflineTrainer(
        StandInOffline(policy),
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=test,
            max_epochs=2,
            epoch_num_steps=3,
            test_step_num_episodes=2,
            batch_size=5,
            logger=logger,  # type: ignore[arg-type]
            **QUIET,
        ),
    )
    trainer.run()
    expected: list[Call] = [("test", 0)]
    for epoch in (1, 2):
        steps = range(3 * epoch - 2, 3 * epoch + 1)
        expected += [("update", step) for step in steps]
        expected += [("save", epoch, 15 * epoch, 3 * epoch), ("test", 15 * epoch)]
        expected.append(("info", epoch))
    assert logger.calls == expected


def test_test_in_training_logs_its_test_at_the_steps_before_the_collection(
    tmp_path: Any,
) -> None:
    """The published trainer counts a training step's env steps after the step: a test that
    the training returns trigger is logged (and named) at the env steps before them."""
    logger = RecordingBaseLogger()
    run_off_policy(
        logger,
        max_epochs=1,
        epoch_num_steps=20,
        collection_step_num_env_steps=10,  # the first collection finishes 2 episodes
        stop_fn=lambda score: score >= 5.0,
        test_in_training=True,
    )
    assert logger.calls == [("test", 0), ("test", 0), ("training", 10), ("info", 1)]


def test_the_plain_lazy_logger_is_not_called(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the do-nothing logger itself may be skipped."""
    called: list[str] = []
    for hook in ("log_training_data", "log_test_data", "log_update_data", "log_info_data"):
        monkeypatch.setattr(
            LazyLogger, hook, lambda self, data, step, hook=hook: called.append(hook)
        )
    run_off_policy(LazyLogger(), max_epochs=1, epoch_num_steps=4, collection_step_num_env_steps=4)
    assert called == []


def test_a_subclass_overriding_one_hook_captures_every_test() -> None:
    """The published way to write a small custom logger: extend LazyLogger, override one hook."""

    class TestCurve(LazyLogger):
        def __init__(self) -> None:
            super().__init__()
            self.points: list[tuple[int, float]] = []

        def log_test_data(self, log_data: dict, step: int) -> None:
            self.points.append((step, log_data["returns_stat"]["mean"]))

    curve = TestCurve()
    run_off_policy(
        curve,
        switch_after=4,
        max_epochs=3,
        epoch_num_steps=4,
        collection_step_num_env_steps=4,
        update_step_num_gradient_steps_per_sample=0.5,
    )
    assert curve.points == [(0, 5.0), (4, 5.0), (8, 10.0), (12, 10.0)]


def test_a_resumed_run_restores_first_and_goes_on_from_the_checkpoint(tmp_path: Any) -> None:
    def run(max_epochs: int, resume: bool) -> list[Call]:
        logger = RecordingTensorboardLogger(str(tmp_path / "tb"))
        run_off_policy(
            logger,
            max_epochs=max_epochs,
            epoch_num_steps=4,
            collection_step_num_env_steps=4,
            resume_from_log=resume,
            save_checkpoint_fn=lambda epoch, *_: str(tmp_path / f"ckpt{epoch}"),
        )
        return logger.calls

    run(max_epochs=1, resume=False)
    assert run(max_epochs=2, resume=True) == [
        ("restore",),
        ("test", 4),  # the initial test, at the restored env step
        *_online_epoch(2, steps_per_epoch=1, env_steps_per_step=4, updates_per_step=4),
    ]
