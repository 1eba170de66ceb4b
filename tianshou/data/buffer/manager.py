"""One flat storage shared by several circular sub-buffers (one per environment).

:class:`ReplayBufferManager` lays its sub-buffers out contiguously (sub-buffer ``b`` owns rows
``[_offset[b], _offset[b] + maxsize_b)``) and is the single owner of storage and counters: each
sub-buffer's ``_meta`` is a view of its row range and its ``_istate``/``_ep_ret`` are views of
its column of the manager's counters, so the sub-buffer objects always report their own length,
insertion slot and episode statistics correctly while the manager adds rows for all of them with
one numba call. Everything a plain buffer does (add, read, prev/next, frame stacking) is
inherited; the manager changes the layout, sampling and pickling.

Subclassing: a class mixing a :class:`~tianshou.data.ReplayBuffer` subclass with this one, such
as ``class PrioritizedReplayBufferManager(PrioritizedReplayBuffer, ReplayBufferManager)``, works
because ``add`` returns the global rows written (set per-row data from them after ``super()``),
``sample_indices``/``_rows_to_batch`` are the extension points for reading, and
``ReplayBuffer.__init__`` may be re-run on a constructed manager: it calls :meth:`_init_storage`,
which rebuilds an empty layout from ``self.buffers``.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from tianshou.data.batch import Batch
from tianshou.data.buffer import _kernels as K
from tianshou.data.buffer._storage import StorageIndex, slice_view
from tianshou.data.buffer.buffer_base import MalformedBufferError, ReplayBuffer

_EMPTY_INT = np.zeros(0, dtype=np.int64)


class ReplayBufferManager(ReplayBuffer):
    """Several replay buffers in one contiguous storage, written to with ``buffer_ids``.

    Each sub-buffer keeps its own episodes and chronological order, so transitions of parallel
    environments never interleave inside an episode. ``buf[:]`` and ``sample_indices(0)`` list the
    sub-buffers one after the other; random sampling is uniform over all stored transitions.

    :param buffer_list: empty buffers of the same type and options; their sizes may differ.
    """

    def __init__(self, buffer_list: Sequence[ReplayBuffer]) -> None:
        buffers = list(buffer_list)
        if not buffers:
            raise ValueError("ReplayBufferManager needs at least one buffer in buffer_list")
        first = buffers[0]
        for i, buf in enumerate(buffers):
            if not isinstance(buf, type(first)):
                raise TypeError(
                    f"buffer_list[{i}] is a {type(buf).__name__}, but all buffers must be "
                    f"{type(first).__name__}",
                )
            if buf.options != first.options:
                raise ValueError(
                    f"buffer_list[{i}] has options {buf.options}, buffer_list[0] has "
                    f"{first.options}; all buffers must share them",
                )
            if len(buf) or not buf._meta.is_empty():
                raise ValueError(f"buffer_list[{i}] already holds data; pass empty buffers")
        self.buffer_num = len(buffers)
        self.buffers = np.empty(self.buffer_num, dtype=object)
        for i, buf in enumerate(buffers):
            self.buffers[i] = buf
        super().__init__(size=sum(buf.maxsize for buf in buffers), **first.options)

    def _init_storage(self) -> None:
        """Create the contiguous layout from ``self.buffers`` with empty storage and counters."""
        sizes = np.array([buf.maxsize for buf in self.buffers], dtype=np.int64)
        self._maxsizes = sizes
        self._extend_offset = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._offset = self._extend_offset[:-1].copy()
        self._istate = np.zeros((K.N_STATE_ROWS, self.buffer_num), dtype=np.int64)
        self._ep_ret = np.zeros((self.buffer_num, 1))
        self._rew_shape = ()
        self._set_storage(Batch())

    def _on_storage_changed(self) -> None:
        """Point every sub-buffer at its rows of the storage and its column of the counters."""
        for b, buf in enumerate(self.buffers):
            start = int(self._offset[b])
            view = slice_view(self._meta, slice(start, start + buf.maxsize))
            buf.__dict__.update(
                _meta=view,
                _storage_index=StorageIndex(view),
                _istate=self._istate[:, b : b + 1],
                _ep_ret=self._ep_ret[b : b + 1],
                _rew_shape=self._rew_shape,
            )

    @property
    def subbuffer_edges(self) -> np.ndarray:
        return self._extend_offset

    @property
    def _lengths(self) -> np.ndarray:
        """Number of stored transitions of each sub-buffer (a writable view)."""
        return self._istate[K.SIZE]

    @_lengths.setter
    def _lengths(self, value: Any) -> None:
        self._istate[K.SIZE] = value

    @property
    def _size(self) -> int:
        return int(self._istate[K.SIZE].sum())

    @_size.setter
    def _size(self, value: int) -> None:
        raise AttributeError("a manager's size is the sum of its sub-buffers' sizes (_lengths)")

    @property
    def last_index(self) -> np.ndarray:
        """Global row most recently written in each sub-buffer (a fresh array; assign the whole
        attribute to change it)."""
        return self._istate[K.LAST] + self._offset

    @last_index.setter
    def last_index(self, value: Any) -> None:
        self._istate[K.LAST] = np.asarray(value) - self._offset

    def __len__(self) -> int:
        return int(self._istate[K.SIZE].sum())

    def _default_buffer_ids(self) -> tuple[np.ndarray, int | None]:
        return np.arange(self.buffer_num, dtype=np.int64), self.buffer_num

    def _nav_total(self) -> int:
        return self.maxsize

    def reset(self, keep_statistics: bool = False) -> None:
        super().reset(keep_statistics=keep_statistics)
        for buf in self.buffers:
            buf.reset(keep_statistics=keep_statistics)

    def update(self, buffer: ReplayBuffer) -> np.ndarray:
        """Not supported: a manager only grows through :meth:`add` with ``buffer_ids``."""
        raise NotImplementedError(
            f"{type(self).__name__} cannot be updated from another buffer; add transitions with "
            f"buffer_ids, or update one of its sub-buffers",
        )

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Like :meth:`ReplayBuffer.sample_indices`, over all sub-buffers: random draws are
        uniform over every stored transition; 0 lists each sub-buffer's rows in order."""
        if batch_size is not None and batch_size < 0:
            return _EMPTY_INT.copy()
        if self._sample_avail and self.stack_num > 1:
            candidates = np.concatenate(
                [
                    buf.sample_indices(0) + off
                    for off, buf in zip(self._offset, self.buffers, strict=True)
                ],
            ).astype(np.int64)
            if batch_size == 0:
                return candidates
            count = len(candidates) if batch_size is None else batch_size
            if len(candidates) == 0:
                return _EMPTY_INT.copy()
            return self._random_state.choice(candidates, count)
        if batch_size == 0:
            return self._chronological()
        total = len(self)
        if total == 0:
            return _EMPTY_INT.copy()
        count = total if batch_size is None else batch_size
        uniform = self._random_state.random_sample(count)
        return K.jit("uniform_to_rows")(uniform, self._offset, self._istate)

    def dropnull(self) -> None:
        """Drop transitions holding NaN or None, per sub-buffer."""
        for buf in self.buffers:
            buf.dropnull()

    @classmethod
    def _state_markers(cls) -> frozenset[str]:
        return super()._state_markers() | {"buffers"}

    def _check_state(self) -> None:
        """Also check that there is one sub-buffer per counter column, all of one class and
        with the manager's options."""
        super()._check_state()
        buffers = self.buffers
        if self.buffer_num != len(self._maxsizes):
            raise MalformedBufferError(
                f"{self.buffer_num} sub-buffers for {len(self._maxsizes)} counter columns",
            )
        first = type(buffers[0])
        for b, buf in enumerate(buffers):
            if type(buf) is not first or buf.options != self.options:
                raise MalformedBufferError(
                    f"sub-buffer {b} is a {type(buf).__name__} with options {buf.options}; "
                    f"expected a {first.__name__} with the manager's options {self.options}",
                )

    def __getstate__(self) -> dict[str, Any]:
        """Pickle sub-buffers without their storage views; :meth:`__setstate__` relinks them."""
        state = super().__getstate__()
        stubs = np.empty(self.buffer_num, dtype=object)
        for b, buf in enumerate(self.buffers):
            stub = object.__new__(type(buf))
            stub.__dict__.update(buf.__dict__)
            stub.__dict__.update(
                _meta=Batch(),
                _istate=np.zeros((K.N_STATE_ROWS, 1), dtype=np.int64),
                # as wide as the rewards (vector rewards: one column per entry), so that the
                # stub passes its own consistency check before it is relinked
                _ep_ret=np.zeros((1, self._ep_ret.shape[1])),
            )
            stub.__dict__.pop("_storage_index", None)
            stubs[b] = stub
        state["buffers"] = stubs
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = dict(state)
        buffers = state.get("buffers")
        if buffers is None or len(buffers) == 0:
            raise MalformedBufferError("a buffer manager's state needs its sub-buffers")
        if "_istate" not in state:
            _upgrade_legacy_manager(state, buffers)
        state["buffer_num"] = len(buffers)
        sizes = np.array([buf.maxsize for buf in buffers], dtype=np.int64)
        state["_maxsizes"] = sizes
        state["_extend_offset"] = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.__dict__["buffers"] = buffers
        super().__setstate__(state)


def _upgrade_legacy_manager(state: dict[str, Any], buffers: Any) -> None:
    """Build the counter matrices of a manager pickled with the published layout, whose
    per-sub-buffer counters live in the (already restored) sub-buffers."""
    state["_istate"] = np.concatenate([buf._istate for buf in buffers], axis=1)
    state["_ep_ret"] = np.concatenate([buf._ep_ret for buf in buffers], axis=0)
    state["_rew_shape"] = buffers[0]._rew_shape
    state["_offset"] = np.asarray(state.get("_offset", [0]), dtype=np.int64)
    for key in ("_insertion_idx", "_index", "_size", "last_index", "_lengths"):
        state.pop(key, None)
    for key in ("_ep_return", "_ep_rew", "_ep_len", "_ep_start_idx", "_ep_idx"):
        state.pop(key, None)


# --- prioritized and hindsight variants ---

from tianshou.data.buffer.her import HERReplayBuffer, RestoresOriginalsFirst  # noqa: E402
from tianshou.data.buffer.prio import PrioritizedReplayBuffer  # noqa: E402


class PrioritizedReplayBufferManager(PrioritizedReplayBuffer, ReplayBufferManager):
    """Several :class:`~tianshou.data.PrioritizedReplayBuffer` sub-buffers in one storage, with
    one priority tree over all of their rows: sampling is proportional to priority across every
    sub-buffer, and ``update_weight`` takes the manager's (global) rows.

    :param buffer_list: empty prioritized buffers with identical options (alpha, beta, ...); their
        own priority trees are dropped.
    """

    def __init__(self, buffer_list: Sequence[PrioritizedReplayBuffer]) -> None:
        for i, buf in enumerate(buffer_list):
            if not isinstance(buf, PrioritizedReplayBuffer):
                raise TypeError(
                    f"buffer_list[{i}] is a {type(buf).__name__}; "
                    f"{type(self).__name__} needs PrioritizedReplayBuffer instances",
                )
        ReplayBufferManager.__init__(self, buffer_list)
        for buf in self.buffers:
            buf.__dict__.pop("weight", None)
        options = self.options
        self._init_priorities(options["alpha"], options["beta"], options["weight_norm"])


class HERReplayBufferManager(RestoresOriginalsFirst, ReplayBufferManager):
    """Several :class:`~tianshou.data.HERReplayBuffer` sub-buffers in one storage. Sampling is
    uniform over all stored transitions; each sub-buffer then relabels the episodes of its sampled
    transitions in the shared storage, and every write, save or pickle restores the originals.

    :param buffer_list: empty HER buffers with identical options.
    """

    def __init__(self, buffer_list: Sequence[HERReplayBuffer]) -> None:
        for i, buf in enumerate(buffer_list):
            if not isinstance(buf, HERReplayBuffer):
                raise TypeError(
                    f"buffer_list[{i}] is a {type(buf).__name__}; "
                    f"{type(self).__name__} needs HERReplayBuffer instances",
                )
        super().__init__(buffer_list)

    def _restore_cache(self) -> None:
        """Write back the original goals and rewards in every sub-buffer."""
        for buf in self.buffers:
            buf._restore_cache()

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Draw indices as :meth:`ReplayBufferManager.sample_indices` does, then let each
        sub-buffer relabel the episodes of the indices that fall into it."""
        self._restore_cache()
        indices = super().sample_indices(batch_size)
        edges = self._extend_offset
        for b, buf in enumerate(self.buffers):
            inside = indices[(indices >= edges[b]) & (indices < edges[b + 1])]
            buf.rewrite_transitions(inside - edges[b])
        return indices
