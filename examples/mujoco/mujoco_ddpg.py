"""Deep Deterministic Policy Gradient on a MuJoCo task, with the benchmark hyper-parameters.

Lillicrap et al., "Continuous Control with Deep Reinforcement Learning" (2015), as Fujimoto et
al. (2018) re-tuned it: 256x256 networks, actor and critic lr 1e-3, tau 0.005, gamma 0.99,
Gaussian exploration noise of standard deviation 0.1, 25k uniformly random start steps, batch 256.

    python -m examples.mujoco.mujoco_ddpg --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_ddpg --watch --resume-path log/Hopper-v5/ddpg/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import DDPG
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.mujoco.cli import off_policy_parser
from tianshou.scripts.mujoco.networks import deterministic_policy, q_critic
from tianshou.scripts.mujoco.training import run_experiment, train_off_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = off_policy_parser(__doc__, start_timesteps=25_000)
    parser.add_argument(
        "--exploration-noise", type=float, default=0.1, help="std of the Gaussian action noise"
    )
    return parser.parse_args(argv)


def build_ddpg(args: argparse.Namespace, env: gym.Env) -> DDPG:
    """The DDPG algorithm for ``env``'s spaces, with the networks and optimisers of ``args``."""
    return DDPG(
        policy=deterministic_policy(args, env),
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=q_critic(args, env),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        tau=args.tau,
        gamma=args.gamma,
        n_step_return_horizon=args.n_step_return_horizon,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "ddpg", build_ddpg, train_off_policy, obs_norm=False)


if __name__ == "__main__":
    main()
