"""The command line of the procedural MuJoCo scripts: the options they all share, those of the
off-policy and on-policy scripts, and those several scripts' algorithms share (SAC's entropy
coefficient, NPG's natural gradient), each with its published defaults.

A script builds its parser with :func:`off_policy_parser` or :func:`on_policy_parser` (passing
its own defaults) and adds its algorithm's options.
"""

import argparse
from typing import Any

import torch

from tianshou.distributed.options import add_data_parallel_options
from tianshou.scripts.lr_decay import add_lr_decay_option
from tianshou.scripts.persistence import CHECKPOINT_DIR
from tianshou.utils.cli import ArgumentParser, add_logger_options, add_torch_threads_option


def common_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """The options every MuJoCo script has; ``defaults`` are the script's own defaults for them.

    The script adds its algorithm's options to the returned parser.
    """
    parser = ArgumentParser(description=(description or "").split("\n")[0])
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=100, help="number of epochs")
    parser.add_argument("--epoch-num-steps", type=int, default=30_000, help="env steps/epoch")
    parser.add_argument(
        "--collection-step-num-env-steps", type=int, default=1, help="env steps/collection"
    )
    parser.add_argument("--num-training-envs", type=int, default=1)
    parser.add_argument("--num-test-envs", type=int, default=10, help="also test episodes")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[256, 256])
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument(
        "--backend", default="auto", choices=["auto", "dummy", "subproc", "envpool"]
    )
    parser.add_argument(
        "--persistence-base-dir",
        default="log",
        help="runs write their log, policy and result file to <this>/<task>/<algo>/<seed>",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved policy.pth to load")
    parser.add_argument(
        "--save-checkpoints",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=f"save the state after every epoch to <log dir>/{CHECKPOINT_DIR}/, so that an "
        "interrupted run continues with --resume-path <that>/policy.pth --resume-from-log",
    )
    parser.add_argument(
        "--resume-from-log",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="continue from the epoch and step counters of the log's last checkpoint",
    )
    add_logger_options(parser, wandb_project="mujoco.benchmark")
    parser.add_argument(
        "--watch",
        action="store_true",
        help="only evaluate the loaded policy (in a window, or as a video without a display)",
    )
    parser.add_argument("--render", type=float, default=0.0, help="seconds between frames")
    add_data_parallel_options(parser, "-m examples.mujoco.<script>")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_torch_threads_option(parser)
    parser.set_known_defaults(**defaults)
    return parser


def off_policy_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """:func:`common_parser` with the options of the off-policy scripts and their defaults
    (256x256 networks, 200 epochs of 5000 steps, one env step and one gradient step at a time)."""
    parser = common_parser(description, epoch=200, epoch_num_steps=5000)
    parser.add_argument("--actor-lr", type=float, default=1e-3)
    parser.add_argument("--critic-lr", type=float, default=1e-3)
    parser.add_argument("--tau", type=float, default=0.005, help="soft target-update rate")
    parser.add_argument(
        "--start-timesteps", type=int, default=10_000, help="uniformly random steps first"
    )
    parser.add_argument(
        "--update-step-num-gradient-steps-per-sample",
        type=float,
        default=1.0,
        help="gradient steps per env step",
    )
    parser.add_argument(
        "--n-step-return-horizon", type=int, default=1, help="n-step return horizon"
    )
    parser.set_known_defaults(**defaults)
    return parser


def on_policy_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """:func:`common_parser` with the options of the on-policy scripts and their defaults
    (64x64 tanh networks, 16 envs, 100 epochs of 30k steps, observation normalisation)."""
    parser = common_parser(
        description,
        hidden_sizes=[64, 64],
        buffer_size=4096,
        num_training_envs=16,
        batch_size=99_999,
    )
    parser.add_argument("--lr", type=float, default=1e-3)
    add_lr_decay_option(parser)
    parser.add_argument(
        "--return-scaling",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="scale returns by their running standard deviation",
    )
    parser.add_argument(
        "--update-step-num-repetitions", type=int, default=1, help="passes over each collection"
    )
    parser.add_argument(
        "--action-bound-method",
        default="clip",
        choices=["clip", "tanh"],
        help="how sampled actions are bounded",
    )
    parser.add_argument(
        "--deterministic-eval",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="test with the mean action instead of sampling",
    )
    parser.set_known_defaults(**defaults)
    return parser


def add_alpha_options(parser: argparse.ArgumentParser) -> None:
    """The options of the entropy coefficient (SAC's, REDQ's and CQL's); see
    :func:`~tianshou.scripts.mujoco.networks.entropy_alpha`."""
    parser.add_argument("--alpha", type=float, default=0.2, help="fixed alpha (the default)")
    parser.add_argument(
        "--auto-alpha",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="tune alpha towards an entropy of -dim(A) instead of keeping --alpha",
    )
    parser.add_argument("--alpha-lr", type=float, default=3e-4)


def npg_parser(description: str | None) -> ArgumentParser:
    """:func:`on_policy_parser` with the options of NPG, which TRPO shares."""
    parser = on_policy_parser(description, collection_step_num_env_steps=1024)
    parser.add_argument("--gae-lambda", type=float, default=0.95)
    parser.add_argument(
        "--optim-critic-iters", type=int, default=20, help="critic steps per update"
    )
    parser.add_argument(
        "--actor-step-size", type=float, default=0.1, help="natural-gradient step size"
    )
    parser.add_argument(
        "--advantage-normalization", action=argparse.BooleanOptionalAction, default=True
    )
    return parser
