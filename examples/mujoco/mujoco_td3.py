"""Twin Delayed DDPG on a MuJoCo task, with the benchmark hyper-parameters.

Fujimoto et al., "Addressing Function Approximation Error in Actor-Critic Methods" (2018):
256x256 networks, actor and critic lr 3e-4, tau 0.005, gamma 0.99, Gaussian exploration noise
0.1, target policy smoothing noise 0.2 clipped to 0.5, an actor update every second critic
update, 25k uniformly random start steps, batch 256.

    python -m examples.mujoco.mujoco_td3 --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_td3 --watch --resume-path log/Hopper-v5/td3/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import TD3
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.mujoco.cli import off_policy_parser
from tianshou.scripts.mujoco.networks import deterministic_policy, q_critic
from tianshou.scripts.mujoco.training import run_experiment, train_off_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = off_policy_parser(__doc__, actor_lr=3e-4, critic_lr=3e-4, start_timesteps=25_000)
    parser.add_argument(
        "--exploration-noise", type=float, default=0.1, help="std of the Gaussian action noise"
    )
    parser.add_argument(
        "--policy-noise", type=float, default=0.2, help="std of the target-action smoothing"
    )
    parser.add_argument("--noise-clip", type=float, default=0.5, help="clip of that noise")
    parser.add_argument(
        "--update-actor-freq", type=int, default=2, help="critic updates per actor update"
    )
    return parser.parse_args(argv)


def build_td3(args: argparse.Namespace, env: gym.Env) -> TD3:
    """The TD3 algorithm for ``env``'s spaces, with the networks and optimisers of ``args``."""
    return TD3(
        policy=deterministic_policy(args, env),
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=q_critic(args, env),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        critic2=q_critic(args, env),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        tau=args.tau,
        gamma=args.gamma,
        policy_noise=args.policy_noise,
        noise_clip=args.noise_clip,
        update_actor_freq=args.update_actor_freq,
        n_step_return_horizon=args.n_step_return_horizon,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "td3", build_td3, train_off_policy, obs_norm=False)


if __name__ == "__main__":
    main()
