"""REINFORCE (vanilla policy gradient) on a MuJoCo task, with the benchmark hyper-parameters.

Williams, "Simple Statistical Gradient-Following Algorithms for Connectionist Reinforcement
Learning" (1992): 64 envs collecting 2048 steps per update, one gradient step on all of them,
a 64x64 tanh Gaussian policy with tanh-bounded actions, Adam (lr 1e-3) with linear decay,
standardised returns and observation normalisation.

    python -m examples.mujoco.mujoco_reinforce --task Hopper-v5 --seed 0
    python -m examples.mujoco.mujoco_reinforce --watch \\
        --resume-path log/Hopper-v5/reinforce/0/policy.pth
"""

import argparse
from collections.abc import Sequence

import gymnasium as gym

from tianshou.algorithm import Reinforce
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.lr_decay import with_lr_decay
from tianshou.scripts.mujoco.cli import on_policy_parser
from tianshou.scripts.mujoco.networks import gaussian_policy, on_policy_actor_critic
from tianshou.scripts.mujoco.training import run_experiment, train_on_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = on_policy_parser(
        __doc__,
        collection_step_num_env_steps=2048,
        num_training_envs=64,
        action_bound_method="tanh",
    )
    return parser.parse_args(argv)


def build_reinforce(args: argparse.Namespace, env: gym.Env) -> Reinforce:
    """REINFORCE for ``env``'s spaces with an orthogonally initialised 64x64 tanh policy.

    ``--return-scaling`` standardises the returns (REINFORCE has no critic to scale).
    """
    actor, _ = on_policy_actor_critic(args, env)
    return Reinforce(
        policy=gaussian_policy(args, actor, env),
        optim=with_lr_decay(AdamOptimizerFactory(lr=args.lr), args),
        gamma=args.gamma,
        return_standardization=args.return_scaling,
    ).to(args.device)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(
        get_args(argv), "reinforce", build_reinforce, train_on_policy, obs_norm=True
    )


if __name__ == "__main__":
    main()
