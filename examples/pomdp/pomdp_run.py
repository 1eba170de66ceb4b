"""What the recurrent example scripts share: their command line, envs, logger and final test.

Every script trains on one of the tasks of :mod:`pomdp_envs` and ends by printing
``final test return: <float>``, the mean return of the trained policy on fresh test episodes.
"""

import argparse
import os
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Collector
from tianshou.env import DummyVectorEnv
from tianshou.utils.logger.logger_base import BaseLogger

from examples.script_cli import ArgumentParser, add_logger_options, logger_from_args

EnvFactory = Callable[[], gym.Env]


def base_parser(description: str | None, epoch: int, epoch_num_steps: int) -> ArgumentParser:
    """The options every recurrent script has; the defaults solve the task with most seeds."""
    parser = ArgumentParser(description=description)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=epoch)
    parser.add_argument("--epoch-num-steps", type=int, default=epoch_num_steps)
    parser.add_argument("--num-train-envs", type=int, default=8)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--hidden-size", type=int, default=64)
    parser.add_argument("--cell", default="lstm", choices=["lstm", "gru"])
    parser.add_argument("--logdir", default="log")
    parser.add_argument("--device", default="cpu")
    add_logger_options(parser, wandb_project="pomdp")
    return parser


def seeded_envs(
    args: argparse.Namespace, make_env: EnvFactory
) -> tuple[DummyVectorEnv, DummyVectorEnv]:
    """Training and test envs, seeded from ``--seed`` (and torch and numpy too)."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    training_envs = DummyVectorEnv([make_env for _ in range(args.num_train_envs)])
    test_envs = DummyVectorEnv([make_env for _ in range(args.num_test_envs)])
    training_envs.seed(args.seed)
    test_envs.seed(args.seed + 1000)
    return training_envs, test_envs


def experiment_logger(args: argparse.Namespace, task: str, algorithm_name: str) -> BaseLogger:
    """The ``--logger`` logger, writing under ``<logdir>/<task>/<algorithm>/<seed>``."""
    log_path = os.path.join(args.logdir, task, algorithm_name, str(args.seed))
    return logger_from_args(args, log_path, os.path.relpath(log_path, args.logdir))


def report_final_test(
    algorithm: Algorithm, make_env: EnvFactory, args: argparse.Namespace
) -> float:
    """Test the trained policy on ``--num-test-envs`` new episodes and print the last line."""
    envs = DummyVectorEnv([make_env for _ in range(args.num_test_envs)])
    envs.seed(args.seed + 2000)
    algorithm.eval()
    stats = Collector(algorithm, envs).collect(
        n_episode=args.num_test_envs, reset_before_collect=True
    )
    mean_return = float(stats.returns_stat.mean) if stats.returns_stat is not None else float("nan")
    print(f"final test return: {mean_return}")
    return mean_return
