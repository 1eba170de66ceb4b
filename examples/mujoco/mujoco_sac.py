"""Soft Actor-Critic on a MuJoCo task, with the benchmark hyper-parameters.

Haarnoja et al., "Soft Actor-Critic Algorithms and Applications" (2018): 256x256 networks,
batch 256, actor lr 1e-3, critic lr 1e-3 (3e-4 in the paper), tau 0.005, gamma 0.99, a fixed
entropy coefficient of 0.2 (``--auto-alpha`` tunes it towards ``-dim(A)`` instead), 10k uniformly
random start steps.

    python -m examples.mujoco.mujoco_sac --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_sac --watch --resume-path log/Hopper-v5/sac/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import SAC
from tianshou.algorithm.modelfree.sac import SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.mujoco.cli import add_alpha_options, off_policy_parser
from tianshou.scripts.mujoco.networks import entropy_alpha, probabilistic_actor, q_critic
from tianshou.scripts.mujoco.training import run_experiment, train_off_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = off_policy_parser(__doc__)
    add_alpha_options(parser)
    return parser.parse_args(argv)


def build_sac(args: argparse.Namespace, env: gym.Env) -> SAC:
    """The SAC algorithm for ``env``'s spaces, with the networks and optimisers of ``args``."""
    policy = SACPolicy(actor=probabilistic_actor(args, env), action_space=env.action_space)
    return SAC(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=q_critic(args, env),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        critic2=q_critic(args, env),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        tau=args.tau,
        gamma=args.gamma,
        alpha=entropy_alpha(args, env),
        n_step_return_horizon=args.n_step_return_horizon,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "sac", build_sac, train_off_policy, obs_norm=False)


if __name__ == "__main__":
    main()
