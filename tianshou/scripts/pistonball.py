"""The Pistonball game as the pettingzoo scripts (``examples/pettingzoo/pistonball*.py``) learn
it: small grayscale views, a reward for every move, and the team's return.

:class:`PistonView` makes the game cheap to learn from on a CPU: each piston's crop of the screen
becomes a small grayscale image (48x12 by default), and each move is paid the team's reward for
the ball's progress during that move, so the rewards of a cycle add up to PettingZoo's reward
for it (which the game gives only to the cycle's last move).
"""

import argparse
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import pygame
from pettingzoo.butterfly import pistonball_v6
from pettingzoo.utils.env import AECEnv
from pettingzoo.utils.wrappers import BaseWrapper

from tianshou.data import CollectStats
from tianshou.env import PettingZooEnv


class PistonView(BaseWrapper):
    """Pistonball with small grayscale observations and a reward for every move.

    * Observations: each piston's RGB crop, converted to grayscale and resized to
      ``(1, height, width)`` uint8 (a channel axis first, as convolutional networks expect).
    * Rewards: every move is paid the team's reward for the ball's progress during it; the
      cycle's last move also gets the cycle's time penalty. A cycle's rewards thus add up to
      PettingZoo's reward for the cycle (which it gives only after the last piston moved), and an
      episode's return is PettingZoo's.
    * Continuous actions are clipped to ``[-1, 1]`` before the game sees them.

    :param env: a pistonball AEC env made with ``render_mode="rgb_array"``: without a render
        mode the game never redraws the ball, and every observation would show the first frame.
    :param height: height of the resized observation.
    :param width: width of the resized observation, a multiple of 3 (the crop is three pistons
        wide).
    """

    def __init__(self, env: AECEnv, height: int, width: int) -> None:
        if width % 3:
            raise ValueError(
                f"the view's width must be a multiple of 3 (three pistons), got {width}"
            )
        super().__init__(env)
        self.height, self.width = height, width
        self.view_space = gym.spaces.Box(0, 255, (1, height, width), np.uint8)
        self.rewards: dict[str, float] = {}
        self.game: Any = env.unwrapped
        self.ball_x = 0
        self.paid_in_cycle = 0.0
        self.small_screen: np.ndarray = np.zeros((height, 0), np.uint8)

    def observation_space(self, agent: str) -> gym.spaces.Box:
        return self.view_space

    def observe(self, agent: str) -> np.ndarray:
        # the game shows a piston the screen one piston's width to either side of it
        game = self.game
        left = game.wall_width + game.piston_width * (game.agent_name_mapping[agent] - 1)
        left = left * self.width // (3 * game.piston_width)
        return self.small_screen[None, :, left : left + self.width]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        self.grab_screen()
        self.rewards = dict.fromkeys(self.possible_agents, 0.0)
        self.ball_x = self.ball_position()
        self.paid_in_cycle = 0.0

    def step(self, action: Any) -> None:
        mover = self.agent_selection
        if self.game.continuous and action is not None:
            action = np.clip(action, -1.0, 1.0)
        self.env.step(action)
        if mover == self.possible_agents[-1]:
            # the game's reward for the whole cycle, less what its earlier moves were paid
            reward = float(self.env.rewards[mover]) - self.paid_in_cycle
            self.paid_in_cycle = 0.0
            self.grab_screen()
        else:
            reward = (
                (self.ball_x - self.ball_position())
                * 100
                / self.game.distance_to_wall_at_game_start
            )
            self.paid_in_cycle += reward
        self.ball_x = self.ball_position()
        self.rewards = dict.fromkeys(self.possible_agents, reward)

    def grab_screen(self) -> None:
        """Shrink the screen above the pistons' bodies (what the views show) once for all
        pistons; the game redraws it only at the start of an episode and after each cycle's
        last move."""
        game = self.game
        rgb = np.frombuffer(pygame.image.tobytes(game.screen, "RGB"), np.uint8)
        rgb = rgb.reshape(game.screen_height, game.screen_width, 3)
        bottom = game.screen_height - game.wall_width - game.piston_body_height
        gray = cv2.cvtColor(rgb[game.wall_width : bottom], cv2.COLOR_RGB2GRAY)
        size = (game.screen_width * self.width // (3 * game.piston_width), self.height)
        self.small_screen = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)

    def ball_position(self) -> int:
        """The x coordinate of the ball's left edge, as the game measures progress."""
        game = self.game
        return max(game.wall_width, int(game.ball.position[0] - game.ball_radius))


def get_env(args: argparse.Namespace, continuous: bool = False) -> PettingZooEnv:
    """Pistonball with ``args.n_pistons`` pistons as seen through :class:`PistonView`."""
    game = pistonball_v6.env(
        n_pistons=args.n_pistons,
        continuous=continuous,
        max_cycles=args.max_cycles,
        render_mode="rgb_array",
    )
    return PettingZooEnv(PistonView(game, *args.obs_shape))


def team_return(returns: np.ndarray) -> np.ndarray:
    """An episode's return: all pistons share every reward, so any piston's column will do."""
    return returns[:, 0]


def print_episodes(stats: CollectStats, n_pistons: int) -> None:
    """One line per episode: its return and its length in cycles."""
    episodes = zip(team_return(stats.returns), stats.lens, strict=True)
    for episode, (ret, length) in enumerate(episodes, 1):
        print(f"episode {episode}: return {ret:.1f} in {length // n_pistons} cycles")
