"""A replay buffer's state: its counters, (un)pickling, and the check that a state is consistent.

This is the bottom of the buffer package's persistence: the buffer classes build on it, and the
file formats depend on it, never the other way round. Pickling a buffer stores its state dict,
callables included, and unpickling runs code from the pickle: load pickled buffers only from
trusted sources. HDF5 files (:mod:`._hdf5`) are read as data and unpickle nothing unless the
caller allows it. Every loader (unpickling, HDF5) ends in :meth:`BufferStateMixin.__setstate__`,
which runs the consistency check :meth:`BufferStateMixin._check_state`: corrupted counters would
otherwise make the compiled bookkeeping kernels read or write outside the storage.

The counters of every buffer live in the int64 matrix ``_istate`` and the float matrix
``_ep_ret`` (column 0 for a plain buffer or a sub-buffer's view of its manager's column). The
properties below give them the names the published library uses as plain attributes
(``_insertion_idx``, ``_size``, ``last_index``, ``_ep_return``, ``_ep_len``, ``_ep_start_idx``),
and :meth:`BufferStateMixin.__setstate__` also accepts states pickled with those plain
attributes (buffers saved by Tianshou 1.x/2.x).
"""

from typing import Any

import numpy as np

from tianshou.data.batch import Batch
from tianshou.data.buffer import _kernels as K
from tianshou.data.buffer._storage import StorageIndex

_CACHES = ("_storage_index",)
_FLAGS = ("terminated", "truncated", "done")


class MalformedBufferError(RuntimeError, ValueError):
    """A buffer's stored state, or a file meant to hold one, is inconsistent or unreadable.

    It is a ``ValueError`` too, so code that catches bad-input errors catches it.
    """


class BufferFileError(MalformedBufferError, OSError):
    """A replay buffer file cannot be loaded: unreadable, corrupted, of another buffer class,
    inconsistent, or holding pickles while unpickling was not allowed. The message names the
    file; it is an ``OSError`` as well as a :class:`MalformedBufferError` (a ``ValueError``).
    """


_LEGACY_SCALARS = {
    K.INS: ("_insertion_idx", "_index"),
    K.SIZE: ("_size",),
    K.EP_LEN: ("_ep_len",),
    K.EP_START: ("_ep_start_idx", "_ep_idx"),
}


class BufferStateMixin:
    """Named access to a buffer's counters, (un)pickling, and the consistency check of a state."""

    _istate: np.ndarray
    _ep_ret: np.ndarray
    _rew_shape: tuple[int, ...]
    _maxsizes: np.ndarray
    _offset: np.ndarray
    _meta: Batch
    _storage_index: StorageIndex
    maxsize: int
    stack_num: int

    def _set_storage(self, meta: Batch) -> None:
        raise NotImplementedError

    @classmethod
    def _state_markers(cls) -> frozenset[str]:
        """State fields only this kind of buffer keeps (a manager's ``buffers``, a prioritized
        buffer's ``weight``): they tell buffer kinds apart in files that do not name their class.
        Subclasses adding such a field extend their parent's set."""
        return frozenset()

    @property
    def _insertion_idx(self) -> int:
        """Slot the next transition is written to."""
        return int(self._istate[K.INS, 0])

    @_insertion_idx.setter
    def _insertion_idx(self, value: int) -> None:
        self._istate[K.INS, 0] = value

    @property
    def _size(self) -> int:
        """Number of stored transitions."""
        return int(self._istate[K.SIZE, 0])

    @_size.setter
    def _size(self, value: int) -> None:
        self._istate[K.SIZE, 0] = value

    @property
    def last_index(self) -> np.ndarray:
        """Rows most recently written, one per (sub-)buffer (a writable view for plain buffers)."""
        return self._istate[K.LAST]

    @last_index.setter
    def last_index(self, value: Any) -> None:
        self._istate[K.LAST] = value

    @property
    def _ep_return(self) -> float | np.ndarray:
        """Return accumulated so far by the running episode."""
        value = self._ep_ret[0]
        return float(value[0]) if self._rew_shape == () else value.reshape(self._rew_shape)

    @_ep_return.setter
    def _ep_return(self, value: float | np.ndarray) -> None:
        self._ep_ret[0] = np.reshape(value, -1)

    @property
    def _ep_len(self) -> int:
        """Length of the running episode so far."""
        return int(self._istate[K.EP_LEN, 0])

    @_ep_len.setter
    def _ep_len(self, value: int) -> None:
        self._istate[K.EP_LEN, 0] = value

    @property
    def _ep_start_idx(self) -> int:
        """Row where the running episode started."""
        return int(self._istate[K.EP_START, 0])

    @_ep_start_idx.setter
    def _ep_start_idx(self, value: int) -> None:
        self._istate[K.EP_START, 0] = value

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for key in _CACHES:
            state.pop(key, None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled (or HDF5-loaded) state, including ones with published-style plain
        counter attributes, and check that it is consistent (:meth:`_check_state`).

        :raises MalformedBufferError: if fields a buffer needs are missing, or the counters,
            offsets and storage do not fit together.
        """
        state = dict(state)
        missing = [k for k in ("maxsize", "_meta") if k not in state]
        if missing or not isinstance(state["_meta"], Batch):
            raise MalformedBufferError(f"missing or invalid buffer fields: {missing or ['_meta']}")
        _upgrade_legacy(state)
        state["maxsize"] = int(state["maxsize"])
        state["stack_num"] = int(state.get("stack_num", 1))
        for flag, default in (("_save_obs_next", True), ("_save_only_last_obs", False)):
            state[flag] = bool(state.get(flag, default))
        state["_sample_avail"] = bool(state.get("_sample_avail", False))
        state["_rew_shape"] = tuple(int(s) for s in state.get("_rew_shape", ()))
        state.setdefault("options", {})
        if "_random_state" not in state:
            state["_random_state"] = np.random.RandomState(state["options"].get("random_seed", 42))
        meta = state.pop("_meta")
        self.__dict__.update(state)
        self._set_storage(meta)
        self._check_state()

    def _check_state(self) -> None:
        """Check that counters, offsets and storage fit together (run by every loader).

        Subclasses with more state (sub-buffers, a priority tree) extend the check.

        :raises MalformedBufferError: naming the first inconsistent field.
        """
        if self.maxsize < 0:
            raise MalformedBufferError(
                f"maxsize is {self.maxsize}; a buffer size cannot be negative",
            )
        if self.stack_num < 1:
            raise MalformedBufferError(f"stack_num is {self.stack_num}; it must be >= 1")
        maxsizes, offsets = self._maxsizes, self._offset
        k = len(maxsizes)
        expected_offsets = np.concatenate([[0], np.cumsum(maxsizes)[:-1]])
        if (
            maxsizes.ndim != 1
            or np.any(maxsizes < 0)
            or maxsizes.sum() != self.maxsize
            or offsets.shape != (k,)
            or not np.array_equal(offsets, expected_offsets)
        ):
            raise MalformedBufferError(
                f"sub-buffer sizes {maxsizes.tolist()} and offsets {offsets.tolist()} do not add "
                f"up to maxsize {self.maxsize}",
            )
        _check_counters(self._istate, self._ep_ret, maxsizes, self._rew_shape)
        self._check_storage()

    def _check_storage(self) -> None:
        """Check that every stored array has one row per slot and the flags are bools."""
        leaves = self._storage_index.leaves
        stored = int(self._istate[K.SIZE].sum())
        if not leaves and stored:
            raise MalformedBufferError(f"the buffer reports {stored} transitions but stores none")
        for path, spec in leaves.items():
            name = ".".join(str(p) for p in path)
            if len(spec.array) != self.maxsize:
                raise MalformedBufferError(
                    f"stored field '{name}' has {len(spec.array)} rows, expected maxsize "
                    f"{self.maxsize}",
                )
            if name in _FLAGS and (spec.is_tensor or spec.dtype != bool or spec.tail):
                raise MalformedBufferError(
                    f"stored field '{name}' must be a bool array of shape ({self.maxsize},), "
                    f"got {spec.dtype} rows of shape {spec.tail}",
                )
        rew = self._meta.__dict__.get("rew")
        if isinstance(rew, np.ndarray) and rew.shape[1:] != self._rew_shape:
            raise MalformedBufferError(
                f"stored rewards have rows of shape {rew.shape[1:]}, but the episode returns are "
                f"kept for shape {self._rew_shape}",
            )


def _check_counters(
    istate: np.ndarray,
    ep_ret: np.ndarray,
    maxsizes: np.ndarray,
    rew_shape: tuple[int, ...],
) -> None:
    """Check the shapes of the counter matrices and that every counter indexes its sub-buffer."""
    k = len(maxsizes)
    if istate.shape != (K.N_STATE_ROWS, k):
        raise MalformedBufferError(
            f"counter matrix has shape {istate.shape}, expected {(K.N_STATE_ROWS, k)}",
        )
    width = int(np.prod(rew_shape)) if rew_shape else 1
    if ep_ret.shape != (k, width):
        raise MalformedBufferError(
            f"episode returns have shape {ep_ret.shape}, expected {(k, width)} for rewards of "
            f"shape {rew_shape}",
        )
    slots = np.maximum(maxsizes, 1)
    limits = {
        "insertion index": (K.INS, slots),
        "size": (K.SIZE, maxsizes + 1),
        "last index": (K.LAST, slots),
        "episode start": (K.EP_START, slots),
    }
    for name, (row, limit) in limits.items():
        bad = (istate[row] < 0) | (istate[row] >= limit)
        if bad.any():
            b = int(np.flatnonzero(bad)[0])
            raise MalformedBufferError(
                f"{name} {istate[row, b]} of sub-buffer {b} is outside [0, {int(limit[b])}) "
                f"(sub-buffer size {int(maxsizes[b])})",
            )
    if np.any(istate[K.EP_LEN] < 0):
        raise MalformedBufferError(f"negative episode length in {istate[K.EP_LEN].tolist()}")


def stored_rows(state: dict[str, Any]) -> np.ndarray:
    """Rows of a buffer state's storage that hold transitions, in storage order: the first
    ``size`` rows of each (sub-)buffer, which is where a (sub-)buffer keeps its transitions until
    it wraps around, and all of its rows after.

    :raises MalformedBufferError: if the counters and offsets are missing or point outside the
        storage (the rows are used to place data, so they are checked before any other use).
    """
    try:
        maxsize = int(state["maxsize"])
        istate = np.asarray(state["_istate"], dtype=np.int64)
        offsets = np.asarray(state["_offset"], dtype=np.int64).reshape(-1)
    except (KeyError, TypeError, ValueError) as err:
        raise MalformedBufferError(f"missing or invalid buffer counters: {err}") from err
    sizes = istate[K.SIZE] if istate.ndim == 2 and len(istate) == K.N_STATE_ROWS else None
    if (
        sizes is None
        or offsets.shape != sizes.shape
        or np.any(sizes < 0)
        or np.any(offsets < 0)
        or np.any(offsets + sizes > maxsize)
    ):
        raise MalformedBufferError(
            f"the counters (shape {istate.shape}) and sub-buffer offsets {offsets.tolist()} "
            f"point outside a storage of {maxsize} rows",
        )
    ranges = [
        start + np.arange(size, dtype=np.int64) for start, size in zip(offsets, sizes, strict=True)
    ]
    return np.concatenate(ranges) if ranges else np.zeros(0, dtype=np.int64)


def _upgrade_legacy(state: dict[str, Any]) -> None:
    """Convert plain counter attributes (published layout) into ``_istate``/``_ep_ret``."""
    state.pop("_indices", None)
    if "_istate" in state:
        state["_istate"] = np.ascontiguousarray(state["_istate"], dtype=np.int64)
        state["_ep_ret"] = np.ascontiguousarray(state["_ep_ret"], dtype=np.float64)
        state["_offset"] = np.ascontiguousarray(state["_offset"], dtype=np.int64)
        state["_maxsizes"] = np.ascontiguousarray(state["_maxsizes"], dtype=np.int64)
        return
    istate = np.zeros((K.N_STATE_ROWS, 1), dtype=np.int64)
    for row, names in _LEGACY_SCALARS.items():
        for name in names:
            if name in state:
                istate[row, 0] = int(state.pop(name))
    istate[K.LAST, 0] = int(np.asarray(state.pop("last_index", [0])).reshape(-1)[0])
    ep_return = np.asarray(state.pop("_ep_return", state.pop("_ep_rew", 0.0)), dtype=np.float64)
    state["_rew_shape"] = ep_return.shape
    state["_istate"] = istate
    state["_ep_ret"] = ep_return.reshape(1, -1).copy()
    state["_offset"] = np.zeros(1, dtype=np.int64)
    state["_maxsizes"] = np.array([int(state["maxsize"])], dtype=np.int64)
