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

from tianshou.data import CollectStats, InfoStats
from tianshou.scripts.mujoco.ppo import build_ppo, ppo_parser
from tianshou.scripts.mujoco.training import run_experiment, train_on_policy


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The options of :func:`~tianshou.scripts.mujoco.ppo.ppo_parser`, at the benchmark's
    values."""
    parser = ppo_parser(
        __doc__,
        lr=3e-4,
        collection_step_num_env_steps=2048,
        update_step_num_repetitions=10,
        batch_size=64,
        num_training_envs=64,
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    return run_experiment(get_args(argv), "ppo", build_ppo, train_on_policy, obs_norm=True)


if __name__ == "__main__":
    main()
