"""Proximal Policy Optimisation on a MuJoCo task, with the benchmark hyper-parameters.

Schulman et al., "Proximal Policy Optimization Algorithms" (2017), with the implementation
choices of Andrychowicz et al., "What Matters in On-Policy RL" (2020): 64x64 tanh networks with
orthogonal initialisation, 64 envs collecting 2048 env steps per collection (the published
benchmark's parallelism), 10 passes over them in minibatches of 64, GAE(0.95), observation
normalisation, return scaling, linear learning-rate decay.

    python -m examples.mujoco.mujoco_ppo --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_ppo --watch --resume-path log/Hopper-v5/ppo/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import PPO
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats

from examples.mujoco.cli import on_policy_parser
from examples.mujoco.networks import gaussian_policy, on_policy_actor_critic, with_lr_decay
from examples.mujoco.training import run_experiment
from examples.mujoco.training import train_on_policy as train

__all__ = ["build_ppo", "get_args", "main", "train"]


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = on_policy_parser(
        __doc__,
        lr=3e-4,
        collection_step_num_env_steps=2048,
        update_step_num_repetitions=10,
        batch_size=64,
        num_train_envs=64,
    )
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--vf-coef", type=float, default=0.25, help="value loss weight")
    parser.add_argument("--ent-coef", type=float, default=0.0, help="entropy bonus weight")
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--eps-clip", type=float, default=0.2, help="ratio clipping range")
    parser.add_argument("--dual-clip", type=float, default=None)
    parser.add_argument("--value-clip", action=argparse.BooleanOptionalAction, default=False)
    parser.add_argument(
        "--advantage-normalization", action=argparse.BooleanOptionalAction, default=False
    )
    parser.add_argument(
        "--recompute-advantage", action=argparse.BooleanOptionalAction, default=True
    )
    return parser.parse_args(argv)


def build_ppo(args: argparse.Namespace, env: gym.Env) -> PPO:
    """PPO for ``env``'s spaces with orthogonally initialised 64x64 tanh networks."""
    actor, critic = on_policy_actor_critic(args, env)
    return PPO(
        policy=gaussian_policy(args, actor, env),
        critic=critic,
        optim=with_lr_decay(AdamOptimizerFactory(lr=args.lr), args),
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        max_grad_norm=args.max_grad_norm,
        vf_coef=args.vf_coef,
        ent_coef=args.ent_coef,
        return_scaling=args.return_scaling,
        eps_clip=args.eps_clip,
        value_clip=args.value_clip,
        dual_clip=args.dual_clip,
        advantage_normalization=args.advantage_normalization,
        recompute_advantage=args.recompute_advantage,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "ppo", build_ppo, train, obs_norm=True)


if __name__ == "__main__":
    main()
