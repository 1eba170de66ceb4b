"""Batch-Constrained Q-learning (BCQ) on a Minari MuJoCo dataset.

Fujimoto et al., "Off-Policy Deep Reinforcement Learning without Exploration" (2019): a
conditional VAE models the dataset's actions, a perturbation network shifts the VAE's proposals
by at most ``phi`` (0.05) and twin critics pick the best of them, so the policy stays near the
data. 256x256 actor and critics, 512x512 VAE with a latent twice the action width, lr 1e-3,
tau 0.005, lambda 0.75 (weight of the smaller twin target), batch 256.

    python -m examples.offline.minari_bcq --dataset mujoco/hopper/expert-v0 --seed 0
"""

import argparse
from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.offline import common_parser, flat_dims, q_critic, run_offline
from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.continuous import VAE, Perturbation


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = common_parser(__doc__)
    parser.add_argument("--actor-lr", type=float, default=1e-3)
    parser.add_argument("--critic-lr", type=float, default=1e-3)
    parser.add_argument("--vae-lr", type=float, default=1e-3)
    parser.add_argument("--vae-hidden-sizes", type=int, nargs="*", default=[512, 512])
    parser.add_argument(
        "--latent-dim", type=int, default=None, help="VAE latent width (default: 2 * dim(A))"
    )
    parser.add_argument("--phi", type=float, default=0.05, help="largest perturbation")
    parser.add_argument("--tau", type=float, default=0.005, help="soft target-update rate")
    parser.add_argument("--lmbda", type=float, default=0.75, help="weight of the min twin target")
    return parser.parse_args(argv)


def build_bcq(args: argparse.Namespace, env: gym.Env) -> Any:
    """BCQ for ``env``'s spaces. The networks act in the policy's raw [-1, 1] action space,
    scaled to the env's bounds by the policy."""
    from tianshou.algorithm.imitation.bcq import BCQ, BCQPolicy

    obs_dim, act_dim = flat_dims(env)
    latent_dim = args.latent_dim or 2 * act_dim
    perturbation = Perturbation(
        preprocess_net=Net(
            state_shape=obs_dim + act_dim, action_shape=act_dim, hidden_sizes=args.hidden_sizes
        ),
        max_action=1.0,
        phi=args.phi,
    )
    vae = VAE(
        encoder=MLP(input_dim=obs_dim + act_dim, hidden_sizes=args.vae_hidden_sizes),
        decoder=MLP(
            input_dim=obs_dim + latent_dim, output_dim=act_dim, hidden_sizes=args.vae_hidden_sizes
        ),
        hidden_dim=args.vae_hidden_sizes[-1],
        latent_dim=latent_dim,
        max_action=1.0,
    )
    policy = BCQPolicy(
        actor_perturbation=perturbation,
        critic=q_critic(args, env),
        vae=vae,
        action_space=env.action_space,
        action_scaling=True,
    )
    return BCQ(
        policy=policy,
        actor_perturbation_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        vae_optim=AdamOptimizerFactory(lr=args.vae_lr),
        critic2=q_critic(args, env),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        gamma=args.gamma,
        tau=args.tau,
        lmbda=args.lmbda,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_offline(get_args(argv), "bcq", build_bcq)


if __name__ == "__main__":
    main()
