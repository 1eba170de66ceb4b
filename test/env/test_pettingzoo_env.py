"""PettingZooEnv on a tiny hand-written turn-based game (so no extra game packages are needed)."""

from typing import Any, ClassVar

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.utils.env import AECEnv

from tianshou.env import DummyVectorEnv, PettingZooEnv, SubprocVectorEnv


class RaceToTen(AECEnv):
    """Two players alternately add 1, 2 or 3 to a total; whoever reaches 10 wins.

    Moves that would overshoot 10 are masked out when ``masked`` is set.
    """

    metadata: ClassVar[dict[str, Any]] = {"name": "race_to_ten_v0"}

    def __init__(self, masked: bool = True) -> None:
        super().__init__()
        self.masked = masked
        self.possible_agents = ["player_0", "player_1"]
        board = spaces.Box(0, 10, (1,), np.float32)
        self._obs_space: spaces.Space = (
            spaces.Dict({"observation": board, "action_mask": spaces.MultiBinary(3)})
            if masked
            else board
        )
        self.total = 0

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return spaces.Discrete(3)

    def observe(self, agent: str) -> Any:
        board = np.array([self.total], dtype=np.float32)
        if not self.masked:
            return board
        mask = np.array([self.total + k <= 10 for k in (1, 2, 3)], dtype=np.int8)
        return {"observation": board, "action_mask": mask}

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.total = 0
        self.rewards = dict.fromkeys(self.agents, 0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict] = {agent: {} for agent in self.agents}
        self.agent_selection = self.agents[0]

    def step(self, action: int) -> None:
        mover = self.agent_selection
        other = self.agents[1 - self.agents.index(mover)]
        self.total += int(action) + 1
        self.rewards = dict.fromkeys(self.agents, 0)
        if self.total >= 10:
            self.rewards.update({mover: 1, other: -1})
            self.terminations = dict.fromkeys(self.agents, True)
        self._cumulative_rewards = dict(self.rewards)
        self.agent_selection = other


def test_observation_dict_mask_and_rewards() -> None:
    env = PettingZooEnv(RaceToTen())
    obs, info = env.reset()
    assert obs["agent_id"] == "player_0" and info == {}
    np.testing.assert_array_equal(obs["obs"], [0.0])
    assert obs["mask"] == [True, True, True]
    for _ in range(3):  # totals 3, 6, 9
        obs, rew, terminated, truncated, _ = env.step(2)
    assert obs["agent_id"] == "player_1" and obs["mask"] == [True, False, False]
    assert rew == [0, 0] and not terminated
    obs, rew, terminated, truncated, _ = env.step(0)  # player_1 reaches 10
    assert rew == [-1, 1] and terminated and not truncated


def test_unmasked_discrete_game_allows_every_action() -> None:
    env = PettingZooEnv(RaceToTen(masked=False))
    obs, _ = env.reset()
    assert obs["mask"] == [True, True, True]
    assert env.action_space == spaces.Discrete(3)
    assert env.observation_space == spaces.Box(0, 10, (1,), np.float32)


@pytest.mark.parametrize("cls", [DummyVectorEnv, SubprocVectorEnv])
def test_runs_in_vector_envs(cls: type) -> None:
    venv = cls([lambda: PettingZooEnv(RaceToTen())] * 2)
    try:
        venv.seed(0)
        obs, _ = venv.reset()
        assert [o["agent_id"] for o in obs] == ["player_0", "player_0"]
        obs, rew, *_ = venv.step(np.array([2, 0]))
        assert rew.shape == (2, 2)
        assert [o["agent_id"] for o in obs] == ["player_1", "player_1"]
        np.testing.assert_array_equal([o["obs"][0] for o in obs], [3.0, 1.0])
    finally:
        venv.close()


def test_real_classic_game_through_the_pettingzoo_extra() -> None:
    """The ``pettingzoo`` extra installs what the classic games import (pygame): tic-tac-toe
    plays to the end through the wrapper, with only legal moves offered by the mask."""
    from pettingzoo.classic import tictactoe_v3

    env = PettingZooEnv(tictactoe_v3.env())
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(9):
        legal = np.flatnonzero(obs["mask"])
        assert obs["agent_id"] in ("player_1", "player_2")
        obs, rewards, terminated, truncated, _ = env.step(int(rng.choice(legal)))
        if terminated or truncated:
            break
    assert terminated or truncated
    assert sorted(rewards) in ([-1, 1], [0, 0])


def test_real_butterfly_game_imports_and_steps() -> None:
    """Pistonball needs pygame and pymunk, both installed by the ``pettingzoo`` extra."""
    from pettingzoo.butterfly import pistonball_v6

    env = PettingZooEnv(pistonball_v6.env(continuous=False, n_pistons=3, max_cycles=5))
    obs, _ = env.reset(seed=0)
    assert obs["obs"].shape == env.observation_space.shape
    _, rewards, _, _, _ = env.step(1)
    assert len(rewards) == 3
