"""Advantage Actor-Critic on a MuJoCo task, with the benchmark hyper-parameters.

Mnih et al., "Asynchronous Methods for Deep Reinforcement Learning" (2016), synchronous: 16
envs collecting 80 steps between updates, 64x64 tanh networks, RMSprop (lr 7e-4, alpha 0.99,
eps 1e-5) with linear decay, GAE(0.95), value loss weight 0.5, entropy bonus 0.01, gradient norm
clipped to 0.5, observation normalisation and return scaling.

    python -m examples.mujoco.mujoco_a2c --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_a2c --watch --resume-path log/Hopper-v5/a2c/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import A2C
from tianshou.algorithm.optim import RMSpropOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.lr_decay import with_lr_decay
from tianshou.scripts.mujoco.cli import on_policy_parser
from tianshou.scripts.mujoco.networks import gaussian_policy, on_policy_actor_critic
from tianshou.scripts.mujoco.training import run_experiment, train_on_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = on_policy_parser(__doc__, lr=7e-4, collection_step_num_env_steps=80)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument("--vf-coef", type=float, default=0.5, help="value loss weight")
    parser.add_argument("--ent-coef", type=float, default=0.01, help="entropy bonus weight")
    parser.add_argument("--max-grad-norm", type=float, default=0.5)
    parser.add_argument("--rmsprop-alpha", type=float, default=0.99, help="RMSprop smoothing")
    parser.add_argument("--rmsprop-eps", type=float, default=1e-5)
    return parser.parse_args(argv)


def build_a2c(args: argparse.Namespace, env: gym.Env) -> A2C:
    """A2C for ``env``'s spaces with orthogonally initialised 64x64 tanh networks."""
    actor, critic = on_policy_actor_critic(args, env)
    optim = RMSpropOptimizerFactory(lr=args.lr, alpha=args.rmsprop_alpha, eps=args.rmsprop_eps)
    return A2C(
        policy=gaussian_policy(args, actor, env),
        critic=critic,
        optim=with_lr_decay(optim, args),
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        max_grad_norm=args.max_grad_norm,
        vf_coef=args.vf_coef,
        ent_coef=args.ent_coef,
        return_scaling=args.return_scaling,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "a2c", build_a2c, train_on_policy, obs_norm=True)


if __name__ == "__main__":
    main()
