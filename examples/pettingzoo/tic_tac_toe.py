"""Tic-tac-toe (PettingZoo classic): a DQN agent learns to beat a random opponent.

The game is turn-based: :class:`~tianshou.env.PettingZooEnv` says in every observation whose turn
it is, and :class:`~tianshou.algorithm.MultiAgentOffPolicyAlgorithm` hands each row to that
player's algorithm. The learner plays second by default (``--agent-id 2``), the harder seat: a
random second player wins only about 29% of its games against a random first player (and loses
about 59%). Illegal moves are impossible: the legal-action mask reaches the learner's Q-values
and its random exploration, and the opponent samples among legal moves only.

Training stops when the learner wins at least ``--win-rate`` of its test games; the learner is
saved as ``policy.pth`` in the run's log directory. ``--watch`` loads it (``--resume-path``) and,
without training, plays one game, printing the board after every move (no window)::

    python -m examples.pettingzoo.tic_tac_toe --epoch 20
    python -m examples.pettingzoo.tic_tac_toe --watch --resume-path log/tic_tac_toe/dqn/policy.pth
"""

import argparse
import copy
import os
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from pettingzoo.classic import tictactoe_v3
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.algorithm_base import Algorithm, OffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.algorithm.random import MARLRandomDiscreteMaskedOffPolicyAlgorithm
from tianshou.data import Batch, Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.cli import (
    ArgumentParser,
    add_torch_threads_option,
    parse_known_options,
    torch_threads_from_args,
)
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.net.common import Net

MARKS = {0: ".", 1: "X", 2: "O"}


def get_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--seed", type=int, default=1626)
    add("--eps-test", type=float, default=0.05)
    add("--eps-train", type=float, default=0.1)
    add("--buffer-size", type=int, default=20000)
    add("--lr", type=float, default=1e-4)
    add("--gamma", type=float, default=0.9, help="a smaller gamma favours earlier wins")
    add("--n-step-return-horizon", type=int, default=3)
    add("--target-update-freq", type=int, default=320)
    add("--epoch", type=int, default=50)
    add("--epoch-num-steps", type=int, default=1000)
    add("--collection-step-num-env-steps", type=int, default=10)
    add("--update-step-num-gradient-steps-per-sample", type=float, default=0.1)
    add("--batch-size", type=int, default=64)
    add("--hidden-sizes", type=int, nargs="*", default=[128, 128, 128, 128])
    add("--num-training-envs", type=int, default=10)
    add("--num-test-envs", type=int, default=100)
    add("--persistence-base-dir", type=str, default="log")
    add("--render", type=float, default=0.0, help="seconds to pause between watched moves")
    add("--win-rate", type=float, default=0.6, help="stop once this share of test games is won")
    add(
        "--watch",
        action="store_true",
        help="no training: play one game of the --resume-path learner and print it",
    )
    add("--agent-id", type=int, default=2, help="the learner's seat: 1 plays first, 2 second")
    add("--resume-path", type=str, default="", help="a saved learner to start from")
    add("--opponent-path", type=str, default="", help="a saved learner to play against")
    add("--device", type=str, default="cuda" if torch.cuda.is_available() else "cpu")
    add_torch_threads_option(parser)
    return parser


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return parse_known_options(get_parser(), argv)


def get_env(render_mode: str | None = None) -> PettingZooEnv:
    return PettingZooEnv(tictactoe_v3.env(render_mode=render_mode))


def get_agents(
    args: argparse.Namespace,
    agent_learn: OffPolicyAlgorithm | None = None,
    agent_opponent: OffPolicyAlgorithm | None = None,
    optim: AdamOptimizerFactory | None = None,
) -> tuple[MultiAgentOffPolicyAlgorithm, AdamOptimizerFactory | None, list[str]]:
    """The two players' algorithms (the learner in seat ``args.agent_id``) as one
    multi-agent algorithm, the learner's optimizer factory, and the agents' ids."""
    env = get_env()
    observation_space = env.observation_space
    if isinstance(observation_space, gym.spaces.Dict):
        observation_space = observation_space["observation"]
    args.state_shape = observation_space.shape
    args.action_shape = int(env.action_space.n)
    if agent_learn is None:
        net = Net(
            state_shape=args.state_shape,
            action_shape=args.action_shape,
            hidden_sizes=args.hidden_sizes,
        ).to(args.device)
        optim = optim or AdamOptimizerFactory(lr=args.lr)
        policy = DiscreteQLearningPolicy(
            model=net,
            action_space=env.action_space,
            eps_training=args.eps_train,
            eps_inference=args.eps_test,
        )
        agent_learn = DQN(
            policy=policy,
            optim=optim,
            gamma=args.gamma,
            n_step_return_horizon=args.n_step_return_horizon,
            target_update_freq=args.target_update_freq,
        )
        if args.resume_path:
            agent_learn.load_state_dict(torch.load(args.resume_path, map_location=args.device))
    if agent_opponent is None:
        if args.opponent_path:
            agent_opponent = copy.deepcopy(agent_learn)
            agent_opponent.load_state_dict(torch.load(args.opponent_path, map_location=args.device))
        else:
            agent_opponent = MARLRandomDiscreteMaskedOffPolicyAlgorithm(
                action_space=env.action_space
            )
            agent_opponent.policy.action_space.seed(args.seed)
    players = [agent_learn, agent_opponent] if args.agent_id == 1 else [agent_opponent, agent_learn]
    return MultiAgentOffPolicyAlgorithm(algorithms=players, env=env), optim, env.agents


def win_rate(stats: CollectStats) -> float:
    """The share of test games the learner won (its reduced return is +1 for a win)."""
    return float(np.mean(np.asarray(stats.returns) > 0)) if len(stats.returns) else 0.0


def train_agent(
    args: argparse.Namespace,
    agent_learn: OffPolicyAlgorithm | None = None,
    agent_opponent: OffPolicyAlgorithm | None = None,
    optim: AdamOptimizerFactory | None = None,
) -> tuple[InfoStats, OffPolicyAlgorithm]:
    """Train the learner against the opponent; return the run's stats and the learner."""
    train_envs = DummyVectorEnv([get_env for _ in range(args.num_training_envs)])
    test_envs = DummyVectorEnv([get_env for _ in range(min(args.num_test_envs, 10))])
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    train_envs.seed(args.seed)
    test_envs.seed(args.seed + args.num_training_envs)
    marl_algorithm, optim, agents = get_agents(args, agent_learn, agent_opponent, optim)
    learner_id = agents[args.agent_id - 1]
    train_collector = Collector[CollectStats](
        marl_algorithm,
        train_envs,
        VectorReplayBuffer(args.buffer_size, len(train_envs)),
        exploration_noise=True,
    )
    test_collector = Collector[CollectStats](marl_algorithm, test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.batch_size * args.num_training_envs)
    log_path = os.path.join(args.persistence_base_dir, "tic_tac_toe", "dqn")
    logger = TensorboardLogger(SummaryWriter(log_path))

    def save_best_fn(algorithm: Algorithm) -> None:
        os.makedirs(log_path, exist_ok=True)
        learner = marl_algorithm.get_algorithm(learner_id)
        torch.save(learner.state_dict(), os.path.join(log_path, "policy.pth"))

    result = marl_algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_step_num_gradient_steps_per_sample,
            multi_agent_return_reduction=lambda returns: returns[:, args.agent_id - 1],
            compute_score_fn=win_rate,
            stop_fn=lambda best_win_rate: best_win_rate >= args.win_rate,
            save_best_fn=save_best_fn,
            logger=logger,
            show_progress=False,
        )
    )
    print(f"best test win rate: {result.best_score:.2f}")
    report_training(
        task="tic_tac_toe",
        algorithm="dqn",
        info=result,
        final_test_return=final_test_return(
            test_collector, args.num_test_envs, lambda returns: returns[:, args.agent_id - 1]
        ),
        log_dir=log_path,
        config=vars(args),
        policy_path=os.path.join(log_path, "policy.pth"),
    )
    return result, marl_algorithm.get_algorithm(learner_id)


def board_text(obs: Batch | dict[str, Any], player: str) -> str:
    """The board in three lines (X: first player, O: second) from one player's observation,
    whose planes are (the player's marks, the opponent's marks)."""
    planes = np.asarray(obs["obs"] if isinstance(obs, dict) else obs.obs)
    own, other = ("X", "O") if player == "player_1" else ("O", "X")
    cells = np.full((3, 3), ".")
    cells[planes[..., 0] == 1] = own
    cells[planes[..., 1] == 1] = other
    # PettingZoo numbers squares column by column
    return "\n".join(" ".join(row) for row in cells.T)


def watch(
    args: argparse.Namespace,
    agent_learn: OffPolicyAlgorithm | None = None,
    agent_opponent: OffPolicyAlgorithm | None = None,
) -> float:
    """Play one game, printing the board after every move; return the learner's reward."""
    marl_algorithm, _, agents = get_agents(args, agent_learn, agent_opponent)
    marl_algorithm.eval()
    env = get_env()
    obs, _ = env.reset(seed=args.seed)
    done, rewards = False, [0.0] * len(agents)
    while not done:
        player = obs["agent_id"]
        batch = Batch(obs=Batch({k: np.asarray(v)[None] for k, v in obs.items()}), info={})
        with torch.no_grad():
            act = marl_algorithm.policy(batch).act
        act = marl_algorithm.policy.add_exploration_noise(np.asarray(act), batch)
        obs, rewards, terminated, truncated, _ = env.step(int(act[0]))
        done = terminated or truncated
        print(f"{player} plays square {int(act[0])}:")
        print(board_text(obs, obs["agent_id"]) + "\n", flush=True)
    learner_reward = float(rewards[args.agent_id - 1])
    print({1.0: "the learner wins", -1.0: "the learner loses"}.get(learner_reward, "a draw"))
    return learner_reward


def main(argv: Sequence[str] | None = None) -> InfoStats | float:
    """Train the learner (from ``--resume-path``, if given) against the opponent; with
    ``--watch`` only play one game of the loaded learner and return its reward."""
    args = get_args(argv)
    with torch_threads_from_args(args):
        if args.watch:
            if not args.resume_path:
                print("--watch without --resume-path: watching untrained agents", flush=True)
            return watch(args)
        info, _ = train_agent(args)
    return info


if __name__ == "__main__":
    main()
