"""The trainers' bookkeeping, callbacks, stopping, update calls, logging and resume.

Stand-in algorithms (``test/trainer/stand_ins.py``) record their update calls, and ``CountEnv``
makes every return known in advance (5 per episode under action 0, 10 under action 1), so the
counters can be checked exactly.
"""

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from torch.utils.tensorboard import SummaryWriter

import tianshou.config
from test.trainer.stand_ins import (
    RandomDiscretePolicy,
    StandInOffline,
    StandInOffPolicy,
    StandInOnPolicy,
    StandInStats,
    SwitchPolicy,
    count_env_collectors,
)
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.data.buffer.buffer_base import MalformedBufferError
from tianshou.data.stats import EpochStats, InfoStats
from tianshou.env import DummyVectorEnv
from tianshou.trainer import (
    OfflineTrainer,
    OfflineTrainerParams,
    OffPolicyTrainer,
    OffPolicyTrainerParams,
    OnPolicyTrainer,
    OnPolicyTrainerParams,
)
from tianshou.utils.logger import BaseLogger, CSVLogger, TensorboardLogger

QUIET: dict[str, Any] = {"verbose": False, "show_progress": False}


def off_policy_setup(
    switch_after: int | None = None, **overrides: Any
) -> tuple[OffPolicyTrainer, StandInOffPolicy]:
    """3 epochs of 10 env steps, 4 env steps (2 envs) per training step, 2 gradient steps."""
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    algorithm = StandInOffPolicy(policy, switch_after=switch_after)
    train, test = count_env_collectors(policy)
    kwargs: dict[str, Any] = {
        "training_collector": train,
        "test_collector": test,
        "max_epochs": 3,
        "epoch_num_steps": 10,
        "collection_step_num_env_steps": 4,
        "update_step_num_gradient_steps_per_sample": 0.5,
        "test_step_num_episodes": 2,
        "batch_size": 8,
        **QUIET,
    }
    kwargs.update(overrides)
    return OffPolicyTrainer(algorithm, OffPolicyTrainerParams(**kwargs)), algorithm


def test_off_policy_counters() -> None:
    trainer, algorithm = off_policy_setup()
    info = trainer.run()
    assert isinstance(info, InfoStats)
    # 10 steps per epoch in chunks of 4 -> 3 training steps (12 env steps) per epoch
    assert info.update_step == 9
    assert info.train_step == 36
    assert info.train_episode == 6  # 18 steps per env: 3 episodes of 5 each
    # round(0.5 * 4) = 2 gradient steps per training step
    assert len(algorithm.calls) == 18
    assert all(call["batch_len"] == 8 for call in algorithm.calls)
    # initial test + 3 epochs, 2 episodes of 5 steps each
    assert (info.test_episode, info.test_step) == (8, 40)
    assert info.best_reward == info.best_score == 5.0
    assert info.timing.total_time >= info.timing.train_time > 0
    assert 0 < info.timing.train_time_update < info.timing.train_time
    assert info.timing.test_time > 0 and info.timing.update_speed > 0


def test_execute_epoch_returns_epoch_stats() -> None:
    trainer, _ = off_policy_setup()
    trainer.reset()
    stats = trainer.execute_epoch()
    assert isinstance(stats, EpochStats)
    assert stats.epoch == 1
    assert isinstance(stats.train_collect_stat, CollectStats)
    assert stats.train_collect_stat.n_collected_steps == 4
    assert stats.test_collect_stat is not None
    assert stats.test_collect_stat.n_collected_episodes == 2
    assert isinstance(stats.training_stat, StandInStats)
    assert stats.training_stat.loss == 6.0
    # moving average of the losses 1..6
    assert stats.training_stat.smoothed_loss == {"loss": pytest.approx(3.5)}
    assert stats.info_stat.update_step == 3 and stats.info_stat.train_step == 12


def test_iterating_yields_each_epoch() -> None:
    trainer, _ = off_policy_setup()
    epochs = [stats.epoch for stats in trainer]
    assert epochs == [1, 2, 3]


def test_stop_fn_best_score_and_save_best_fn() -> None:
    saved: list[float] = []
    stop_calls: list[float] = []

    def stop_fn(score: float) -> bool:
        stop_calls.append(score)
        return score >= 10

    # the policy switches to the better action during epoch 2 (after 8 updates)
    trainer, _ = off_policy_setup(
        switch_after=8,
        max_epochs=10,
        stop_fn=stop_fn,
        save_best_fn=lambda algo: saved.append(algo.policy.level),
    )
    info = trainer.run()
    assert stop_calls == [5.0, 10.0]  # checked after each epoch's test, not the initial one
    assert info.best_reward == 10.0 and info.best_score == 10.0 and info.best_reward_std == 0.0
    assert info.update_step == 6  # stopped after epoch 2
    assert saved == [0, 1]  # initial test, then the improvement
    assert stop_fn(info.best_reward)


def test_compute_score_fn_decides_best(capsys: pytest.CaptureFixture) -> None:
    # a score that prefers short... here: the negative mean return, so action 0 stays best
    trainer, _ = off_policy_setup(
        switch_after=8,
        compute_score_fn=lambda stats: -float(stats.returns_stat.mean),
        verbose=True,
    )
    info = trainer.run()
    assert info.best_score == -5.0 and info.best_reward == 5.0
    lines = capsys.readouterr().out.strip().splitlines()
    # the published trainer's wording, its double comma and the space flag of the score included
    assert lines[0] == (
        "Initial test step: test_reward: 5.000000 ± 0.000000,, score: -5.000000 "
        "best_reward: 5.000000 ± 0.000000, best_score: -5.000000 in #0"
    )
    assert lines[-1] == (
        "Epoch #3: test_reward: 10.000000 ± 0.000000,, score: -10.000000 "
        "best_reward: 5.000000 ± 0.000000, best_score: -5.000000 in #0"
    )


def test_a_positive_score_is_printed_with_a_leading_space(capsys: pytest.CaptureFixture) -> None:
    trainer, _ = off_policy_setup(
        max_epochs=1, compute_score_fn=lambda stats: 1.0 + float(stats.returns_stat.mean)
    )
    trainer.params.verbose = True
    trainer.run()
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("Initial test step: test_reward: 5.000000 ± 0.000000,, score:  6.0")


def test_verbose_summary_lines(capsys: pytest.CaptureFixture) -> None:
    trainer, _ = off_policy_setup(switch_after=8, verbose=True)
    trainer.run()
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == [
        "Initial test step: test_reward: 5.000000 ± 0.000000, best_reward: 5.000000 ± 0.000000 "
        "in #0",
        "Epoch #1: test_reward: 5.000000 ± 0.000000, best_reward: 5.000000 ± 0.000000 in #0",
        "Epoch #2: test_reward: 10.000000 ± 0.000000, best_reward: 10.000000 ± 0.000000 in #2",
        "Epoch #3: test_reward: 10.000000 ± 0.000000, best_reward: 10.000000 ± 0.000000 in #2",
    ]


def test_summary_lines_also_go_to_the_log(caplog: pytest.LogCaptureFixture) -> None:
    trainer, _ = off_policy_setup(max_epochs=1, verbose=False)
    with caplog.at_level(logging.INFO, logger="tianshou.trainer.trainer_base"):
        trainer.run()
    lines = [r.getMessage() for r in caplog.records if "test_reward" in r.getMessage()]
    assert [line.split(":")[0] for line in lines] == ["Initial test step", "Epoch #1"]


def test_training_fn_and_test_fn_arguments() -> None:
    training_calls: list[tuple[int, int]] = []
    test_calls: list[tuple[int, int | None]] = []
    trainer, _ = off_policy_setup(
        max_epochs=2,
        training_fn=lambda epoch, step: training_calls.append((epoch, step)),
        test_fn=lambda epoch, step: test_calls.append((epoch, step)),
    )
    trainer.run()
    assert training_calls == [(1, 0), (1, 4), (1, 8), (2, 12), (2, 16), (2, 20)]
    assert test_calls == [(0, 0), (1, 12), (2, 24)]


def test_policy_flag_during_callbacks() -> None:
    flags: dict[str, list[bool]] = {"training": [], "test": []}
    trainer, algorithm = off_policy_setup(max_epochs=1)
    policy = algorithm.policy
    trainer.params.training_fn = lambda *_: flags["training"].append(policy.is_within_training_step)
    trainer.params.test_fn = lambda *_: flags["test"].append(policy.is_within_training_step)
    trainer.run()
    assert flags["training"] == [True] * 3
    assert flags["test"] == [False] * 2
    assert not policy.is_within_training_step


def test_zero_gradient_steps_is_an_error() -> None:
    trainer, _ = off_policy_setup(update_step_num_gradient_steps_per_sample=0.1)
    with pytest.raises(ValueError, match=r"no gradient step.*n_collected_steps=4"):
        trainer.run()


def test_fractional_gradient_steps_are_rounded() -> None:
    trainer, algorithm = off_policy_setup(
        max_epochs=1, update_step_num_gradient_steps_per_sample=0.7
    )
    trainer.run()
    assert len(algorithm.calls) == 3 * round(0.7 * 4)


def test_test_in_training_stops_mid_epoch() -> None:
    training_calls: list[tuple[int, int]] = []
    trainer, algorithm = off_policy_setup(
        switch_after=2,
        max_epochs=5,
        epoch_num_steps=100,
        stop_fn=lambda r: r >= 10,
        test_in_training=True,
        training_fn=lambda epoch, step: training_calls.append((epoch, step)),
    )
    info = trainer.run()
    # each env does 2 steps per training step; after step 1 the policy takes action 1, so
    # the first episodes (env steps 1-5) return 8 and the second ones (6-10, finishing in
    # training step 5) return 10, which triggers the test, which passes
    assert info.train_step == 20
    assert info.update_step == 5
    assert len(algorithm.calls) == 8  # the stopping step does no update
    assert training_calls == [(1, 0), (1, 4), (1, 8), (1, 12), (1, 16)]
    assert info.best_reward == 10.0
    assert info.test_episode == 4  # initial test + the test in training


def test_test_in_training_continues_when_the_test_fails() -> None:
    stop_calls: list[float] = []

    def stop_fn(score: float) -> bool:  # holds for the training returns only
        stop_calls.append(score)
        return len(stop_calls) == 1

    trainer, algorithm = off_policy_setup(max_epochs=1, stop_fn=stop_fn, test_in_training=True)
    info = trainer.run()
    assert stop_calls == [5.0, 5.0, 5.0]  # training returns, in-training test, epoch test
    assert info.update_step == 3 and len(algorithm.calls) == 6
    assert info.test_episode == 6  # initial, in-training and epoch test


def test_on_policy_update_uses_and_clears_the_buffer() -> None:
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    algorithm = StandInOnPolicy(policy)
    train, test = count_env_collectors(policy, num_envs=2, length=3)
    params = OnPolicyTrainerParams(
        training_collector=train,
        test_collector=test,
        max_epochs=2,
        epoch_num_steps=8,
        collection_step_num_env_steps=4,
        batch_size=16,
        update_step_num_repetitions=3,
        **QUIET,
    )
    info = OnPolicyTrainer(algorithm, params).run()
    assert info.update_step == 4 and info.train_step == 16
    assert algorithm.calls == [{"batch_size": 16, "repeat": 3, "buffer_len": 4}] * 4
    assert len(train.buffer) == 0
    # episodes of 3 steps spanning two collections still count whole returns
    assert info.train_episode == 16 // 3 - (16 // 3) % 2
    assert info.best_reward == 3.0


def test_on_policy_by_episodes() -> None:
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    algorithm = StandInOnPolicy(policy)
    train, _ = count_env_collectors(policy, num_envs=2, length=3)
    params = OnPolicyTrainerParams(
        training_collector=train,
        max_epochs=1,
        epoch_num_steps=12,
        collection_step_num_env_steps=None,
        collection_step_num_episodes=2,
        batch_size=None,
        **QUIET,
    )
    info = OnPolicyTrainer(algorithm, params).run()
    assert info.train_step == 12 and info.train_episode == 4 and info.update_step == 2
    assert [call["buffer_len"] for call in algorithm.calls] == [6, 6]
    assert algorithm.calls[0]["batch_size"] is None
    assert info.test_episode == 0 and info.best_reward == 0.0


def test_offline_trainer_counts_updates() -> None:
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    train, test = count_env_collectors(policy)
    train.reset()
    train.collect(n_step=20)
    algorithm = StandInOffline(policy, switch_after=7)
    params = OfflineTrainerParams(
        buffer=train.buffer,
        test_collector=test,
        max_epochs=3,
        epoch_num_steps=5,
        batch_size=4,
        stop_fn=lambda r: r >= 10,
        **QUIET,
    )
    info = OfflineTrainer(algorithm, params).run()
    assert algorithm.processed is train.buffer
    assert len(algorithm.calls) == 10  # stopped after epoch 2
    assert info.update_step == 10 and info.train_step == 10 * 4
    assert info.best_reward == 10.0
    assert info.timing.train_time_collect == 0.0


def test_nan_in_fresh_data_raises_when_validation_is_enabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    algorithm = StandInOffPolicy(policy)
    train, _ = count_env_collectors(policy, nan_reward_at=3)
    params = OffPolicyTrainerParams(
        training_collector=train,
        max_epochs=1,
        epoch_num_steps=10,
        collection_step_num_env_steps=2,
        batch_size=4,
        **QUIET,
    )
    OffPolicyTrainer(algorithm, params).run()  # validation is off by default
    monkeypatch.setattr(tianshou.config, "ENABLE_VALIDATION", True)
    with pytest.raises(MalformedBufferError, match="NaN"):
        OffPolicyTrainer(algorithm, params).run(reset_collector_buffers=True)
    assert np.isnan(train.buffer.rew).sum() == 2  # the faulty step of each env, just collected


def test_multi_agent_return_reduction() -> None:
    trainer, _ = off_policy_setup(
        max_epochs=1, multi_agent_return_reduction=lambda returns: returns * 3
    )
    info = trainer.run()
    assert info.best_reward == 15.0


def test_resume_from_tensorboard_checkpoint(tmp_path: Any) -> None:
    uninterrupted, _ = off_policy_setup(max_epochs=3)
    expected = uninterrupted.run()

    checkpoints: list[tuple[int, int, int]] = []

    def save_checkpoint_fn(epoch: int, env_step: int, gradient_step: int) -> str:
        checkpoints.append((epoch, env_step, gradient_step))
        return str(tmp_path / f"ckpt_{epoch}.pt")

    log_dir = str(tmp_path / "log")
    first, _ = off_policy_setup(
        max_epochs=2,
        logger=TensorboardLogger(SummaryWriter(log_dir)),
        save_checkpoint_fn=save_checkpoint_fn,
    )
    first.run()
    assert checkpoints == [(1, 12, 3), (2, 24, 6)]

    resumed_logger = TensorboardLogger(SummaryWriter(log_dir))
    resumed, _ = off_policy_setup(
        max_epochs=3,
        logger=resumed_logger,
        save_checkpoint_fn=save_checkpoint_fn,
        resume_from_log=True,
    )
    epochs = [stats.epoch for stats in resumed]
    assert epochs == [3]
    info = resumed._create_info_stats()
    assert (info.update_step, info.train_step) == (expected.update_step, expected.train_step)
    assert checkpoints[-1] == (3, 36, 9)
    assert resumed_logger.restore_data() == (3, 36, 9)


LOGGER_FACTORIES: dict[str, Callable[[str], BaseLogger]] = {
    "tensorboard": lambda log_dir: TensorboardLogger(SummaryWriter(log_dir)),
    "csv": lambda log_dir: CSVLogger(log_dir),
}


@pytest.mark.parametrize("logger_kind", sorted(LOGGER_FACTORIES))
def test_best_result_survives_a_resume(
    tmp_path: Any, logger_kind: str, capsys: pytest.CaptureFixture
) -> None:
    """The first run reaches its best (10, in epoch 2); the resumed run's policy only scores 5,
    so its initial test must neither replace the best nor call ``save_best_fn``."""
    make_logger = LOGGER_FACTORIES[logger_kind]
    log_dir = str(tmp_path / "log")
    first, _ = off_policy_setup(
        switch_after=8,
        max_epochs=2,
        logger=make_logger(log_dir),
        save_checkpoint_fn=lambda epoch, *_: str(tmp_path / f"ckpt_{epoch}.pt"),
    )
    assert first.run().best_reward == 10.0

    saved: list[int] = []
    resumed, _ = off_policy_setup(
        max_epochs=3,
        logger=make_logger(log_dir),
        resume_from_log=True,
        save_best_fn=lambda algo: saved.append(algo.policy.level),
        verbose=True,
    )
    capsys.readouterr()
    info = resumed.run()
    assert (info.best_reward, info.best_score, info.best_reward_std) == (10.0, 10.0, 0.0)
    assert saved == []
    assert capsys.readouterr().out.strip().splitlines() == [
        "Initial test step: test_reward: 5.000000 ± 0.000000, best_reward: 10.000000 ± 0.000000 "
        "in #2",
        "Epoch #3: test_reward: 5.000000 ± 0.000000, best_reward: 10.000000 ± 0.000000 in #2",
    ]


@pytest.mark.parametrize("logger_kind", sorted(LOGGER_FACTORIES))
def test_a_best_result_of_the_initial_test_survives_a_resume(
    tmp_path: Any, logger_kind: str, capsys: pytest.CaptureFixture
) -> None:
    """The first run's best is its initial test (epoch 0: the policy switches to the better
    action only after the run); the resumed run must still say so."""
    make_logger = LOGGER_FACTORIES[logger_kind]
    log_dir = str(tmp_path / "log")
    first, _ = off_policy_setup(
        compute_score_fn=lambda stats: -float(stats.returns_stat.mean),
        switch_after=8,
        max_epochs=2,
        logger=make_logger(log_dir),
        save_checkpoint_fn=lambda epoch, *_: str(tmp_path / f"ckpt_{epoch}.pt"),
    )
    assert first.run().best_score == -5.0
    resumed, _ = off_policy_setup(
        compute_score_fn=lambda stats: -float(stats.returns_stat.mean),
        max_epochs=3,
        logger=make_logger(log_dir),
        resume_from_log=True,
        verbose=True,
    )
    capsys.readouterr()
    resumed.run()
    assert capsys.readouterr().out.strip().splitlines()[-1].endswith("in #0")


def test_resume_from_an_empty_log_dir_says_nothing_was_resumed(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    log_dir = str(tmp_path / "empty")
    trainer, _ = off_policy_setup(
        max_epochs=1, logger=TensorboardLogger(SummaryWriter(log_dir)), resume_from_log=True
    )
    with caplog.at_level(logging.WARNING, logger="tianshou.trainer"):
        info = trainer.run()
    (record,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "nothing was resumed" in record.getMessage()
    assert "starts from scratch" in record.getMessage() and log_dir in record.getMessage()
    assert (info.train_step, info.update_step, info.best_reward) == (12, 3, 5.0)


def test_resume_without_a_logged_best_result_says_so(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A checkpoint whose run logged no info record (here: info_interval too large) restores
    the counters; the initial test step then sets the best result, and a warning says so."""
    log_dir = str(tmp_path / "log")
    first, _ = off_policy_setup(
        switch_after=2,
        max_epochs=1,
        logger=TensorboardLogger(SummaryWriter(log_dir), info_interval=100),
        save_checkpoint_fn=lambda *_: "ckpt.pt",
    )
    first.run()
    resumed, _ = off_policy_setup(
        max_epochs=2, logger=TensorboardLogger(SummaryWriter(log_dir)), resume_from_log=True
    )
    with caplog.at_level(logging.WARNING, logger="tianshou.trainer"):
        info = resumed.run()
    assert "no logged best result" in caplog.text
    assert info.best_reward == 5.0 and info.train_step == 24


def test_cartpole_random_policy_with_progress_bar(capsys: pytest.CaptureFixture) -> None:
    env = gym.make("CartPole-v1")
    policy = RandomDiscretePolicy(env.action_space, seed=1)
    algorithm = StandInOffPolicy(policy)
    train_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    train_envs.seed(0)
    test_envs.seed(1)
    train = Collector(policy, train_envs, VectorReplayBuffer(1000, 2))
    test = Collector(policy, test_envs)
    params = OffPolicyTrainerParams(
        training_collector=train,
        test_collector=test,
        max_epochs=2,
        epoch_num_steps=200,
        collection_step_num_env_steps=10,
        update_step_num_gradient_steps_per_sample=0.1,
        test_step_num_episodes=4,
        batch_size=32,
    )
    info = OffPolicyTrainer(algorithm, params).run()
    assert info.train_step == 400 and info.update_step == 40
    assert len(algorithm.calls) == 40
    assert 8 <= info.best_reward <= 100  # a random CartPole policy lasts ~10-40 steps
    captured = capsys.readouterr()
    assert "Epoch #2" in captured.err and "env_step=400" in captured.err
    assert captured.out.count("test_reward") == 3


def test_training_stats_is_a_dataclass_of_floats() -> None:
    trainer, _ = off_policy_setup(max_epochs=1)
    trainer.reset()
    stats = trainer.execute_epoch().training_stat
    assert stats is not None
    assert dataclasses.asdict(stats)["smoothed_loss"] == {"loss": 3.5}


def test_run_training_creates_the_matching_trainer() -> None:
    policy = SwitchPolicy(gym.spaces.Discrete(2))
    algorithm = StandInOnPolicy(policy)
    train, _ = count_env_collectors(policy)
    params = OnPolicyTrainerParams(
        training_collector=train,
        max_epochs=1,
        epoch_num_steps=4,
        collection_step_num_env_steps=4,
        **QUIET,
    )
    assert isinstance(algorithm.create_trainer(params), OnPolicyTrainer)
    info = algorithm.run_training(params)
    assert (info.train_step, info.update_step, len(algorithm.calls)) == (4, 1, 1)
