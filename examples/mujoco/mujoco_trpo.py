"""Trust Region Policy Optimisation on a MuJoCo task, with the benchmark hyper-parameters.

Schulman et al., "Trust Region Policy Optimization" (2015), with a learned critic: NPG's
settings (16 envs, 1024 steps per update, 20 critic steps at lr 1e-3, GAE(0.95), 64x64 tanh
networks) plus a line search that keeps the KL divergence under 0.01, shrinking the step by 0.8
up to 10 times.

    python -m examples.mujoco.mujoco_trpo --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_trpo --watch --resume-path log/Hopper-v5/trpo/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import TRPO
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.lr_decay import with_lr_decay
from tianshou.scripts.mujoco.cli import npg_parser
from tianshou.scripts.mujoco.networks import gaussian_policy, on_policy_actor_critic
from tianshou.scripts.mujoco.training import run_experiment, train_on_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = npg_parser(__doc__)
    parser.add_argument("--max-kl", type=float, default=0.01, help="KL bound of a policy step")
    parser.add_argument(
        "--backtrack-coeff", type=float, default=0.8, help="step shrink factor of the search"
    )
    parser.add_argument("--max-backtracks", type=int, default=10)
    return parser.parse_args(argv)


def build_trpo(args: argparse.Namespace, env: gym.Env) -> TRPO:
    """TRPO for ``env``'s spaces with orthogonally initialised 64x64 tanh networks."""
    actor, critic = on_policy_actor_critic(args, env)
    return TRPO(
        policy=gaussian_policy(args, actor, env),
        critic=critic,
        optim=with_lr_decay(AdamOptimizerFactory(lr=args.lr), args),
        max_kl=args.max_kl,
        backtrack_coeff=args.backtrack_coeff,
        max_backtracks=args.max_backtracks,
        optim_critic_iters=args.optim_critic_iters,
        trust_region_size=args.actor_step_size,
        advantage_normalization=args.advantage_normalization,
        gae_lambda=args.gae_lambda,
        gamma=args.gamma,
        return_scaling=args.return_scaling,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "trpo", build_trpo, train_on_policy, obs_norm=True)


if __name__ == "__main__":
    main()
