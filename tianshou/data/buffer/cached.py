"""A main buffer fed whole episodes through per-environment cache buffers."""

import numpy as np

from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer, as_buffer_ids
from tianshou.data.buffer.manager import ReplayBufferManager


class CachedReplayBuffer(ReplayBufferManager):
    """A main buffer plus one cache buffer per environment; an episode is written to its
    environment's cache while it runs and moved into the main buffer, in one piece, when it ends.

    The main buffer therefore only ever holds complete episodes, contiguous and in order, which
    algorithms computing returns over whole episodes rely on. Sub-buffer 0 is the main buffer and
    sub-buffer ``i + 1`` caches environment ``i``.

    :param main_buffer: an empty buffer receiving finished episodes; its options are used for
        the caches.
    :param cached_buffer_num: number of caches (environments); must be positive.
    :param max_episode_length: size of each cache; longer episodes lose their oldest steps.
    """

    def __init__(
        self,
        main_buffer: ReplayBuffer,
        cached_buffer_num: int,
        max_episode_length: int,
    ) -> None:
        if not isinstance(main_buffer, ReplayBuffer) or isinstance(
            main_buffer, ReplayBufferManager
        ):
            raise TypeError(
                f"main_buffer must be a plain ReplayBuffer, got {type(main_buffer).__name__}"
            )
        if cached_buffer_num <= 0:
            raise ValueError(f"cached_buffer_num must be positive, got {cached_buffer_num}")
        if max_episode_length <= 0:
            raise ValueError(f"max_episode_length must be positive, got {max_episode_length}")
        caches = [
            ReplayBuffer(max_episode_length, **main_buffer.options)
            for _ in range(cached_buffer_num)
        ]
        super().__init__([main_buffer, *caches])
        self.cached_buffer_num = cached_buffer_num

    @property
    def main_buffer(self) -> ReplayBuffer:
        """The buffer holding finished episodes (sub-buffer 0)."""
        return self.buffers[0]

    @property
    def cached_buffers(self) -> np.ndarray:
        """The per-environment caches (sub-buffers 1..cached_buffer_num)."""
        return self.buffers[1:]

    def add(
        self,
        batch: Batch,
        buffer_ids: np.ndarray | list[int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Add one step per environment to its cache and move finished episodes to the main
        buffer.

        :param buffer_ids: environment (cache) ids, ``0..cached_buffer_num - 1``; all caches when
            None.
        :return: like :meth:`ReplayBuffer.add`, except that for a finished episode the row and
            the episode start refer to the main buffer (-1 when it could not be moved).
        """
        if buffer_ids is None:
            cache_ids = np.arange(1, 1 + self.cached_buffer_num)
        else:
            ids = as_buffer_ids(buffer_ids)
            bad = (ids < 0) | (ids >= self.cached_buffer_num)
            if bad.any():
                raise ValueError(
                    f"buffer_ids must lie in 0..{self.cached_buffer_num - 1} (one per cache), "
                    f"got {ids[bad].tolist()}",
                )
            cache_ids = ids + 1
        rows, ep_return, ep_len, ep_start = super().add(batch, buffer_ids=cache_ids)
        for j in np.flatnonzero(self.done[rows]):
            moved = self.main_buffer.update(self.buffers[cache_ids[j]])
            first, last = (int(moved[0]), int(moved[-1])) if len(moved) else (-1, -1)
            ep_start[j], rows[j] = first, last
            self.buffers[cache_ids[j]].reset()
        return rows, ep_return, ep_len, ep_start
