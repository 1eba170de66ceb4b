"""Conservative Q-Learning (CQL) on a Minari MuJoCo dataset.

Kumar et al., "Conservative Q-Learning for Offline Reinforcement Learning" (2020): SAC whose
critics are also pushed down on actions the policy and a uniform distribution propose and up
on the dataset's actions, so that unseen actions are not overvalued. The weight of that term is
tuned by a Lagrange multiplier towards a gap of 10; calibrated (Cal-QL, Nakamoto et al. 2023)
by default. 256x256 networks, actor lr 1e-4, critic lr 3e-4, tau 0.005, entropy coefficient
tuned towards ``-dim(A)``, batch 256.

    python -m examples.offline.minari_cql --dataset mujoco/hopper/expert-v0 --seed 0
"""

import argparse
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from tianshou.algorithm.modelfree.sac import SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.offline import (
    add_alpha_options,
    common_parser,
    entropy_alpha,
    probabilistic_actor,
    q_critic,
    run_offline,
)


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = common_parser(__doc__)
    parser.add_argument("--actor-lr", type=float, default=1e-4)
    parser.add_argument("--critic-lr", type=float, default=3e-4)
    add_alpha_options(parser)
    parser.set_known_defaults(alpha_lr=1e-4, auto_alpha=True)  # tuned, unlike online SAC's default
    parser.add_argument("--cql-alpha-lr", type=float, default=3e-4, help="Lagrange multiplier lr")
    parser.add_argument("--cql-weight", type=float, default=1.0)
    parser.add_argument("--tau", type=float, default=0.005, help="soft target-update rate")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument(
        "--with-lagrange",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="tune the conservative weight towards --lagrange-threshold",
    )
    parser.add_argument("--lagrange-threshold", type=float, default=10.0)
    parser.add_argument(
        "--calibrated",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="bound the pushed-down Q-values below by Monte-Carlo returns (Cal-QL)",
    )
    return parser.parse_args(argv)


def build_cql(args: argparse.Namespace, env: gym.Env) -> Any:
    """CQL for ``env``'s spaces; random actions are drawn from the policy's raw [-1, 1] space."""
    from tianshou.algorithm.imitation.cql import CQL

    policy = SACPolicy(actor=probabilistic_actor(args, env), action_space=env.action_space)
    return CQL(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=q_critic(args, env),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        critic2=q_critic(args, env),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        cql_alpha_lr=args.cql_alpha_lr,
        cql_weight=args.cql_weight,
        tau=args.tau,
        gamma=args.gamma,
        alpha=entropy_alpha(args, env),
        temperature=args.temperature,
        with_lagrange=args.with_lagrange,
        lagrange_threshold=args.lagrange_threshold,
        min_action=-1.0,
        max_action=1.0,
        calibrated=args.calibrated,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_offline(get_args(argv), "cql", build_cql)


if __name__ == "__main__":
    main()
