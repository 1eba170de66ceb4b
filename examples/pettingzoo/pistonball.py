"""Pistonball (PettingZoo butterfly): a row of pistons learns to roll a ball to the left wall,
one DQN per piston.

Every piston sees a 457x120 RGB crop of the screen around itself and moves down, stays or moves
up. The team's reward is the ball's progress towards the left wall (100 for the whole way) plus
a time penalty of -0.1 per cycle, so an episode's return is at most 100.
:class:`~tianshou.env.PettingZooEnv` runs the game turn by turn (one piston moves per step) and
:class:`~tianshou.algorithm.MultiAgentOffPolicyAlgorithm` trains each piston's DQN on its own
moves.

:class:`PistonView` makes the game cheap to learn from on a CPU: each crop becomes a small
grayscale image (48x12 by default), and each move is paid the team's reward for the ball's
progress during that move, so the rewards of a cycle add up to PettingZoo's reward for
it (which the game gives only to the cycle's last move). Each DQN's n-step target spans one
full cycle (``n = --n-pistons`` moves), from one of its piston's moves to the next.

``--watch`` then plays a few greedy episodes and prints their returns (no window)::

    python examples/pettingzoo/pistonball.py --n-pistons 4 --epoch 10 --watch
"""

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import pygame
import torch
from pettingzoo.butterfly import pistonball_v6
from pettingzoo.utils.env import AECEnv
from pettingzoo.utils.wrappers import BaseWrapper
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.algorithm_base import Algorithm, OffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.env.atari.atari_network import ScaledObsInputActionReprNet
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.common import Net

sys.path.append(str(Path(__file__).resolve().parents[1]))  # examples/, for the shared command line
from script_cli import ArgumentParser, parse_known_options


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


def get_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--seed", type=int, default=1626)
    add("--n-pistons", type=int, default=3)
    add("--max-cycles", type=int, default=125, help="cycles (moves of every piston) per episode")
    add("--obs-shape", type=int, nargs=2, default=[48, 12], help="height and width of the view")
    add("--eps-test", type=float, default=0.0)
    add("--eps-train", type=float, default=0.1)
    add("--buffer-size", type=int, default=20000)
    add("--lr", type=float, default=1e-3)
    add("--gamma", type=float, default=0.99, help="discount per move")
    add("--n-step", type=int, default=None, help="n-step horizon in moves (default: a cycle)")
    add("--target-update-freq", type=int, default=100)
    add("--epoch", type=int, default=10)
    add("--epoch-num-steps", "--step-per-epoch", dest="epoch_num_steps", type=int, default=2000)
    add("--step-per-collect", type=int, default=100)
    add("--update-per-step", type=float, default=0.1)
    add("--batch-size", type=int, default=256)
    add("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    add("--num-training-envs", "--training-num", dest="num_training_envs", type=int, default=10)
    add("--num-test-envs", "--test-num", dest="num_test_envs", type=int, default=10)
    add("--logdir", type=str, default="log")
    add("--watch", action="store_true", help="play greedy episodes and print their returns")
    add("--watch-episodes", type=int, default=3)
    add("--resume-path", type=str, default="", help="saved pistons' algorithms to start from")
    add("--device", type=str, default="cuda" if torch.cuda.is_available() else "cpu")
    return parser


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return parse_known_options(get_parser(), argv)


def get_env(args: argparse.Namespace, continuous: bool = False) -> PettingZooEnv:
    """Pistonball with ``args.n_pistons`` pistons as seen through :class:`PistonView`."""
    game = pistonball_v6.env(
        n_pistons=args.n_pistons,
        continuous=continuous,
        max_cycles=args.max_cycles,
        render_mode="rgb_array",
    )
    return PettingZooEnv(PistonView(game, *args.obs_shape))


def make_dqn(args: argparse.Namespace, env: PettingZooEnv) -> DQN:
    """One piston's DQN: an MLP on its view, pixel values scaled to ``[0, 1]``."""
    net = Net(
        state_shape=env.observation_space.shape,
        action_shape=int(env.action_space.n),
        hidden_sizes=args.hidden_sizes,
    )
    policy = DiscreteQLearningPolicy(
        model=ScaledObsInputActionReprNet(net).to(args.device),
        action_space=env.action_space,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    return DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=args.n_step or args.n_pistons,
        target_update_freq=args.target_update_freq,
    )


def get_agents(
    args: argparse.Namespace, agents: list[OffPolicyAlgorithm] | None = None
) -> tuple[MultiAgentOffPolicyAlgorithm, list[str]]:
    """The pistons' algorithms (new ones, or ``agents``) as one multi-agent algorithm, and the
    pistons' ids; ``--resume-path`` loads saved weights into the new ones."""
    env = get_env(args)
    if agents is None:
        agents = [make_dqn(args, env) for _ in env.agents]
        algorithm = MultiAgentOffPolicyAlgorithm(algorithms=agents, env=env)
        if args.resume_path:
            algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        return algorithm, env.agents
    return MultiAgentOffPolicyAlgorithm(algorithms=agents, env=env), env.agents


def team_return(returns: np.ndarray) -> np.ndarray:
    """An episode's return: all pistons share every reward, so any piston's column will do."""
    return returns[:, 0]


def train_agent(
    args: argparse.Namespace, agents: list[OffPolicyAlgorithm] | None = None
) -> tuple[InfoStats, MultiAgentOffPolicyAlgorithm]:
    """Train the pistons; return the run's stats and the trained multi-agent algorithm."""
    train_envs = DummyVectorEnv([lambda: get_env(args) for _ in range(args.num_training_envs)])
    test_envs = DummyVectorEnv([lambda: get_env(args) for _ in range(args.num_test_envs)])
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + args.num_training_envs)
    algorithm, _ = get_agents(args, agents)
    train_collector = Collector[CollectStats](
        algorithm,
        train_envs,
        VectorReplayBuffer(args.buffer_size, len(train_envs)),
        exploration_noise=True,
    )
    test_collector = Collector[CollectStats](algorithm, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.batch_size * args.num_training_envs)
    log_path = os.path.join(args.logdir, "pistonball", "dqn")

    def save_best_fn(best: Algorithm) -> None:
        os.makedirs(log_path, exist_ok=True)
        torch.save(best.state_dict(), os.path.join(log_path, "policy.pth"))

    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.step_per_collect,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_per_step,
            multi_agent_return_reduction=team_return,
            save_best_fn=save_best_fn,
            logger=TensorboardLogger(SummaryWriter(log_path)),
            show_progress=False,
        )
    )
    return result, algorithm


def watch(
    args: argparse.Namespace, algorithm: MultiAgentOffPolicyAlgorithm | None = None
) -> CollectStats:
    """Play ``args.watch_episodes`` episodes with the pistons' greedy actions, printing each
    episode's return and length in the terminal."""
    if algorithm is None:
        algorithm, _ = get_agents(args)
    algorithm.eval()
    envs = DummyVectorEnv([lambda: get_env(args)])
    envs.seed(args.seed)
    stats = Collector[CollectStats](algorithm, envs, exploration_noise=True).collect(
        n_episode=args.watch_episodes, reset_before_collect=True
    )
    print_episodes(stats, args.n_pistons)
    return stats


def print_episodes(stats: CollectStats, n_pistons: int) -> None:
    """One line per episode: its return and its length in cycles."""
    episodes = zip(team_return(stats.returns), stats.lens, strict=True)
    for episode, (ret, length) in enumerate(episodes, 1):
        print(f"episode {episode}: return {ret:.1f} in {length // n_pistons} cycles")


if __name__ == "__main__":
    cli_args = get_args()
    info, trained = train_agent(cli_args)
    print(f"best test return: {info.best_reward:.1f}")
    if cli_args.watch:
        watch(cli_args, trained)
