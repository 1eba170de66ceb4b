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

from tianshou.distributed.rank_group import SINGLE_PROCESS, DataParallel, set_current_rank_group

DEFAULT_TIMEOUT_S = 60.0
"""How long a collective waits for a rank before failing (torch's default is 30 minutes, far
too long to notice a rank that hangs)."""


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
    created it (a joined one stays to whoever set it up). An exception
    leaving the block is re-raised naming the rank that failed first and why (see
    :func:`_failure_report`), so the launcher's report names the cause rather than the other
    ranks' lost connections.

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
    group = DataParallel(target)
    set_current_rank_group(group)
    try:
        yield group
    except Exception as error:
        raise RuntimeError(_failure_report(group, error)) from error
    finally:
        set_current_rank_group(SINGLE_PROCESS)
        if created:
            dist.destroy_process_group()


_FAILURE_KEY = "tianshou/first_failure"
"""The key of the process group's store under which the first failing rank says why."""


def _failure_report(group: DataParallel, error: Exception) -> str:
    """What this rank's failure says: the first failure of the job, which the first failing
    rank records in the process group's key-value store (the others' errors are mostly lost
    connections to it), with this rank's own error added when that is another rank's.

    The store lives in rank 0's process; when it cannot be reached, the rank reports its own
    error alone.
    """
    own = f"rank {group.rank} of {group.world_size} failed: {type(error).__name__}: {error}"
    try:
        store = dist.distributed_c10d._get_default_store()
        if not store.check([_FAILURE_KEY]):
            store.set(_FAILURE_KEY, own)
            return own
        first = store.get(_FAILURE_KEY).decode()
    except Exception:  # the store went down with rank 0: only this rank's view is left
        return own
    if first == own:
        return own
    return f"{first} (rank {group.rank} stopped too: {type(error).__name__}: {error})"
