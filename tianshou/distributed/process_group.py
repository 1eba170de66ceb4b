"""Joining a data-parallel job: the ``torch.distributed`` process group, one device per rank.

torchrun (or any launcher setting ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and
``MASTER_PORT``) starts one process per rank; each calls :func:`data_parallel`::

    with data_parallel(device="cuda", timeout_s=60) as ranks:
        ranks.check_same_config(vars(args))
        algorithm = build(...).to(ranks.device)
        ranks.attach(algorithm, training_envs)
        algorithm.run_training(params)  # rank 0 logs, tests and saves
"""

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import torch
import torch.distributed as dist

from tianshou.distributed.failure_record import failure_report
from tianshou.distributed.rank_group import (
    DEFAULT_TIMEOUT_S,
    SINGLE_PROCESS,
    DataParallel,
    set_current_rank_group,
)


def rank_device(device: str | torch.device) -> torch.device:
    """The device of this rank: ``cuda`` becomes ``cuda:<LOCAL_RANK>`` (one GPU per rank), any
    other device (or an explicit ``cuda:<i>``) stays as it is."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return device


@contextmanager
def data_parallel(
    device: str | torch.device = "cpu", timeout_s: float = DEFAULT_TIMEOUT_S
) -> Iterator[DataParallel]:
    """Join the job this process was started in as one rank, for the duration of the block.

    Initialises the process group from the launcher's environment variables (NCCL for a CUDA
    device, gloo otherwise) unless it is initialised already, as in a Ray Train worker (see
    :func:`~tianshou.distributed.launch_on_ray_train`), which then joins it. It makes the
    returned :class:`DataParallel` the rank group of the trainers and optimizers, and on
    leaving restores single-process behaviour and destroys the process group only if it
    created it (a joined one stays to whoever set it up). An exception leaving the block is
    re-raised naming the rank that failed first and why (see
    :mod:`~tianshou.distributed.failure_record`), so the launcher's report names the cause
    rather than the other ranks' lost connections.

    :param device: the replicas' device; ``cuda`` means this rank's GPU (``LOCAL_RANK``).
    :param timeout_s: how long a collective waits for the other ranks before failing.
    """
    target = rank_device(device)
    created = not dist.is_initialized()
    if created:
        if target.type == "cuda":
            torch.cuda.set_device(target)
        dist.init_process_group(
            backend="nccl" if target.type == "cuda" else "gloo",
            timeout=timedelta(seconds=timeout_s),
        )
    group = DataParallel(target, timeout_s=timeout_s)
    set_current_rank_group(group)
    try:
        yield group
    except Exception as error:
        raise RuntimeError(failure_report(group.rank, group.world_size, error)) from error
    finally:
        set_current_rank_group(SINGLE_PROCESS)
        group.close()
        if created:
            dist.destroy_process_group()
