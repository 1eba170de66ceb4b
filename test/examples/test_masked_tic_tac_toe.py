"""The masked-action example: its game's rules, its observation convention, and DQN and PPO
learning it with masks from the script's own command line."""

import json
from pathlib import Path

import numpy as np
import pytest

from tianshou.utils.space_info import SpaceInfo

from examples.discrete.masked_tic_tac_toe import TicTacToeVsRandom, main


def test_an_illegal_move_is_against_the_rules() -> None:
    env = TicTacToeVsRandom()
    obs, _ = env.reset(seed=0)
    assert obs["mask"].all() and not obs["obs"].any()
    obs, *_ = env.step(4)
    taken = np.flatnonzero(obs["mask"] == 0)
    assert 4 in taken and len(taken) == 2  # the learner's move and the opponent's reply
    with pytest.raises(ValueError, match="illegal move: square 4"):
        env.step(4)


def test_a_line_of_three_wins() -> None:
    env = TicTacToeVsRandom()
    env.reset(seed=0)
    env._board[:] = [1, 1, 0, -1, -1, 0, 0, 0, 0]
    *_, reward, terminated, _, _ = env.step(2)
    assert (reward, terminated) == (1.0, True)


def test_space_info_describes_the_masked_observation() -> None:
    info = SpaceInfo.from_env(TicTacToeVsRandom())
    assert info.observation_info.obs_shape == (9,) and info.observation_info.mask_shape == (9,)
    assert info.action_info.action_shape == 9


@pytest.mark.slow
def test_dqn_and_ppo_learn_to_beat_the_random_player(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A random legal first player averages about 0.3; 16k env steps each must do far better."""
    common = ["--epoch", "2", "--epoch-num-steps", "8192", "--no-progress"]
    returns = main([*common, "--persistence-base-dir", str(tmp_path)])
    assert returns["dqn"] >= 0.85, returns
    assert returns["ppo"] >= 0.7, returns
    out = capsys.readouterr().out
    assert out.count("Run summary") == 2
    for name in ("dqn", "ppo"):
        run_dir = tmp_path / "masked_tic_tac_toe" / name / "0"
        result = json.loads((run_dir / "result.json").read_text())
        assert result["final_test_return"] == pytest.approx(returns[name])
        watched = main(
            ["--algorithm", name, "--watch", "--resume-path", str(run_dir / "policy.pth")]
        )
        assert watched[name] > 0.5  # the best policy, saved and loaded again


def test_watch_needs_a_saved_policy_of_one_algorithm() -> None:
    with pytest.raises(SystemExit):
        main(["--watch"])
    with pytest.raises(SystemExit):
        main(["--resume-path", "policy.pth"])  # --algorithm both
