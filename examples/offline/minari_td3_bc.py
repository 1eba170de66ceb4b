"""TD3+BC on a Minari MuJoCo dataset.

Fujimoto and Gu, "A Minimalist Approach to Offline Reinforcement Learning" (2021): TD3 whose
actor loss adds a behaviour-cloning term, ``-lambda Q(s, pi(s)) + (pi(s) - a)^2`` with
``lambda = alpha / mean|Q|`` (alpha 2.5), on states normalised by the dataset's mean and
standard deviation. 256x256 networks, lr 3e-4, tau 0.005, target smoothing noise 0.2 clipped to
0.5, an actor update every second critic update, batch 256.

    python -m examples.offline.minari_td3_bc --dataset mujoco/hopper/expert-v0 --seed 0
"""

import argparse
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.offline import (
    common_parser,
    deterministic_actor,
    q_critic,
    run_offline,
)


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = common_parser(__doc__, norm_obs=True)
    parser.add_argument("--actor-lr", type=float, default=3e-4)
    parser.add_argument("--critic-lr", type=float, default=3e-4)
    parser.add_argument("--alpha", type=float, default=2.5, help="weight of the Q term")
    parser.add_argument("--tau", type=float, default=0.005, help="soft target-update rate")
    parser.add_argument(
        "--policy-noise", type=float, default=0.2, help="std of the target-action smoothing"
    )
    parser.add_argument("--noise-clip", type=float, default=0.5, help="clip of that noise")
    parser.add_argument(
        "--update-actor-freq", type=int, default=2, help="critic updates per actor update"
    )
    return parser.parse_args(argv)


def build_td3_bc(args: argparse.Namespace, env: gym.Env) -> Any:
    """TD3+BC for ``env``'s spaces (no exploration noise: nothing is collected for training)."""
    from tianshou.algorithm.imitation.td3_bc import TD3BC

    policy = ContinuousDeterministicPolicy(
        actor=deterministic_actor(args, env),
        exploration_noise=None,
        action_space=env.action_space,
    )
    return TD3BC(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=q_critic(args, env),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        critic2=q_critic(args, env),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        tau=args.tau,
        gamma=args.gamma,
        policy_noise=args.policy_noise,
        update_actor_freq=args.update_actor_freq,
        noise_clip=args.noise_clip,
        alpha=args.alpha,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_offline(get_args(argv), "td3_bc", build_td3_bc)


if __name__ == "__main__":
    main()
