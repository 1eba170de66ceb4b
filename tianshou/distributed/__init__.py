"""Data-parallel training on ``torch.distributed``: one replica of the algorithm per rank,
gradients averaged at every optimizer step, running statistics merged, decisions agreed.

A job is started by torchrun (every process calls :func:`data_parallel`) or, on a Ray cluster,
by :func:`launch_on_ray_train`. See ``docs/distributed.md`` for when it pays and how to launch it.
"""

from tianshou.distributed.process_group import DEFAULT_TIMEOUT_S, data_parallel, rank_device
from tianshou.distributed.rank_group import (
    SINGLE_PROCESS,
    CollectionTotals,
    DataParallel,
    RankGroup,
    average_gradients,
    current_rank_group,
)
from tianshou.distributed.ray_launcher import launch_on_ray_train

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "SINGLE_PROCESS",
    "CollectionTotals",
    "DataParallel",
    "RankGroup",
    "average_gradients",
    "current_rank_group",
    "data_parallel",
    "launch_on_ray_train",
    "rank_device",
]
