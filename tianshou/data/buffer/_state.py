"""Counter attributes, pickling and HDF5 persistence for the replay buffers.

Pickling a buffer stores everything, including callables, and unpickling runs code from the
pickle: load pickled buffers only from trusted sources. HDF5 files (:mod:`._hdf5`) are read as
data and unpickle nothing unless the caller allows it.

The counters of every buffer live in the int64 matrix ``_istate`` and the float matrix
``_ep_ret`` (column 0 for a plain buffer or a sub-buffer's view of its manager's column). The
properties below give them the names the published library uses as plain attributes
(``_insertion_idx``, ``_size``, ``last_index``, ``_ep_return``, ``_ep_len``, ``_ep_start_idx``),
and :meth:`BufferStateMixin.__setstate__` also accepts states pickled with those plain
attributes (buffers saved by Tianshou 1.x/2.x).
"""

from typing import TYPE_CHECKING, Any, Self

import numpy as np

from tianshou.data.buffer import _kernels as K

if TYPE_CHECKING:
    from tianshou.data.batch import Batch

_CACHES = ("_storage_index",)


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
    """Named access to a buffer's counters, (un)pickling and HDF5 files of the buffer."""

    _istate: np.ndarray
    _ep_ret: np.ndarray
    _rew_shape: tuple[int, ...]
    maxsize: int

    def _set_storage(self, meta: "Batch") -> None:
        raise NotImplementedError

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
        counter attributes.

        :raises MalformedBufferError: if fields a buffer needs are missing.
        """
        from tianshou.data.batch import Batch

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

    def _check_state(self) -> None:
        """Check that counters, offsets and storage fit together (run after loading a file).

        :raises MalformedBufferError: naming the first inconsistent field.
        """
        from tianshou.data.buffer._hdf5 import check_layout

        check_layout(self)  # type: ignore[arg-type]

    def save_hdf5(self, path: str, compression: str | None = None) -> None:
        """Write the whole buffer (data, counters, options, random generator) to an HDF5 file.

        Numeric data and the buffer's own metadata are stored as plain HDF5 datasets and
        attributes with checksums; object arrays (e.g. strings in ``info``) and callables are
        pickled, and loading such a file then needs ``allow_pickle=True``.

        :param path: file to create (overwritten if it exists).
        :param compression: HDF5 filter for the data arrays, e.g. ``"gzip"`` or ``"lzf"``.
        """
        from tianshou.data.buffer._hdf5 import save_buffer

        save_buffer(self, path, compression)  # type: ignore[arg-type]

    @classmethod
    def load_hdf5(
        cls,
        path: str,
        device: str | None = None,
        *,
        allow_pickle: bool = False,
    ) -> Self:
        """Load a buffer written by :meth:`save_hdf5` (or by the published library).

        Unlike pickle files of buffers, which run code by design and must only be loaded from
        trusted sources, an HDF5 file is read as data: nothing is unpickled unless
        ``allow_pickle`` is True. Its checksums, the buffer class it names and the consistency of
        its counters are checked.

        :param path: the HDF5 file.
        :param device: device for stored tensors (default: CPU).
        :param allow_pickle: also unpickle what the file holds as pickles (object arrays,
            callables such as HER's reward function, and the whole metadata of files in the
            published layout). Unpickling runs code chosen by whoever wrote the file: pass True
            only for files you trust.
        :raises BufferFileError: (an ``OSError`` and a :class:`MalformedBufferError`) naming
            ``path`` if the file cannot be opened, is corrupted or truncated, holds another
            buffer class, needs unpickling while ``allow_pickle`` is False, or holds counters or
            arrays that do not fit the buffer's size.
        """
        from tianshou.data.buffer._hdf5 import load_buffer

        return load_buffer(cls, path, device, allow_pickle)  # type: ignore[type-var]


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
