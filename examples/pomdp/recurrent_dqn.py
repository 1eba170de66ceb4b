"""Recurrent DQN in the manner of R2D2 on CartPole with the velocities hidden.

Stored hidden states, replayed sequences with a burn-in, n-step double-Q targets, and with
``--prioritized-replay`` R2D2's prioritised sequence replay. The run trains all its 20 epochs
(``--stop-return 195`` stops at the first test that reaches it; stopping there, as the script
did before, left seed 1's final test at 191).

    python -m examples.pomdp.recurrent_dqn --seed 0 --burn-in 4 --train-len 16
"""

import argparse
from collections.abc import Sequence

from gymnasium.spaces.utils import flatdim

from tianshou.algorithm.modelfree.recurrent_dqn import RecurrentDQN, RecurrentQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tianshou.env.pomdp import cartpole_without_velocities
from tianshou.scripts.pomdp import RecurrentRun, base_parser, seeded_envs
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.cli import torch_threads_from_args
from tianshou.utils.net.recurrent import RecurrentQNet


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = base_parser(__doc__, epoch=20, epoch_num_steps=2000)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--buffer-size", type=int, default=20000)
    parser.add_argument("--batch-size", type=int, default=32, help="sequences per update")
    parser.add_argument("--burn-in", type=int, default=4)
    parser.add_argument("--train-len", type=int, default=16)
    parser.add_argument("--n-step-return-horizon", type=int, default=3)
    parser.add_argument("--target-update-freq", type=int, default=100)
    parser.add_argument("--eps-train", type=float, default=0.5)
    parser.add_argument("--eps-train-final", type=float, default=0.05)
    parser.add_argument("--eps-decay-steps", type=int, default=10000)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=16)
    parser.add_argument("--update-step-num-gradient-steps-per-sample", type=float, default=0.25)
    parser.add_argument(
        "--prioritized-replay", action="store_true", help="R2D2's prioritised sequence replay"
    )
    parser.add_argument("--alpha", type=float, default=0.6, help="priority exponent")
    parser.add_argument("--beta", type=float, default=0.4, help="importance-weight exponent")
    parser.add_argument("--priority-eta", type=float, default=0.9, help="weight of the max")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> float:
    """Train (or, with ``--watch``, evaluate) the recurrent policy; return its mean return on
    new test episodes."""
    args = get_args(argv)
    with torch_threads_from_args(args):
        return train(args)


def train(args: argparse.Namespace) -> float:
    """The run of :func:`main` with the options ``args``."""
    run = RecurrentRun(
        args, "CartPoleNoVelocity", f"recurrent_dqn_{args.cell}", cartpole_without_velocities
    )
    training_envs, test_envs = seeded_envs(args, cartpole_without_velocities)
    env = cartpole_without_velocities()
    model = RecurrentQNet(
        flatdim(env.observation_space), flatdim(env.action_space), args.hidden_size, cell=args.cell
    )
    policy = RecurrentQLearningPolicy(
        model=model, action_space=env.action_space, eps_training=args.eps_train
    )
    algorithm = RecurrentDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
        burn_in=args.burn_in,
        train_len=args.train_len,
        priority_eta=args.priority_eta,
    ).to(args.device)
    run.load(algorithm)
    if args.watch:
        return run.watch(algorithm)

    def decay_eps(epoch: int, env_step: int) -> None:
        progress = min(1.0, env_step / args.eps_decay_steps)
        policy.set_eps_training(args.eps_train + (args.eps_train_final - args.eps_train) * progress)

    buffer = (
        PrioritizedVectorReplayBuffer(
            args.buffer_size, args.num_training_envs, alpha=args.alpha, beta=args.beta
        )
        if args.prioritized_replay
        else VectorReplayBuffer(args.buffer_size, args.num_training_envs)
    )
    training_collector = Collector(algorithm, training_envs, buffer, exploration_noise=True)
    training_collector.reset()
    info = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_step_num_gradient_steps_per_sample,
            training_fn=decay_eps,
            stop_fn=run.stop_fn(),
            logger=run.logger(),
            save_best_fn=run.save,
            show_progress=False,
        )
    )
    return run.report(algorithm, info)


if __name__ == "__main__":
    main()
