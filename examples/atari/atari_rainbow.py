"""Rainbow on an Atari game, with the published hyper-parameters.

Hessel et al., "Rainbow: Combining Improvements in Deep Reinforcement Learning" (2018): C51's
distributional loss (51 atoms in [-10, 10]) with a dueling network whose heads are noisy
linear layers (sigma_0 0.1 here, 0.5 in the paper), prioritized replay (alpha 0.5, beta
annealed from 0.4 to 1 over 5M env steps) and 3-step returns; Adam with lr 6.25e-5. Epsilon
still decays from 1 to 0.05 over 1M env steps (0.005 in tests); target network copied every
500 updates, batch 32, a 100k-transition buffer, one update per 10 env steps from 10 envs.

    python -m examples.atari.atari_rainbow --task PongNoFrameskip-v4 --seed 0
    python -m examples.atari.atari_rainbow --watch \
        --resume-path log/PongNoFrameskip-v4/rainbow/0/policy.pth
"""

import argparse
from collections.abc import Callable, Sequence

from tianshou.algorithm import RainbowDQN
from tianshou.algorithm.modelfree.c51 import C51Policy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import CollectStats, InfoStats, PrioritizedVectorReplayBuffer
from tianshou.env.atari.atari_network import RainbowNet
from tianshou.scripts.atari.buffers import prioritized_replay_buffer
from tianshou.scripts.atari.cli import add_q_learning_arguments, atari_parser
from tianshou.scripts.atari.envs import AtariEnvs, atari_envs, scale_obs_if
from tianshou.scripts.atari.training import (
    create_logger,
    epsilon_greedy_fns,
    load_resume_path,
    train_off_policy,
    watch,
)
from tianshou.utils.cli import torch_threads_from_args
from tianshou.utils.logger.logger_base import BaseLogger


def get_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = atari_parser(__doc__.split("\n")[0], off_policy=True)
    add_q_learning_arguments(parser)
    parser.set_defaults(lr=6.25e-5)
    parser.add_argument("--num-atoms", type=int, default=51)
    parser.add_argument("--v-min", type=float, default=-10.0)
    parser.add_argument("--v-max", type=float, default=10.0)
    parser.add_argument("--noisy-std", type=float, default=0.1)
    parser.add_argument("--no-dueling", action="store_true", help="a single (non-dueling) head")
    parser.add_argument("--no-noisy", action="store_true", help="plain linear layers in the heads")
    parser.add_argument("--no-priority", action="store_true", help="uniform replay")
    parser.add_argument("--alpha", type=float, default=0.5, help="priority exponent")
    parser.add_argument("--beta", type=float, default=0.4, help="initial importance exponent")
    parser.add_argument("--beta-final", type=float, default=1.0)
    parser.add_argument("--beta-anneal-step", type=int, default=5_000_000)
    parser.add_argument(
        "--no-weight-norm", action="store_true", help="do not divide weights by their maximum"
    )
    return parser.parse_args(argv)


def build_rainbow(args: argparse.Namespace, envs: AtariEnvs) -> RainbowDQN:
    """Rainbow with a (dueling, noisy) distributional network for ``envs``' frames and actions."""
    c, h, w = envs.frame_shape
    net = RainbowNet(
        c=c,
        h=h,
        w=w,
        action_shape=envs.num_actions,
        num_atoms=args.num_atoms,
        noisy_std=args.noisy_std,
        is_dueling=not args.no_dueling,
        is_noisy=not args.no_noisy,
    )
    policy = C51Policy(
        model=scale_obs_if(args.scale_obs, net).to(args.device),
        action_space=envs.env.action_space,
        num_atoms=args.num_atoms,
        v_min=args.v_min,
        v_max=args.v_max,
        eps_training=args.eps_train,
        eps_inference=args.eps_test,
    )
    return RainbowDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=args.lr),
        gamma=args.gamma,
        n_step_return_horizon=args.n_step_return_horizon,
        target_update_freq=args.target_update_freq,
    ).to(args.device)


def beta_annealing_fn(
    buffer: PrioritizedVectorReplayBuffer, args: argparse.Namespace, logger: BaseLogger
) -> Callable[[int, int], None]:
    """Anneals the importance-sampling exponent linearly from ``--beta`` to ``--beta-final``
    over ``--beta-anneal-step`` env steps: the bias correction is complete by the end."""

    def anneal(epoch: int, env_step: int) -> None:
        progress = min(env_step / args.beta_anneal_step, 1.0)
        beta = args.beta - progress * (args.beta - args.beta_final)
        buffer.set_beta(beta)
        if env_step % 1000 == 0:
            logger.write("training/env_step", env_step, {"beta": beta})

    return anneal


def main(argv: Sequence[str] | None = None) -> InfoStats | CollectStats:
    args = get_args(argv)
    with torch_threads_from_args(args), atari_envs(args) as envs:
        algorithm = build_rainbow(args, envs)
        load_resume_path(algorithm, args)
        if args.watch:
            return watch(algorithm, envs, args)
        logger, log_path = create_logger(args, "rainbow")
        eps_fn, test_fn = epsilon_greedy_fns(algorithm.policy, args, logger)
        if args.no_priority:
            return train_off_policy(
                algorithm,
                envs,
                args,
                logger,
                log_path,
                algo_name="rainbow",
                training_fn=eps_fn,
                test_fn=test_fn,
            )
        buffer = prioritized_replay_buffer(
            args,
            len(envs.train_envs),
            alpha=args.alpha,
            beta=args.beta,
            weight_norm=not args.no_weight_norm,
        )
        anneal_fn = beta_annealing_fn(buffer, args, logger)

        def training_fn(epoch: int, env_step: int) -> None:
            eps_fn(epoch, env_step)
            anneal_fn(epoch, env_step)

        return train_off_policy(
            algorithm,
            envs,
            args,
            logger,
            log_path,
            algo_name="rainbow",
            buffer=buffer,
            training_fn=training_fn,
            test_fn=test_fn,
        )


if __name__ == "__main__":
    main()
