"""The encapsulation layer's data structures: Batch, the replay buffers and their converters."""

from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.cached import CachedReplayBuffer
from tianshou.data.buffer.her import HERReplayBuffer
from tianshou.data.buffer.manager import (
    HERReplayBufferManager,
    PrioritizedReplayBufferManager,
    ReplayBufferManager,
)
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.data.buffer.vecbuf import (
    HERVectorReplayBuffer,
    PrioritizedVectorReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.data.collector import (
    AsyncCollector,
    BaseCollector,
    Collector,
    CollectStats,
    CollectStatsBase,
    EpisodeRolloutHookMCReturn,
    EpisodeRolloutHookMerged,
    StepHookAddActionDistribution,
)
from tianshou.data.minari import (
    load_minari_buffer,
    load_minari_dataset,
    minari_normalized_score,
    save_minari_dataset,
)
from tianshou.data.stats import (
    EpochStats,
    InfoStats,
    SequenceSummaryStats,
    TimingStats,
)
from tianshou.data.utils.converter import from_hdf5, to_hdf5, to_numpy, to_torch, to_torch_as
from tianshou.data.utils.segtree import SegmentTree

__all__ = [
    "AsyncCollector",
    "BaseCollector",
    "Batch",
    "CachedReplayBuffer",
    "CollectStats",
    "CollectStatsBase",
    "Collector",
    "EpisodeRolloutHookMCReturn",
    "EpisodeRolloutHookMerged",
    "EpochStats",
    "HERReplayBuffer",
    "HERReplayBufferManager",
    "HERVectorReplayBuffer",
    "InfoStats",
    "PrioritizedReplayBuffer",
    "PrioritizedReplayBufferManager",
    "PrioritizedVectorReplayBuffer",
    "ReplayBuffer",
    "ReplayBufferManager",
    "SegmentTree",
    "SequenceSummaryStats",
    "StepHookAddActionDistribution",
    "TimingStats",
    "VectorReplayBuffer",
    "from_hdf5",
    "load_minari_buffer",
    "load_minari_dataset",
    "minari_normalized_score",
    "save_minari_dataset",
    "to_hdf5",
    "to_numpy",
    "to_torch",
    "to_torch_as",
]
