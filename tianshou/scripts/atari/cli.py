"""The command line of the Atari scripts: the options they all share (at the DQN family's
published values), those of the Q-learning scripts and those of the intrinsic curiosity module."""

import argparse

import torch

from tianshou.utils.cli import ArgumentParser, add_logger_options, add_torch_threads_option


def atari_parser(description: str, *, off_policy: bool) -> ArgumentParser:
    """A parser with the options every Atari script has, at the DQN family's published values.

    Scripts add their own options and change defaults with ``parser.set_defaults(...)``.

    :param description: the script's one-line description (``--help``).
    :param off_policy: add the options of off-policy training (``--update-per-step``,
        ``--save-buffer-name``).
    """
    parser = ArgumentParser(description=description)
    parser.add_argument("--task", default="PongNoFrameskip-v4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scale-obs", type=int, default=0, help="1: divide pixels by 255 inside the network"
    )
    parser.add_argument("--buffer-size", type=int, default=100_000)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--epoch", type=int, default=100)
    parser.add_argument("--epoch-num-steps", type=int, default=100_000)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=10)
    if off_policy:
        parser.add_argument(
            "--update-step-num-gradient-steps-per-sample",
            type=float,
            default=0.1,
            help="gradient steps per env step",
        )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-training-envs", type=int, default=10)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--frames-stack", type=int, default=4)
    parser.add_argument(
        "--max-episode-steps",
        type=int,
        default=None,
        help="truncate every episode after this many agent steps (default: the game's limit)",
    )
    parser.add_argument(
        "--persistence-base-dir",
        default="log",
        help="runs write their log, policy and result file to <this>/<task>/<algo>/<seed>",
    )
    parser.add_argument(
        "--render", type=float, default=0.0, help="with --watch: seconds between rendered frames"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved algorithm state to load")
    add_logger_options(parser, wandb_project="atari.benchmark")
    parser.add_argument("--watch", action="store_true", help="only evaluate the loaded policy")
    if off_policy:
        parser.add_argument(
            "--save-buffer-name",
            default=None,
            help="with --watch: collect --buffer-size steps with the policy and save them "
            "to this HDF5 file (e.g. as an offline data set)",
        )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_torch_threads_option(parser)
    return parser


def add_q_learning_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the Q-learning scripts: epsilon-greedy schedule, n-step, target network."""
    parser.add_argument("--eps-test", type=float, default=0.005)
    parser.add_argument("--eps-train", type=float, default=1.0)
    parser.add_argument("--eps-train-final", type=float, default=0.05)
    parser.add_argument("--n-step-return-horizon", type=int, default=3)
    parser.add_argument("--target-update-freq", type=int, default=500)


def add_icm_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the intrinsic curiosity module (Pathak et al. 2017), off by default."""
    parser.add_argument(
        "--icm-lr-scale",
        type=float,
        default=0.0,
        help="> 0: wrap the algorithm in an intrinsic curiosity module, its loss scaled by this",
    )
    parser.add_argument(
        "--icm-reward-scale",
        type=float,
        default=0.01,
        help="factor of the ICM's forward-model error in the intrinsic reward",
    )
    parser.add_argument(
        "--icm-forward-loss-weight",
        type=float,
        default=0.2,
        help="weight of the ICM's forward loss (the inverse loss gets 1 minus it)",
    )
