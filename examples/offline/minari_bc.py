"""Behaviour cloning on a Minari MuJoCo dataset: regress the dataset's actions on its states.

The simplest offline baseline, and a strong one on expert data (Fu et al., "D4RL: Datasets for
Deep Data-Driven Reinforcement Learning", 2020): a deterministic 256x256 actor trained by mean
squared error with Adam (lr 1e-4), batch 256.

    minari download mujoco/hopper/expert-v0
    python -m examples.offline.minari_bc --dataset mujoco/hopper/expert-v0 --seed 0
    python -m examples.offline.minari_bc --watch \
        --resume-path log/mujoco/hopper/expert-v0/bc/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm.imitation.imitation_base import ImitationPolicy, OfflineImitationLearning
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.offline import common_parser, deterministic_actor, run_offline


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = common_parser(__doc__)
    parser.add_argument("--lr", type=float, default=1e-4)
    return parser.parse_args(argv)


def build_bc(args: argparse.Namespace, env: gym.Env) -> OfflineImitationLearning:
    """Behaviour cloning of a tanh actor whose [-1, 1] outputs are scaled to the action bounds."""
    policy = ImitationPolicy(
        actor=deterministic_actor(args, env),
        action_space=env.action_space,
        action_scaling=True,
    )
    return OfflineImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=args.lr)).to(
        args.device
    )


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_offline(get_args(argv), "bc", build_bc)


if __name__ == "__main__":
    main()
