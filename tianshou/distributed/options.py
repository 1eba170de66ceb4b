"""The command-line options of a data-parallel run, shared by the procedural and the high-level
example scripts, so that both are launched the same way (see ``docs/distributed.md``)."""

import argparse
from dataclasses import dataclass
from typing import Literal

from tianshou.distributed.rank_group import DEFAULT_TIMEOUT_S

Launcher = Literal["torchrun", "ray"]

OPTION_DESTS = ("distributed", "distributed_timeout", "launcher", "num_workers", "ray_address")
"""Where :func:`add_data_parallel_options` puts its options in the parsed namespace."""


@dataclass(frozen=True)
class DataParallelOptions:
    """What the options :func:`add_data_parallel_options` adds asked for."""

    distributed: bool = False
    """Train as one rank of a job that torchrun started."""
    timeout_s: float = DEFAULT_TIMEOUT_S
    """How long a rank waits for the others before the job fails."""
    launcher: Launcher = "torchrun"
    """Who starts the ranks: torchrun (this process is one rank) or Ray Train (this process is
    the driver of ``num_workers`` workers)."""
    num_workers: int = 2
    """The ranks of a Ray Train job."""
    ray_address: str | None = None
    """The head node of the Ray cluster (None: ``RAY_ADDRESS``, else a local Ray)."""

    @property
    def enabled(self) -> bool:
        """Whether the run is data-parallel (``--launcher ray`` implies ``--distributed``)."""
        return self.distributed or self.launcher == "ray"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> "DataParallelOptions":
        """The options parsed into ``args`` by a parser with :func:`add_data_parallel_options`."""
        return cls(
            distributed=args.distributed,
            timeout_s=args.distributed_timeout,
            launcher=args.launcher,
            num_workers=args.num_workers,
            ray_address=args.ray_address,
        )


def add_data_parallel_options(parser: argparse.ArgumentParser, script: str) -> None:
    """Add ``--distributed``, ``--distributed-timeout``, ``--launcher``, ``--num-workers`` and
    ``--ray-address`` (with explicit defaults, also in a parser that suppresses defaults).

    :param script: how the script is started, for the help text (e.g.
        ``-m examples.mujoco.<script>``).
    """
    defaults = DataParallelOptions()
    parser.add_argument(
        "--distributed",
        action="store_true",
        default=defaults.distributed,
        help="train data-parallel as one rank of a torchrun job (torchrun --nproc-per-node N "
        f"{script} --distributed ...; see docs/distributed.md)",
    )
    parser.add_argument(
        "--distributed-timeout",
        type=float,
        default=defaults.timeout_s,
        help="seconds a rank waits for the others before the job fails",
    )
    parser.add_argument(
        "--launcher",
        default=defaults.launcher,
        choices=["torchrun", "ray"],
        help="who starts the ranks of a --distributed job: torchrun (the script is one rank), "
        "or ray (the script is the driver of --num-workers Ray Train workers; implies "
        "--distributed)",
    )
    parser.add_argument(
        "--num-workers",
        type=int,
        default=defaults.num_workers,
        help="ranks of a --launcher ray job",
    )
    parser.add_argument(
        "--ray-address",
        default=defaults.ray_address,
        help="head node (HOST:PORT) of the Ray cluster of --launcher ray; default: RAY_ADDRESS, "
        "else a local Ray",
    )
