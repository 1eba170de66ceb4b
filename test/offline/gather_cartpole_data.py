"""The CartPole-v1 expert buffer of the discrete offline learners' tests (BCQ, CQL, CRR).

A QRDQN expert is trained until its greedy test return reaches ``--stop-return``; it then
collects ``--buffer-size`` transitions acting epsilon-greedily with a small ``--eps-collect``, so
that the data is expert-level but holds both actions in every region the expert visits.
The data is accepted once the collected episodes' mean return reaches ``--min-return`` (up to
``--seed-attempts`` seeds are tried). The buffer is cached in :func:`expert_file_name`; tests
call :func:`load_expert_buffer`.

Run ``python -m test.offline.gather_cartpole_data`` to (re)gather it by hand.
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
from tianshou.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, InfoStats, VectorReplayBuffer
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net


def expert_file_name() -> str:
    """The cached expert buffer, next to this module."""
    return os.path.join(os.path.dirname(__file__), "expert_QRDQN_CartPole-v1.hdf5")


def get_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The expert's and the collection's settings; unknown arguments are ignored, so the
    defaults also apply under pytest.

    :param argv: the arguments to parse (default: the command line).
    """
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--task", type=str, default="CartPole-v1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--buffer-size", type=int, default=20000)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[64, 64])
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--num-quantiles", type=int, default=50)
    parser.add_argument("--n-step", type=int, default=3)
    parser.add_argument("--target-update-freq", type=int, default=320)
    parser.add_argument("--eps-train", type=float, default=0.5)
    parser.add_argument("--eps-train-final", type=float, default=0.05)
    parser.add_argument("--eps-decay-steps", type=int, default=10000)
    parser.add_argument("--epoch", type=int, default=15)
    parser.add_argument("--epoch-num-steps", type=int, default=2000)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=16)
    parser.add_argument("--update-per-step", type=float, default=0.5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--num-training-envs", type=int, default=8)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--stop-return", type=float, default=500.0)
    parser.add_argument("--eps-collect", type=float, default=0.05)
    parser.add_argument("--num-collect-envs", type=int, default=10)
    parser.add_argument("--min-return", type=float, default=400.0)
    parser.add_argument("--seed-attempts", type=int, default=3)
    parser.add_argument("--save-buffer-name", type=str, default=expert_file_name())
    return parser.parse_known_args(argv)[0]


def build_expert(args: argparse.Namespace) -> QRDQN:
    """QRDQN over an MLP with ``args.num_quantiles`` quantiles per action."""
    action_space = gym.make(args.task).action_space
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(f"{args.task} has no discrete action space")
    net = Net(
        state_shape=4,
        action_shape=int(action_space.n),
        hidden_sizes=args.hidden_sizes,
        num_atoms=args.num_quantiles,
    )
    policy = QRDQNPolicy(model=net, action_space=action_space, eps_training=args.eps_train)
    return QRDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        num_quantiles=args.num_quantiles,
        n_step_return_horizon=args.n_step,
        target_update_freq=args.target_update_freq,
    )


def train_expert(args: argparse.Namespace) -> tuple[QRDQN, InfoStats]:
    """Train the QRDQN expert until its mean test return reaches ``args.stop_return`` (or the
    epochs run out), epsilon decaying linearly from ``args.eps_train`` to
    ``args.eps_train_final`` over ``args.eps_decay_steps`` env steps.

    :return: the expert and its training statistics.
    """
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    algorithm = build_expert(args)
    policy = algorithm.policy
    buffer = VectorReplayBuffer(args.buffer_size, args.num_training_envs)
    training_envs = seeded_envs(args.task, args.num_training_envs, args.seed)
    test_envs = seeded_envs(args.task, args.num_test_envs, args.seed + 100)

    def decay_eps(epoch: int, env_step: int) -> None:
        progress = min(1.0, env_step / args.eps_decay_steps)
        policy.set_eps_training(args.eps_train + progress * (args.eps_train_final - args.eps_train))

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
            training_fn=decay_eps,
            stop_fn=lambda mean_return: mean_return >= args.stop_return,
            show_progress=False,
            verbose=False,
        )
    )
    return algorithm, result


def collect_expert_data(args: argparse.Namespace) -> VectorReplayBuffer:
    """Train the expert of ``args.seed`` and collect ``args.buffer_size`` transitions with it
    acting epsilon-greedily (``args.eps_collect``) in ``args.num_collect_envs`` envs."""
    algorithm, _ = train_expert(args)
    algorithm.policy.set_eps_inference(args.eps_collect)
    buffer = VectorReplayBuffer(args.buffer_size, args.num_collect_envs)
    envs = seeded_envs(args.task, args.num_collect_envs, args.seed + 200)
    collector = Collector(algorithm, envs, buffer, exploration_noise=True)
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
    return collect_until_expert(collect_expert_data, args, "QRDQN expert")


def validate(buffer: VectorReplayBuffer) -> None:
    """Check a loaded buffer against the default settings (see
    :func:`~test.offline._expert_cache.check_expert_buffer`)."""
    args = get_args([])
    check_expert_buffer(buffer, args.buffer_size, (4,), (), 0, 1)


def load_expert_buffer() -> VectorReplayBuffer:
    """The expert buffer: loaded from :func:`expert_file_name`, gathered first if the file is
    missing or invalid (once among concurrent processes)."""
    return load_or_gather(expert_file_name(), lambda: gather_data(get_args([])), validate)


if __name__ == "__main__":
    main(gather_data)
