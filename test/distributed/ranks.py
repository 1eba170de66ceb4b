"""Running a test function on N real processes (ranks) of a gloo process group on localhost.

Each rank is a process started by ``torch.multiprocessing`` with the ``spawn`` method; it joins
the group through :func:`tianshou.distributed.data_parallel` (from the environment variables a
launcher would set) and calls the test's ``rank_fn(ranks, *args)``, a module-level function.
"""

import os
import socket
from collections.abc import Callable
from typing import Any

import torch
import torch.multiprocessing as mp

from tianshou.distributed import DataParallel, data_parallel

RANK_TIMEOUT_S = 20.0
"""How long a rank of a test waits for the others before failing."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_ranks(rank_fn: Callable[..., None], world_size: int, *args: Any) -> mp.ProcessContext:
    """Start ``world_size`` ranks running ``rank_fn(ranks, *args)``; join the returned context
    (``while not context.join(): pass``), which raises if a rank raised."""
    context = mp.start_processes(
        _rank_main,
        args=(rank_fn, world_size, free_port(), args),
        nprocs=world_size,
        join=False,
        start_method="spawn",
    )
    assert isinstance(context, mp.ProcessContext)
    return context


def run_ranks(rank_fn: Callable[..., None], world_size: int, *args: Any) -> None:
    """Run ``rank_fn`` on ``world_size`` ranks and wait until all have finished."""
    context = start_ranks(rank_fn, world_size, *args)
    while not context.join():
        pass


def _rank_main(
    rank: int,
    rank_fn: Callable[..., None],
    world_size: int,
    port: int,
    args: tuple[Any, ...],
) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
    )
    torch.set_num_threads(1)
    with data_parallel("cpu", timeout_s=RANK_TIMEOUT_S) as ranks:
        assert isinstance(ranks, DataParallel)
        rank_fn(ranks, *args)
