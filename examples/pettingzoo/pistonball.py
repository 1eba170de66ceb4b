"""Pistonball (PettingZoo butterfly): a row of pistons learns to roll a ball to the left wall,
one DQN per piston.

Every piston sees a 457x120 RGB crop of the screen around itself and moves down, stays or moves
up. The team's reward is the ball's progress towards the left wall (100 for the whole way) plus
a time penalty of -0.1 per cycle, so an episode's return is at most 100.
:class:`~tianshou.env.PettingZooEnv` runs the game turn by turn (one piston moves per step) and
:class:`~tianshou.algorithm.MultiAgentOffPolicyAlgorithm` trains each piston's DQN on its own
moves.

The pistons see the game through :class:`~tianshou.scripts.pistonball.PistonView`
(small grayscale views, a reward for every move). Each DQN's n-step target spans one
full cycle (``n = --n-pistons`` moves), from one of its piston's moves to the next.

The trained team is saved as ``policy.pth`` in the run's log directory. ``--watch`` loads it
(``--resume-path``) and, without training, plays a few greedy episodes and prints their returns
(no window)::

    python -m examples.pettingzoo.pistonball --n-pistons 4 --epoch 10
    python -m examples.pettingzoo.pistonball --n-pistons 4 --watch \
        --resume-path log/pistonball/dqn/policy.pth
"""

import argparse
import os
from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import DQN, MultiAgentOffPolicyAlgorithm
from tianshou.algorithm.algorithm_base import Algorithm, OffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.env.atari.atari_network import ScaledObsInputActionReprNet
from tianshou.scripts.pistonball import get_env, print_episodes, team_return
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
    add(
        "--n-step-return-horizon",
        type=int,
        default=None,
        help="n-step horizon in moves (default: a cycle)",
    )
    add("--target-update-freq", type=int, default=100)
    add("--epoch", type=int, default=10)
    add("--epoch-num-steps", type=int, default=2000)
    add("--collection-step-num-env-steps", type=int, default=100)
    add("--update-step-num-gradient-steps-per-sample", type=float, default=0.1)
    add("--batch-size", type=int, default=256)
    add("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    add("--num-training-envs", type=int, default=10)
    add("--num-test-envs", type=int, default=10)
    add("--persistence-base-dir", type=str, default="log")
    add(
        "--watch",
        action="store_true",
        help="no training: play greedy episodes of the --resume-path team, print their returns",
    )
    add("--watch-episodes", type=int, default=3)
    add("--resume-path", type=str, default="", help="saved pistons' algorithms to start from")
    add("--device", type=str, default="cuda" if torch.cuda.is_available() else "cpu")
    add_torch_threads_option(parser)
    return parser


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return parse_known_options(get_parser(), argv)


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
        n_step_return_horizon=args.n_step_return_horizon or args.n_pistons,
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
    log_path = os.path.join(args.persistence_base_dir, "pistonball", "dqn")

    def save_best_fn(best: Algorithm) -> None:
        os.makedirs(log_path, exist_ok=True)
        torch.save(best.state_dict(), os.path.join(log_path, "policy.pth"))

    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_step_num_gradient_steps_per_sample,
            multi_agent_return_reduction=team_return,
            save_best_fn=save_best_fn,
            logger=TensorboardLogger(SummaryWriter(log_path)),
            show_progress=False,
        )
    )
    report_training(
        task="pistonball",
        algorithm="dqn",
        info=result,
        final_test_return=final_test_return(test_collector, args.num_test_envs, team_return),
        log_dir=log_path,
        config=vars(args),
        policy_path=os.path.join(log_path, "policy.pth"),
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


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    """Train the pistons (from ``--resume-path``, if given); with ``--watch`` only play
    ``--watch-episodes`` greedy episodes of the loaded team."""
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
