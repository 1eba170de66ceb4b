"""Randomized Ensembled Double Q-learning on a MuJoCo task, with the benchmark hyper-parameters.

Chen et al., "Randomized Ensembled Double Q-Learning: Learning Fast Without a Model" (2021): an
ensemble of 10 critics of which a random subset of 2 forms each target, 20 critic updates per
env step and an actor update every 20 critic updates, a SAC actor with a fixed entropy
coefficient of 0.2 (``--auto-alpha`` tunes it), 256x256 networks, lr 1e-3, tau 0.005, 10k
uniformly random start steps.

    python -m examples.mujoco.mujoco_redq --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_redq --watch --resume-path log/Hopper-v5/redq/0/policy.pth
"""

import argparse
import functools
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import REDQ
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.mujoco.cli import add_alpha_options, off_policy_parser
from tianshou.scripts.mujoco.networks import entropy_alpha, probabilistic_actor
from tianshou.scripts.mujoco.training import run_experiment, train_off_policy
from tianshou.utils.net.common import EnsembleLinear, Net
from tianshou.utils.net.continuous import ContinuousCritic


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = off_policy_parser(__doc__, update_step_num_gradient_steps_per_sample=20.0)
    parser.add_argument("--ensemble-size", type=int, default=10)
    parser.add_argument("--subset-size", type=int, default=2, help="critics per target")
    parser.add_argument(
        "--actor-delay", type=int, default=20, help="critic updates per actor update"
    )
    parser.add_argument("--target-mode", default="min", choices=["min", "mean"])
    add_alpha_options(parser)
    return parser.parse_args(argv)


def ensemble_critic(args: argparse.Namespace, env: gym.Env) -> ContinuousCritic:
    """``--ensemble-size`` Q-networks evaluated together, through ensemble linear layers."""
    linear = functools.partial(EnsembleLinear, args.ensemble_size)
    net = Net(
        state_shape=env.observation_space.shape,  # type: ignore[arg-type]
        action_shape=env.action_space.shape,  # type: ignore[arg-type]
        hidden_sizes=args.hidden_sizes,
        concat=True,
        linear_layer=linear,
    )
    return ContinuousCritic(preprocess_net=net, linear_layer=linear, flatten_input=False).to(
        args.device
    )


def build_redq(args: argparse.Namespace, env: gym.Env) -> REDQ:
    """The REDQ algorithm for ``env``'s spaces, with the networks and optimisers of ``args``."""
    policy = REDQPolicy(actor=probabilistic_actor(args, env), action_space=env.action_space)
    return REDQ(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=ensemble_critic(args, env),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        ensemble_size=args.ensemble_size,
        subset_size=args.subset_size,
        tau=args.tau,
        gamma=args.gamma,
        alpha=entropy_alpha(args, env),
        n_step_return_horizon=args.n_step_return_horizon,
        actor_delay=args.actor_delay,
        target_mode=args.target_mode,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "redq", build_redq, train_off_policy, obs_norm=False)


if __name__ == "__main__":
    main()
