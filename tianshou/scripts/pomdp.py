"""What the recurrent example scripts (``examples/pomdp/``) share: their command line, envs,
and the saving, resuming, watching and reporting of a run (:class:`RecurrentRun`).

Every script trains on one of the partially observed tasks of :mod:`tianshou.env.pomdp`, saves
its best policy to ``<persistence-base-dir>/<task>/<algorithm>/<seed>/policy.pth`` and ends with
the run's summary (:func:`~tianshou.scripts.summary.report_training`), whose final test return is
the mean return of the trained policy on new test episodes.
"""

import argparse
import os
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Collector, CollectStats, InfoStats
from tianshou.env import DummyVectorEnv
from tianshou.scripts.persistence import POLICY_FILE
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.utils.cli import (
    ArgumentParser,
    add_logger_options,
    add_torch_threads_option,
    logger_from_args,
)
from tianshou.utils.logger.logger_base import BaseLogger

EnvFactory = Callable[[], gym.Env]
"""Makes one env of a script's task."""


def base_parser(
    description: str | None, epoch: int, epoch_num_steps: int, hidden_size: int = 64
) -> ArgumentParser:
    """The options every recurrent script has; the defaults solve the task with most seeds.

    :param description: the script's docstring (its first line describes the script).
    :param epoch: the default number of epochs (all are trained unless ``--stop-return``).
    :param epoch_num_steps: the default env steps per epoch.
    :param hidden_size: the default width of the recurrent networks.
    """
    parser = ArgumentParser(description=(description or "").split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=epoch)
    parser.add_argument("--epoch-num-steps", type=int, default=epoch_num_steps)
    parser.add_argument("--num-training-envs", type=int, default=8)
    parser.add_argument("--num-test-envs", type=int, default=10, help="also test episodes")
    parser.add_argument("--hidden-size", type=int, default=hidden_size)
    parser.add_argument("--cell", default="lstm", choices=["lstm", "gru"])
    parser.add_argument(
        "--persistence-base-dir",
        default="log",
        help="runs write their log, policy and result file to <this>/<task>/<algo>/<seed>",
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--stop-return",
        type=float,
        default=None,
        help="stop training once a test's mean return reaches this (default: train all epochs)",
    )
    parser.add_argument("--resume-path", default=None, help="a saved policy.pth to load")
    parser.add_argument(
        "--watch", action="store_true", help="only evaluate the loaded policy, no training"
    )
    add_logger_options(parser, wandb_project="pomdp")
    add_torch_threads_option(parser)
    return parser


def seeded_envs(
    args: argparse.Namespace, make_env: EnvFactory
) -> tuple[DummyVectorEnv, DummyVectorEnv]:
    """Training and test envs, seeded from ``--seed`` (and torch and numpy too)."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    training_envs = DummyVectorEnv([make_env for _ in range(args.num_training_envs)])
    test_envs = DummyVectorEnv([make_env for _ in range(args.num_test_envs)])
    training_envs.seed(args.seed)
    test_envs.seed(args.seed + 1000)
    return training_envs, test_envs


class RecurrentRun:
    """Where one run of a recurrent script writes, and how it loads, saves, watches and reports
    its algorithm.

    :param args: the script's options (of :func:`base_parser`).
    :param task: the task's name in the log path (e.g. ``CartPoleNoVelocity``).
    :param algo_name: the algorithm's name in the log path and the summary.
    :param make_env: makes one env of the task (for the final test and ``--watch``).
    """

    def __init__(
        self, args: argparse.Namespace, task: str, algo_name: str, make_env: EnvFactory
    ) -> None:
        self.args = args
        self.task = task
        self.algo_name = algo_name
        self.make_env = make_env
        self.log_path = os.path.join(args.persistence_base_dir, task, algo_name, str(args.seed))
        """``<persistence-base-dir>/<task>/<algo_name>/<seed>``: the log, policy and result."""

    @property
    def policy_path(self) -> str:
        """Where the best policy is saved."""
        return os.path.join(self.log_path, POLICY_FILE)

    def load(self, algorithm: Algorithm) -> None:
        """Load the state saved at ``--resume-path`` into ``algorithm``, if given."""
        if self.args.resume_path:
            state = torch.load(self.args.resume_path, map_location=self.args.device)
            algorithm.load_state_dict(state)
            print(f"loaded {self.args.resume_path}")

    def logger(self) -> BaseLogger:
        """The ``--logger-type`` logger, writing to :attr:`log_path`."""
        run_name = os.path.relpath(self.log_path, self.args.persistence_base_dir)
        return logger_from_args(self.args, self.log_path, run_name)

    def save(self, algorithm: Algorithm) -> None:
        """Save ``algorithm``'s state to :attr:`policy_path` (the trainer's ``save_best_fn``)."""
        os.makedirs(self.log_path, exist_ok=True)
        torch.save(algorithm.state_dict(), self.policy_path)

    def test(self, algorithm: Algorithm) -> float:
        """The mean return of ``algorithm``'s policy on ``--num-test-envs`` new episodes."""
        envs = DummyVectorEnv([self.make_env for _ in range(self.args.num_test_envs)])
        envs.seed(self.args.seed + 2000)
        algorithm.eval()
        try:
            return final_test_return(
                Collector[CollectStats](algorithm, envs), self.args.num_test_envs
            )
        finally:
            envs.close()

    def stop_fn(self) -> Callable[[float], bool] | None:
        """The trainer's ``stop_fn`` of ``--stop-return``: None (train all epochs) if not set."""
        stop_return = self.args.stop_return
        if stop_return is None:
            return None
        return lambda mean_return: mean_return >= stop_return

    def watch(self, algorithm: Algorithm) -> float:
        """Evaluate the (loaded) policy as :meth:`test` does, print and return its mean return."""
        mean_return = self.test(algorithm)
        print(f"mean return {mean_return:.2f} over {self.args.num_test_envs} episodes")
        return mean_return

    def report(self, algorithm: Algorithm, info: InfoStats) -> float:
        """Test the trained policy (:meth:`test`), print the run's summary and write its result
        file; return the final test return."""
        final = self.test(algorithm)
        report_training(
            task=self.task,
            algorithm=self.algo_name,
            info=info,
            final_test_return=final,
            log_dir=self.log_path,
            config=vars(self.args),
            policy_path=self.policy_path,
        )
        return final
