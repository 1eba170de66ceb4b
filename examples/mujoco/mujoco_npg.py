"""Natural Policy Gradient on a MuJoCo task, with the benchmark hyper-parameters.

Kakade, "A Natural Policy Gradient" (2001), with a learned critic: 16 envs collecting 1024
steps per update, a natural-gradient actor step of size 0.1, 20 Adam steps (lr 1e-3, linear
decay) of the critic per update, GAE(0.95), normalised advantages, 64x64 tanh networks,
observation normalisation and return scaling.

    python -m examples.mujoco.mujoco_npg --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_npg --watch --resume-path log/Hopper-v5/npg/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import NPG
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.lr_decay import with_lr_decay
from tianshou.scripts.mujoco.cli import npg_parser
from tianshou.scripts.mujoco.networks import gaussian_policy, on_policy_actor_critic
from tianshou.scripts.mujoco.training import run_experiment, train_on_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return npg_parser(__doc__).parse_args(argv)


def build_npg(args: argparse.Namespace, env: gym.Env) -> NPG:
    """NPG for ``env``'s spaces with orthogonally initialised 64x64 tanh networks."""
    actor, critic = on_policy_actor_critic(args, env)
    return NPG(
        policy=gaussian_policy(args, actor, env),
        critic=critic,
        optim=with_lr_decay(AdamOptimizerFactory(lr=args.lr), args),
        optim_critic_iters=args.optim_critic_iters,
        trust_region_size=args.actor_step_size,
        advantage_normalization=args.advantage_normalization,
        gae_lambda=args.gae_lambda,
        gamma=args.gamma,
        return_scaling=args.return_scaling,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "npg", build_npg, train_on_policy, obs_norm=True)


if __name__ == "__main__":
    main()
