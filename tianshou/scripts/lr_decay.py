"""The ``--lr-decay`` option of the on-policy scripts: a learning rate that falls linearly to 0
over the run, which on-policy methods need to settle at the end of a fixed budget (the MuJoCo
PPO, A2C, NPG, TRPO and REINFORCE scripts, and recurrent PPO).
"""

import argparse

from tianshou.algorithm.optim import LRSchedulerFactoryLinear, OptimizerFactory
from tianshou.distributed import current_rank_group


def add_lr_decay_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--lr-decay`` / ``--no-lr-decay`` (on by default) to ``parser``."""
    parser.add_argument(
        "--lr-decay",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="decay the learning rate linearly to 0 over the run",
    )


def with_lr_decay(
    optim: OptimizerFactory,
    args: argparse.Namespace,
    collection_step_num_env_steps: int | None = None,
) -> OptimizerFactory:
    """``optim`` with a learning rate decaying linearly to 0 over the run if ``args.lr_decay``.

    :param args: holds ``lr_decay``, ``epoch`` and ``epoch_num_steps``.
    :param collection_step_num_env_steps: the env steps of one collect-and-update step of one
        process; ``args.collection_step_num_env_steps`` by default. In a data-parallel run an
        epoch's env steps are those of all ranks, so each update stands for ``world_size``
        collections.
    """
    if not args.lr_decay:
        return optim
    if collection_step_num_env_steps is None:
        collection_step_num_env_steps = args.collection_step_num_env_steps
    return optim.with_lr_scheduler_factory(
        LRSchedulerFactoryLinear(
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=collection_step_num_env_steps
            * current_rank_group().world_size,
        )
    )
