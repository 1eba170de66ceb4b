"""The run summary every training script ends with (``tianshou.scripts.summary``): the printed
lines, the result file, and the final test on new episodes."""

import json
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from tianshou.algorithm.algorithm_base import RandomActionPolicy
from tianshou.data import Collector, CollectStats, InfoStats
from tianshou.data.stats import TimingStats
from tianshou.env import DummyVectorEnv
from tianshou.scripts.summary import (
    RESULT_FILE,
    final_test_return,
    last_logged_test_return,
    report_training,
)
from tianshou.utils.logger import CSVLogger


def info(best_reward: float) -> InfoStats:
    return InfoStats(
        update_step=7,
        best_score=best_reward,
        best_reward=best_reward,
        best_reward_std=0.0,
        train_step=1234,
        train_episode=3,
        test_step=10,
        test_episode=2,
        timing=TimingStats(total_time=2.5),
    )


def test_report_prints_the_figures_and_writes_them_with_the_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "policy.pth").write_bytes(b"")
    summary = report_training(
        task="CartPole-v1",
        algorithm="dqn",
        info=info(180.0),
        final_test_return=175.25,
        log_dir=str(tmp_path / "run"),
        config={"seed": 3, "hidden_sizes": (64, 64), "path": tmp_path},
        policy_path=str(tmp_path / "policy.pth"),
        video_path="watch.mp4",
    )
    out = capsys.readouterr().out
    assert out == summary.format() + "\n"
    for row in (
        "task               CartPole-v1",
        "env steps          1,234",
        "wall time          2.5 s",
    ):
        assert row in out
    assert "best test return   180.00" in out and "final test return  175.25" in out
    assert f"policy             {tmp_path / 'policy.pth'}" in out
    assert "video              watch.mp4" in out
    saved = json.loads((tmp_path / "run" / RESULT_FILE).read_text())
    assert saved["result_path"] == str(tmp_path / "run" / RESULT_FILE)
    assert (saved["env_steps"], saved["update_steps"], saved["best_test_return"]) == (
        1234,
        7,
        180.0,
    )
    assert saved["config"] == {"seed": 3, "hidden_sizes": [64, 64], "path": str(tmp_path)}


def test_report_names_a_missing_policy_and_video(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = report_training(
        task="t",
        algorithm="a",
        info=info(1.0),
        final_test_return=1.0,
        log_dir=str(tmp_path),
        config={},
        policy_path=str(tmp_path / "policy.pth"),
    )
    assert summary.policy_path is None and summary.video_path is None
    out = capsys.readouterr().out
    assert "(none saved)" in out and "(none recorded)" in out


def test_final_test_return_runs_new_episodes_and_reduces_multi_agent_returns() -> None:
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    envs.seed(0)
    policy = RandomActionPolicy(envs.action_space[0])
    collector = Collector[CollectStats](policy, envs)
    assert final_test_return(collector, 3) > 0
    doubled = final_test_return(collector, 2, lambda returns: np.zeros(len(returns)))
    assert doubled == 0.0
    with pytest.raises(ValueError, match="at least 1 episode"):
        final_test_return(collector, 0)


def test_last_logged_test_return_reads_the_last_test_step_of_a_log(tmp_path: Path) -> None:
    assert np.isnan(last_logged_test_return(str(tmp_path)))  # no logs at all
    logger = CSVLogger(str(tmp_path), test_interval=1)
    for step, mean in ((0, 1.0), (10, 5.0), (20, 3.5)):
        logger.log_test_data({"returns_stat": {"mean": mean}}, step)
    logger.finalize()
    assert last_logged_test_return(str(tmp_path)) == 3.5
