"""The Pendulum-v1 expert buffer of the offline learners' tests (BCQ, CQL, TD3+BC).

A SAC expert is trained for a fixed budget of ``--epoch`` x ``--epoch-num-steps`` env steps (a
stop on a 10-episode test return would fire on a lucky test long before the expert is reliable);
it then collects ``--buffer-size`` transitions with its own stochastic actions, so that the data
is expert-level yet covers a neighbourhood of the expert's actions. The data is accepted once
the collected episodes' mean return reaches ``--min-return`` (up to ``--seed-attempts`` seeds
are tried). Actions are stored as the policy outputs them, in [-1, 1]; the env receives twice
that. The buffer is cached in :func:`expert_file_name`; tests call :func:`load_expert_buffer`.

Run ``python -m test.offline.gather_pendulum_data`` to (re)gather it by hand.
"""

import argparse
import os

import gymnasium as gym
import numpy as np
import torch

from test.offline._expert_cache import (
    check_expert_buffer,
    collect_until_expert,
    load_or_gather,
    main,
    seeded_envs,
)
from tianshou.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, InfoStats, VectorReplayBuffer
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic


def expert_file_name() -> str:
    """The cached expert buffer, next to this module."""
    return os.path.join(os.path.dirname(__file__), "expert_SAC_Pendulum-v1.hdf5")


def get_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The expert's and the collection's settings; unknown arguments are ignored, so the
    defaults also apply under pytest.

    :param argv: the arguments to parse (default: the command line).
    """
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", type=str, default="Pendulum-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--buffer-size", type=int, default=20000)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    parser.add_argument("--actor-lr", type=float, default=1e-3)
    parser.add_argument("--critic-lr", type=float, default=1e-3)
    parser.add_argument("--alpha-lr", type=float, default=3e-4)
    parser.add_argument("--target-entropy", type=float, default=-1.0)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--tau", type=float, default=0.005)
    parser.add_argument("--n-step", type=int, default=3)
    parser.add_argument("--epoch", type=int, default=14)
    parser.add_argument("--epoch-num-steps", type=int, default=500)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=8)
    parser.add_argument("--update-per-step", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--num-training-envs", type=int, default=4)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--min-return", type=float, default=-200.0)
    parser.add_argument("--seed-attempts", type=int, default=3)
    parser.add_argument("--num-collect-envs", type=int, default=10)
    parser.add_argument("--save-buffer-name", type=str, default=expert_file_name())
    return parser.parse_known_args(argv)[0]


def build_expert(args: argparse.Namespace) -> SAC:
    """SAC with twin 2-layer critics, a state-dependent std and a learned temperature."""
    action_space = gym.make(args.task).action_space
    if not isinstance(action_space, gym.spaces.Box):
        raise ValueError(f"{args.task} has no continuous action space")
    obs_dim = 3

    def critic() -> ContinuousCritic:
        body = Net(state_shape=obs_dim, action_shape=1, hidden_sizes=args.hidden_sizes, concat=True)
        return ContinuousCritic(preprocess_net=body)

    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=args.hidden_sizes),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )
    return SAC(
        policy=SACPolicy(actor=actor, action_space=action_space),
        policy_optim=AdamOptimizerFactory(lr=args.actor_lr),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=args.critic_lr),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=args.critic_lr),
        tau=args.tau,
        gamma=args.gamma,
        alpha=AutoAlpha(args.target_entropy, 0.0, AdamOptimizerFactory(lr=args.alpha_lr)),
        n_step_return_horizon=args.n_step,
    )


def train_expert(args: argparse.Namespace) -> tuple[SAC, InfoStats]:
    """Train the SAC expert for ``args.epoch`` epochs of ``args.epoch_num_steps`` env steps.

    :return: the expert and its training statistics.
    """
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    algorithm = build_expert(args)
    buffer = VectorReplayBuffer(args.buffer_size, args.num_training_envs)
    training_envs = seeded_envs(args.task, args.num_training_envs, args.seed)
    test_envs = seeded_envs(args.task, args.num_test_envs, args.seed + 100)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=Collector(algorithm, training_envs, buffer, exploration_noise=True),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_per_step,
            show_progress=False,
            verbose=False,
        )
    )
    return algorithm, result


def collect_expert_data(args: argparse.Namespace) -> VectorReplayBuffer:
    """Train the expert of ``args.seed`` and collect ``args.buffer_size`` transitions with its
    stochastic policy in ``args.num_collect_envs`` envs."""
    algorithm, _ = train_expert(args)
    algorithm.policy.deterministic_eval = False
    buffer = VectorReplayBuffer(args.buffer_size, args.num_collect_envs)
    envs = seeded_envs(args.task, args.num_collect_envs, args.seed + 200)
    collector = Collector(algorithm, envs, buffer)
    collector.reset()
    collector.collect(n_step=args.buffer_size)
    return buffer


def gather_data(args: argparse.Namespace | None = None) -> VectorReplayBuffer:
    """Collect the expert data (see :func:`collect_expert_data`), save it to
    ``args.save_buffer_name`` and return it. Seeds ``args.seed``, ``args.seed + 1``, ... are
    tried in turn (``args.seed_attempts`` at most) until the data reaches ``args.min_return``.

    :param args: the settings (default: :func:`get_args`).
    :raises RuntimeError: if no seed's data reaches ``args.min_return``.
    """
    args = args if args is not None else get_args()
    return collect_until_expert(collect_expert_data, args, "SAC expert")


def validate(buffer: VectorReplayBuffer) -> None:
    """Check a loaded buffer against the default settings (see
    :func:`~test.offline._expert_cache.check_expert_buffer`)."""
    args = get_args([])
    check_expert_buffer(buffer, args.buffer_size, (3,), (1,), -1.0, 1.0)


def load_expert_buffer() -> VectorReplayBuffer:
    """The expert buffer: loaded from :func:`expert_file_name`, gathered first if the file is
    missing or invalid (once among concurrent processes)."""
    return load_or_gather(expert_file_name(), lambda: gather_data(get_args([])), validate)


if __name__ == "__main__":
    main(gather_data)
