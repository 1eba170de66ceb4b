"""PPO on MuJoCo tasks as the scripts set it up: its options and its algorithm.

Shared by ``examples/mujoco/mujoco_ppo.py`` (with the benchmark's defaults), ``make demo``
(``examples/mujoco/demo.py``, with a short budget's) and the benchmark runners, so that all
three train the same PPO.
"""

import argparse
from typing import Any

import gymnasium as gym

from tianshou.algorithm import PPO
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.scripts.lr_decay import with_lr_decay
from tianshou.scripts.mujoco.cli import on_policy_parser
from tianshou.scripts.mujoco.networks import (
    gaussian_policy,
    on_policy_actor_critic,
)
from tianshou.utils.cli import ArgumentParser


def ppo_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """:func:`~tianshou.scripts.mujoco.cli.on_policy_parser` with PPO's options (GAE, clipping,
    loss weights, advantage handling); ``defaults`` are the script's own defaults for any of
    its options."""
    parser = on_policy_parser(description)
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
    parser.set_known_defaults(**defaults)
    return parser


def build_ppo(args: argparse.Namespace, env: gym.Env) -> PPO:
    """PPO for ``env``'s spaces with orthogonally initialised tanh networks of
    ``--hidden-sizes``, configured by the options of :func:`ppo_parser`."""
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
