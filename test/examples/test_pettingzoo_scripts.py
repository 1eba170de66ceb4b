"""The multi-agent example scripts: tic-tac-toe against a random opponent (turn-based) and
simple spread with independent and parameter-shared PPO (simultaneous moves), trained to
thresholds that a random policy does not reach."""

import importlib
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from tianshou.algorithm.algorithm_base import RandomActionPolicy
from tianshou.data import Collector
from tianshou.env import DummyVectorEnv


def script(name: str) -> ModuleType:
    return importlib.import_module(f"examples.pettingzoo.{name}")


# A random second player wins about 29% of its games against a random first player (and
# loses about 59%); the learner, playing second, must win at least 60%: twice the random rate.
TIC_TAC_TOE_WIN_RATE = 0.6


@pytest.mark.slow
def test_tic_tac_toe_dqn_beats_a_random_opponent(tmp_path: Path) -> None:
    tic_tac_toe = script("tic_tac_toe")
    args = tic_tac_toe.get_args(
        [
            "--logdir",
            str(tmp_path),
            "--lr",
            "5e-4",
            "--hidden-sizes",
            "128",
            "128",
            "--update-per-step",
            "0.2",
            "--test-num",
            "50",
            "--epoch",
            "10",
            "--win-rate",
            str(TIC_TAC_TOE_WIN_RATE),
        ]
    )
    result, _ = tic_tac_toe.train_agent(args)
    assert result.best_score >= TIC_TAC_TOE_WIN_RATE
    assert (tmp_path / "tic_tac_toe" / "dqn" / "policy.pth").is_file()
    # the saved learner plays 100 fresh games at the same level; its exploration (eps_test) and
    # the envs are seeded, so the games do not depend on how many random numbers training drew
    args.resume_path = str(tmp_path / "tic_tac_toe" / "dqn" / "policy.pth")
    np.random.seed(2024)
    marl_algorithm, _, _ = tic_tac_toe.get_agents(args)
    marl_algorithm.eval()
    envs = DummyVectorEnv([tic_tac_toe.get_env for _ in range(10)])
    envs.seed(2024)
    stats = Collector(marl_algorithm, envs, exploration_noise=True).collect(
        n_episode=100, reset_before_collect=True
    )
    wins = float(np.mean(stats.returns[:, 1] > 0))
    assert wins >= TIC_TAC_TOE_WIN_RATE - 0.1


def test_tic_tac_toe_options_take_every_spelling_and_warn_about_unknown_ones() -> None:
    tic_tac_toe = script("tic_tac_toe")
    dashed = tic_tac_toe.get_args(["--step-per-epoch", "5", "--training-num", "2"])
    with pytest.warns(UserWarning, match="ignoring unrecognized arguments: --bogus"):
        underscored = tic_tac_toe.get_args(
            ["--epoch_num_steps", "5", "--training_num", "2", "--bogus"]
        )
    assert dashed == underscored
    assert (dashed.epoch_num_steps, dashed.num_training_envs) == (5, 2)


def test_tic_tac_toe_watch_prints_the_game_in_the_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tic_tac_toe = script("tic_tac_toe")
    args = tic_tac_toe.get_args(["--seed", "3"])
    torch.manual_seed(0)
    reward = tic_tac_toe.watch(args)
    out = capsys.readouterr().out
    boards = [block for block in out.split("\n\n") if block.count("\n") >= 3]
    assert len(boards) >= 5  # a game has at least five moves
    assert all(
        set(line.replace(" ", "")) <= {"X", "O", "."} for line in boards[-1].splitlines()[1:]
    )
    assert reward in (-1.0, 0.0, 1.0)
    marks = boards[-1].count("X") + boards[-1].count("O")
    assert marks == len(boards)


def random_spread_return(mpe_spread_ppo: ModuleType, episodes: int = 100) -> float:
    args = mpe_spread_ppo.get_args([])
    envs = DummyVectorEnv([lambda: mpe_spread_ppo.get_env(args) for _ in range(10)])
    envs.seed(7)
    space = mpe_spread_ppo.get_env(args).action_space
    space.seed(7)
    stats = Collector(RandomActionPolicy(space), envs).collect(
        n_episode=episodes, reset_before_collect=True
    )
    return float(stats.returns.mean())


# A uniformly random team scores about -25.8 per agent (mean over agents of each agent's
# episode return); trained teams must beat it by a wide margin within 50,000 steps.
@pytest.mark.slow
@pytest.mark.parametrize(("shared", "threshold"), [(True, -21.0), (False, -22.5)])
def test_simple_spread_ppo_beats_a_random_team(
    tmp_path: Path, shared: bool, threshold: float
) -> None:
    mpe_spread_ppo = script("mpe_spread_ppo")
    random_return = random_spread_return(mpe_spread_ppo)
    assert random_return < threshold - 2.0
    argv = ["--logdir", str(tmp_path), "--epoch", "5", "--stop-return", str(threshold)]
    result = mpe_spread_ppo.train(mpe_spread_ppo.get_args(argv + (["--shared"] if shared else [])))
    assert result.best_reward >= threshold


def test_tic_tac_toe_watch_plays_the_saved_learner_without_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tic_tac_toe = script("tic_tac_toe")
    tiny = ["--logdir", str(tmp_path), "--epoch", "1", "--step-per-epoch", "20", "--test-num", "2"]
    tic_tac_toe.main(tiny)
    policy = tmp_path / "tic_tac_toe" / "dqn" / "policy.pth"
    saved_at = policy.stat().st_mtime_ns
    capsys.readouterr()
    reward = tic_tac_toe.main([*tiny, "--watch", "--resume-path", str(policy)])
    out = capsys.readouterr().out
    assert reward in (-1.0, 0.0, 1.0)
    assert "Run summary" not in out, "watching does not train"
    assert "plays square" in out
    assert policy.stat().st_mtime_ns == saved_at


def test_tic_tac_toe_watch_without_a_policy_says_it_is_untrained(
    capsys: pytest.CaptureFixture[str],
) -> None:
    reward = script("tic_tac_toe").main(["--watch"])
    assert reward in (-1.0, 0.0, 1.0)
    assert "watching untrained agents" in capsys.readouterr().out
