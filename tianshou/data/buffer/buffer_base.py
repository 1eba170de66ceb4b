"""The circular replay buffer every other buffer builds on.

A :class:`ReplayBuffer` keeps transitions ``(obs, act, rew, terminated, truncated, done, obs_next,
info, policy, ...)`` in one pre-allocated :class:`~tianshou.data.Batch` (``_meta``) used as a
circular queue. Its counters live in one small int64 matrix ``_istate`` (rows
``INS``/``SIZE``/``LAST``/``EP_LEN``/``EP_START`` of :mod:`._kernels`, one column per
sub-buffer) plus the float matrix ``_ep_ret``; a plain buffer has one column, a
:class:`~tianshou.data.ReplayBufferManager` one per sub-buffer, and its sub-buffers hold *views*
of their column, so a sub-buffer's ``len()``, ``_insertion_idx`` or ``last_index`` are always
current without any syncing. ``add`` and ``update`` share the same store pipeline: flatten the
input, validate every leaf against storage, allocate keys that are new, reserve rows (the numba
kernel ``add_bookkeeping``), then write.

Hooks for subclasses (prioritized, hindsight, cached): ``add``/``update`` return the rows they
wrote, so a subclass can attach per-row data after calling ``super()``; ``sample`` and
``__getitem__`` go through ``sample_indices`` and ``_rows_to_batch`` (override either;
``_obs_next_at`` reads the ``obs_next`` of both, alone, for n-step targets);
``_init_storage`` builds the layout and may safely run again on a constructed buffer (a subclass
calling ``ReplayBuffer.__init__`` on a manager); ``_on_storage_changed`` runs whenever the
storage's key structure changes.
"""

from typing import Any, Self

import numpy as np
import numpy.typing as npt
import torch

from tianshou.data.batch import Batch, alloc_by_keys_diff, batch_of_parsed_values, create_value
from tianshou.data.buffer import _kernels as K
from tianshou.data.buffer._hdf5 import load_buffer, save_buffer
from tianshou.data.buffer._state import BufferFileError, BufferStateMixin, MalformedBufferError
from tianshou.data.buffer._storage import (
    StorageIndex,
    as_flags,
    coerce,
    fill,
    flatten_input,
    gather,
    null_rows,
    path_name,
    prepare_input,
    to_numpy,
    write,
)
from tianshou.data.types import IndexType

RESERVED_KEYS = (
    "obs",
    "act",
    "rew",
    "terminated",
    "truncated",
    "done",
    "obs_next",
    "info",
    "policy",
)
INPUT_KEYS = ("obs", "act", "rew", "terminated", "truncated", "obs_next", "info", "policy")
__all__ = ["BufferFileError", "MalformedBufferError", "ReplayBuffer"]

DataColumn = npt.ArrayLike | torch.Tensor | Batch | dict[str, Any]
"""One column for :meth:`ReplayBuffer.from_data`: anything array-like, e.g. an h5py dataset."""

_PLAIN_OUTPUT_KEYS = ("act", "rew", "terminated", "truncated", "done")
"""Keys read one row per index: with ``stack_num > 1`` they stay unstacked."""
_STACKED_EXTRA_KEYS = ("info", "policy")
"""Keys besides ``obs``/``obs_next`` that are frame-stacked like the observations, so that a
recurrent policy sees the infos and policy outputs (e.g. hidden states) of the same frames."""
_EMPTY_INT = np.zeros(0, dtype=np.int64)


class ReplayBuffer(BufferStateMixin):
    """A fixed-size circular store of transitions with episode bookkeeping.

    The buffer is filled by :meth:`add` (one transition, or a stacked batch with ``buffer_ids``)
    and read by index, :meth:`sample`, :meth:`prev`/:meth:`next` (moves within an episode) and
    frame stacking. Storage is allocated lazily from the first batch: numeric leaves become zero
    arrays, anything else object arrays of None; ``rew`` is stored as float and the flags as bool.

    :param size: number of transitions kept; the oldest is overwritten once full. 0 gives an
        empty buffer that cannot be added to.
    :param stack_num: frames stacked along a new axis when reading ``obs``, ``obs_next``, ``info``
        and ``policy`` (the first frame of an episode is repeated), for recurrent or
        frame-stacking policies.
    :param ignore_obs_next: do not store ``obs_next``; it is rebuilt as ``obs[next(i)]`` on read,
        halving memory for image observations.
    :param save_only_last_obs: store only the last frame of a stacked observation (Atari-style
        wrappers), then rebuild stacks with ``stack_num``.
    :param sample_avail: with ``stack_num > 1``, only sample indices that have a full stack of
        distinct frames from the same episode.
    :param random_seed: seed of the buffer's own random generator used by sampling.
    :param kwargs: extra options kept in :attr:`options` (used by subclasses and managers).
    """

    _reserved_keys = RESERVED_KEYS
    _input_keys = INPUT_KEYS
    _required_keys_for_add: frozenset[str] = frozenset(
        {"obs", "act", "rew", "terminated", "truncated"}
    )
    """The keys every batch given to :meth:`add` must hold (``done`` is derived from the flags,
    ``obs_next``, ``info`` and ``policy`` are optional); a subclass may require more."""

    def __init__(
        self,
        size: int,
        stack_num: int = 1,
        ignore_obs_next: bool = False,
        save_only_last_obs: bool = False,
        sample_avail: bool = False,
        random_seed: int = 42,
        **kwargs: Any,
    ) -> None:
        integral = isinstance(size, int | np.integer) or (
            isinstance(size, float) and size.is_integer()
        )
        if isinstance(size, bool) or not integral or size < 0:
            raise ValueError(f"size must be a non-negative integer, got {size!r}")
        if not isinstance(stack_num, int | np.integer) or stack_num < 1:
            raise ValueError(f"stack_num must be an integer >= 1, got {stack_num!r}")
        self.options: dict[str, Any] = {
            "stack_num": stack_num,
            "ignore_obs_next": ignore_obs_next,
            "save_only_last_obs": save_only_last_obs,
            "sample_avail": sample_avail,
            "random_seed": random_seed,
            **kwargs,
        }
        self.maxsize = int(size)
        self.stack_num = int(stack_num)
        self._save_obs_next = not ignore_obs_next
        self._save_only_last_obs = save_only_last_obs
        self._sample_avail = sample_avail
        self._random_state = np.random.RandomState(random_seed)
        self._init_storage()

    # ------------------------------------------------------------------ layout and storage
    def _init_storage(self) -> None:
        """Create empty storage and zeroed counters for a single circular buffer."""
        self._offset = np.zeros(1, dtype=np.int64)
        self._maxsizes = np.array([self.maxsize], dtype=np.int64)
        self._istate = np.zeros((K.N_STATE_ROWS, 1), dtype=np.int64)
        self._ep_ret = np.zeros((1, 1))
        self._rew_shape: tuple[int, ...] = ()
        self._set_storage(Batch())

    def _set_storage(self, meta: Batch) -> None:
        self._meta = meta
        self._storage_index = StorageIndex(meta)
        self._on_storage_changed()

    def _on_storage_changed(self) -> None:
        """Hook run after the storage's key structure changed (managers relink sub-buffers)."""

    def _set_reward_shape(self, shape: tuple[int, ...]) -> None:
        """Switch the episode-return accumulators to rewards of ``shape`` (resets them)."""
        width = int(np.prod(shape)) if shape else 1
        self._ep_ret = np.zeros((self._istate.shape[1], width))
        self._rew_shape = shape
        self._on_storage_changed()

    @property
    def _indices(self) -> np.ndarray:
        return np.arange(self.maxsize)

    @property
    def subbuffer_edges(self) -> np.ndarray:
        """Start row of each sub-buffer followed by the total size (``[0, maxsize]`` here)."""
        return np.array([0, self.maxsize])

    def __len__(self) -> int:
        return int(self._istate[K.SIZE, 0])

    def __repr__(self) -> str:
        return self.__class__.__name__ + repr(self._meta)[len("Batch") :]

    def __getattr__(self, key: str) -> Any:
        """Expose stored fields as attributes (``buf.obs`` is the full storage array)."""
        meta = self.__dict__.get("_meta")
        if meta is not None and key in meta.__dict__:
            return meta.__dict__[key]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{key}'")

    def __setattr__(self, key: str, value: Any) -> None:
        if key in RESERVED_KEYS:
            raise AttributeError(
                f"'{key}' is a stored data field; write it through add(), update() or set_batch()",
            )
        super().__setattr__(key, value)

    def set_batch(self, batch: Batch) -> None:
        """Replace the whole storage by ``batch`` (one row per slot; counters are kept).

        :raises ValueError: if ``len(batch) != maxsize`` or it has keys that are neither reserved
            nor already stored.
        """
        if not isinstance(batch, Batch):
            raise TypeError(f"set_batch expects a Batch, got {type(batch).__name__}")
        try:
            length = len(batch)
        except TypeError as err:
            raise ValueError(f"set_batch needs a Batch with one row per slot: {err}") from None
        if length != self.maxsize:
            raise ValueError(f"set_batch needs a Batch of length {self.maxsize}, got {length}")
        unknown = set(batch.get_keys()) - set(RESERVED_KEYS) - set(self._meta.get_keys())
        if unknown:
            raise ValueError(
                f"set_batch got unknown keys {sorted(unknown)}; accepted: {list(RESERVED_KEYS)}",
            )
        self._set_storage(batch)

    # ------------------------------------------------------------------ writing
    def add(
        self,
        batch: Batch,
        buffer_ids: np.ndarray | list[int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Store transitions and update the episode statistics.

        :param batch: needs the keys ``_required_keys_for_add`` (``obs, act, rew, terminated,
            truncated``); ``done`` is always recomputed as ``terminated | truncated``. Other
            keys are stored as given.
        :param buffer_ids: sub-buffer of each row of a stacked ``batch``. ``None`` on a plain
            buffer means ``batch`` is one un-stacked transition (on a manager: one row per
            sub-buffer).
        :return: ``(rows written, episode returns, episode lengths, episode start rows)``, each of
            length n; return and length are 0 except where the transition ends an episode.
        :raises ValueError: on missing keys, a wrong leading dimension, out-of-range
            ``buffer_ids``, or values whose shape or dtype do not fit the stored fields; nothing
            stored and no counter is modified then.
        """
        if not isinstance(batch, Batch):
            batch = Batch(batch)
        if self.maxsize == 0:
            raise ValueError(f"cannot add to {type(self).__name__} of size 0")
        if buffer_ids is None:
            ids, n = self._default_buffer_ids()
        else:
            ids = as_buffer_ids(buffer_ids)
            n = len(ids)
        data, rew, done = prepare_input(
            batch.__dict__,
            n,
            self._save_only_last_obs,
            self._save_obs_next,
            self._required_keys_for_add,
        )
        plan, values = self._validated(data, n, ids)
        if rew.shape[1:] != self._rew_shape:
            self._set_reward_shape(rew.shape[1:])
        rows, ep_ret, ep_len, ep_start, span = self._reserve(ids, rew, done)
        write(plan.specs, values, rows if n is not None else int(rows[0]), span)
        if plan.missing:
            fill(plan.missing, rows)
        return rows, ep_ret, ep_len, ep_start

    def _default_buffer_ids(self) -> tuple[np.ndarray, int | None]:
        """Sub-buffer ids and row count assumed when ``add`` gets no ``buffer_ids``."""
        return np.zeros(1, dtype=np.int64), None

    def _validated(
        self,
        data: dict[str, Any],
        n: int | None,
        ids: np.ndarray | None,
    ) -> tuple[Any, list[Any]]:
        """Flatten ``data``, allocate storage for keys seen for the first time, and return the
        write plan with every value checked and converted (raising before anything is written).
        """
        paths, values = flatten_input(data)
        key = tuple(paths)
        plan = self._storage_index.plan(key)
        if plan is None:
            self._allocate(data, paths, values, n, ids)
            plan = self._storage_index.plan(key)
            assert plan is not None
        coerced: list[Any] = []
        for value, spec in zip(values, plan.specs, strict=True):
            # inlined fast path of coerce(): an array of the stored dtype and row shape
            if spec is None:
                coerced.append(None)
            elif (
                type(value) is np.ndarray
                and value.dtype in spec.ok_dtypes
                and n is not None
                and value.shape[1:] == spec.tail
                and len(value) == n
            ):
                coerced.append(value)
            else:
                coerced.append(coerce(value, spec, n))
        return plan, coerced

    def _allocate(
        self,
        data: dict[str, Any],
        paths: list[Any],
        values: list[Any],
        n: int | None,
        ids: np.ndarray | None,
    ) -> None:
        leaves = self._storage_index.leaves
        for path, value in zip(paths, values, strict=True):
            spec = leaves.get(path)
            if spec is not None:
                coerce(value, spec, n)
            elif n is not None and value is not None and np.ndim(value) == 0:
                raise ValueError(
                    f"key '{path_name(path)}' is a scalar, but a stacked batch needs a leading "
                    f"dimension of {n} (one row per entry of buffer_ids)",
                )
            elif n is not None and value is not None and len(value) != n:
                raise ValueError(
                    f"key '{path_name(path)}' has {len(value)} rows, expected {n} "
                    f"(one per entry of buffer_ids)",
                )
        if ids is not None and len(ids):
            self._check_buffer_ids(ids)
        batch = batch_of_parsed_values(dict(data))
        for key, dtype in (
            ("rew", float),
            ("terminated", bool),
            ("truncated", bool),
            ("done", bool),
        ):
            if data.get(key) is not None:
                batch.__dict__[key] = np.asarray(to_numpy(data[key]), dtype=dtype)
        stack = n is None
        if self._meta.is_empty():
            self._set_storage(create_value(batch, self.maxsize, stack=stack))
        else:
            alloc_by_keys_diff(self._meta, batch, self.maxsize, stack=stack)
            self._set_storage(self._meta)

    def _check_buffer_ids(self, ids: np.ndarray) -> None:
        k = len(self._offset)
        bad = (ids < 0) | (ids >= k)
        bad[~bad] |= self._maxsizes[ids[~bad]] == 0
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"buffer_ids[{pos}] = {ids[pos]} is invalid: this buffer has {k} sub-buffer(s), "
                f"valid ids are 0..{k - 1} for sub-buffers of non-zero size",
            )

    def _reserve(
        self,
        ids: np.ndarray,
        rew: np.ndarray,
        done: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, slice | None]:
        """Run the bookkeeping kernel; also return the rows as a slice when they are evenly
        spaced (strided slice writes are much faster than fancy indexing)."""
        n = rew.shape[0]
        flat_rew = rew.reshape(n, -1)
        out_int = np.empty((3, n), dtype=np.int64)
        out_ret = np.empty(flat_rew.shape)
        code = K.jit("add_bookkeeping")(
            ids,
            flat_rew,
            done,
            self._istate,
            self._ep_ret,
            self._offset,
            self._maxsizes,
            out_int,
            out_ret,
        )
        if code < 0:
            self._check_buffer_ids(ids)
        rows = out_int[0]
        span = slice(int(rows[0]), int(rows[-1]) + 1, code) if code > 0 else None
        return rows, out_ret.reshape((n, *self._rew_shape)), out_int[1], out_int[2], span

    def update(self, buffer: "ReplayBuffer") -> np.ndarray:
        """Append all of ``buffer``'s transitions in chronological order (episode statistics are
        untouched) and return the rows written here; empty if there was nothing to copy."""
        if len(buffer) == 0 or self.maxsize == 0:
            return _EMPTY_INT.copy()
        stack_num, buffer.stack_num = buffer.stack_num, 1
        try:
            from_indices = buffer.sample_indices(0)
        finally:
            buffer.stack_num = stack_num
        total = len(from_indices)
        if total == 0:
            return _EMPTY_INT.copy()
        to_indices = (self._insertion_idx + np.arange(total)) % self.maxsize
        kept = slice(max(0, total - self.maxsize), None)  # older rows would be overwritten
        source = gather(buffer._meta, from_indices[kept])
        if not self._save_obs_next:
            source.__dict__.pop("obs_next", None)
        rows = to_indices[kept]
        plan, values = self._validated(source.__dict__, len(rows), None)
        write(plan.specs, values, rows, None)
        if plan.missing:
            fill(plan.missing, rows)
        self._insertion_idx = (self._insertion_idx + total) % self.maxsize
        self._size = min(self._size + total, self.maxsize)
        self.last_index[0] = to_indices[-1]
        return to_indices

    def reset(self, keep_statistics: bool = False) -> None:
        """Forget all stored transitions (storage is kept allocated).

        :param keep_statistics: keep the running episodes' partial return and length (the
            on-policy trainer clears data between updates while episodes go on); their start row
            becomes 0, where their remaining steps will be written.
        """
        for row in (K.INS, K.SIZE, K.LAST, K.EP_START):
            self._istate[row] = 0
        if not keep_statistics:
            self._istate[K.EP_LEN] = 0
            self._ep_ret[:] = 0.0

    # ------------------------------------------------------------------ navigation
    def _nav_total(self) -> int:
        """Modulus applied to incoming indices of prev/next (current length for a plain buffer)."""
        return len(self)

    def _navigate(self, kernel: str, index: Any) -> Any:
        scalar = not isinstance(index, list | np.ndarray)
        arr = np.asarray(index, dtype=np.int64)
        flat = np.ascontiguousarray(arr.reshape(-1))
        done = self._meta.__dict__.get("done")
        if len(self) == 0 or done is None:
            out = np.zeros_like(flat)
        else:
            out = K.jit(kernel)(flat, self._offset, self._nav_total(), to_numpy(done), self._istate)
        return out[0] if scalar else out.reshape(arr.shape)

    def prev(self, index: int | np.ndarray) -> np.ndarray:
        """Row of the previous step of the same episode, or the row itself at an episode start
        (also for the oldest stored transition)."""
        return self._navigate("prev_index", index)

    def next(self, index: int | np.ndarray) -> np.ndarray:
        """Row of the next step of the same episode, or the row itself at an episode end (done)
        or at the most recently written row."""
        return self._navigate("next_index", index)

    def _nstep_sums(
        self, index: np.ndarray, rew: np.ndarray, gamma: float, n_step: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Discounted sums of the rewards ``rew`` along each row's episode, in one kernel call.

        From each row of ``index``, up to ``n_step`` rows are visited, moving on with
        :meth:`next` for as long as it does not stay put.

        :return: ``(reward_sum, discount, last)``: float64 sums of ``gamma ** k * rew`` over the
            rows visited, ``gamma ** k`` for the ``k`` rewards summed, and the last rows visited.
        """
        flat = np.ascontiguousarray(index, dtype=np.int64)
        size = len(flat)
        reward_sum, discount = np.empty(size), np.empty(size)
        last = np.empty(size, dtype=np.int64)
        done = to_numpy(self._meta.__dict__["done"])
        K.jit("nstep_sums")(
            flat,
            self._offset,
            self._nav_total(),
            done,
            self._istate,
            rew,
            float(gamma),
            n_step,
            reward_sum,
            discount,
            last,
        )
        return reward_sum, discount, last

    def unfinished_index(self) -> np.ndarray:
        """Rows of the newest transition of each (sub-)buffer whose episode is still running."""
        size, ins = self._istate[K.SIZE], self._istate[K.INS]
        filled = size > 0
        last = self._offset + (ins - 1) % np.maximum(size, 1)
        done = self._meta.__dict__.get("done")
        if done is None:
            return last[filled]
        return last[filled & ~to_numpy(done)[last].astype(bool)]

    def get_buffer_indices(self, start: int, stop: int) -> np.ndarray:
        """Rows from ``start`` up to (excluding) ``stop`` inside one sub-buffer, wrapping around
        its end when ``stop <= start`` (``stop == start`` gives the whole sub-buffer). Typical
        use: ``get_buffer_indices(episode_start, last_row + 1)``.

        :raises ValueError: if ``start`` is outside the buffer or ``stop`` lies in another
            sub-buffer than ``start`` (``stop`` may equal the sub-buffer's end edge).
        """
        edges = self.subbuffer_edges
        start, stop = int(start), int(stop)
        if not 0 <= start < edges[-1]:
            raise ValueError(f"start={start} is outside the buffer's rows [0, {edges[-1]})")
        sub = int(np.searchsorted(edges, start, side="right")) - 1
        low, high = int(edges[sub]), int(edges[sub + 1])
        if not low < stop <= high:
            raise ValueError(
                f"start and stop must be within the same sub-buffer: start={start} lies in "
                f"[{low}, {high}) but stop={stop} does not lie in ({low}, {high}]",
            )
        if stop > start:
            return np.arange(start, stop)
        return np.concatenate([np.arange(start, high), np.arange(low, stop)])

    # ------------------------------------------------------------------ reading
    def _chronological(self) -> np.ndarray:
        return K.jit("chronological_rows")(self._offset, self._istate)

    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Indices to read: ``batch_size > 0`` random draws with replacement, 0 all stored rows in
        chronological order, ``None`` as many draws as stored rows, negative nothing. With
        ``sample_avail`` and ``stack_num > 1`` only rows with a full frame stack qualify."""
        size = len(self)
        if batch_size is None:
            batch_size = size
        if self.stack_num == 1 or not self._sample_avail:
            if batch_size > 0:
                return self._random_state.randint(0, size, batch_size) if size else _EMPTY_INT
            return self._chronological() if batch_size == 0 else _EMPTY_INT.copy()
        if batch_size < 0:
            return _EMPTY_INT.copy()
        candidates = self._full_stack_rows()
        if batch_size == 0:
            return candidates
        if len(candidates) == 0:
            return _EMPTY_INT.copy()
        return self._random_state.choice(candidates, batch_size)

    def _full_stack_rows(self) -> np.ndarray:
        rows = prev_rows = self._chronological()
        for _ in range(self.stack_num - 2):
            prev_rows = self.prev(prev_rows)
        return rows[prev_rows != self.prev(prev_rows)]

    def sample(self, batch_size: int | None) -> tuple[Batch, np.ndarray]:
        """Draw ``sample_indices(batch_size)`` and return ``(self[indices], indices)``."""
        indices = self.sample_indices(batch_size)
        return self[indices], indices

    def get(
        self,
        index: IndexType,
        key: str,
        default_value: Any = None,
        stack_num: int | None = None,
    ) -> Any:
        """Stored field ``key`` at ``index``, frame-stacked along a new last index axis when
        ``stack_num`` (default: the buffer's) is above 1. A missing key gives ``default_value``
        when one is passed, else raises KeyError."""
        meta = self._meta.__dict__
        if key not in meta:
            if default_value is not None:
                return default_value
            raise KeyError(f"key '{key}' is not stored in this buffer; stored: {list(meta)}")
        stack_num = self.stack_num if stack_num is None else stack_num
        index = _normalize_index(index)
        if stack_num > 1:
            index = self._stack_rows(index, stack_num)
        return gather(meta[key], index)

    def _stack_rows(self, index: Any, stack_num: int) -> np.ndarray:
        """``index`` followed by its ``stack_num - 1`` predecessors, oldest first, on a new axis."""
        chain = [np.asarray(index)]
        for _ in range(stack_num - 1):
            chain.append(np.asarray(self.prev(chain[-1])))
        return np.stack(chain[::-1], axis=-1)

    def __getitem__(self, index: IndexType) -> Batch:
        """Transitions at ``index`` (int, slice, int array or mask) with the reserved keys and
        extra keys; with ``stack_num > 1``, ``obs``, ``obs_next``, ``info`` and ``policy`` are
        frame-stacked while ``act``, ``rew``, the flags and extra keys stay one row per index.
        ``buf[:]`` lists every stored transition in chronological order; other slices select
        rows ``range(len(buf))[index]``."""
        if isinstance(index, slice):
            if index == slice(None):
                return self._rows_to_batch(self.sample_indices(0))
            return self._rows_to_batch(np.arange(len(self))[index])
        return self._rows_to_batch(_normalize_index(index))

    def _rows_to_batch(self, index: Any) -> Batch:
        meta = self._meta.__dict__
        if not meta:
            if np.size(index) == 0:
                return Batch()
            # a KeyError, as in the published library: an IndexError would make numpy treat the
            # buffer as an empty sequence (np.array([buffer]) would lose the buffer)
            raise KeyError(f"{type(self).__name__} holds no data yet: no key 'obs' is stored")
        stacked = self._stack_rows(index, self.stack_num) if self.stack_num > 1 else index
        out: dict[str, Any] = {"obs": gather(meta["obs"], stacked) if "obs" in meta else Batch()}
        for key in _PLAIN_OUTPUT_KEYS:
            if key in meta:
                out[key] = gather(meta[key], index)
        out["obs_next"] = self._obs_next_at(index, stacked)
        for key in _STACKED_EXTRA_KEYS:
            out[key] = gather(meta[key], stacked) if key in meta else Batch()
        for key, value in meta.items():
            if key not in out:
                out[key] = gather(value, index)
        return batch_of_parsed_values(out)

    def _obs_next_at(self, index: Any, stacked: Any = None) -> Any:
        """``self[index].obs_next`` without gathering any other key (e.g. the bootstrap
        observations of n-step returns); subclasses that change what ``__getitem__`` reads
        override this too.

        :param index: normalized row indices.
        :param stacked: ``index`` already frame-stacked, if the caller has it.
        """
        meta = self._meta.__dict__
        if not self._save_obs_next:
            next_index = self.next(index)
            if self.stack_num > 1:
                next_index = self._stack_rows(next_index, self.stack_num)
            return gather(meta["obs"], next_index) if "obs" in meta else Batch()
        if "obs_next" not in meta:
            return Batch()
        if stacked is None:
            stacked = self._stack_rows(index, self.stack_num) if self.stack_num > 1 else index
        return gather(meta["obs_next"], stacked)

    # ------------------------------------------------------------------ misc data operations
    def hasnull(self) -> bool:
        """Whether any stored transition holds a NaN or None."""
        return bool(self[:].hasnull())

    def isnull(self) -> Batch:
        """Per-field null masks over ``self[:]``."""
        return self[:].isnull()

    def dropnull(self) -> None:
        """Remove stored transitions holding a NaN or None, keeping the others in chronological
        order at the start of the storage."""
        order = self._chronological()
        keep = order[~null_rows(self._meta, order)]
        if len(keep) == len(order):
            return
        count = len(keep)
        for spec in self._storage_index.leaves.values():
            spec.array[:count] = spec.array[torch.as_tensor(keep) if spec.is_tensor else keep]
        self._size = count
        self._insertion_idx = count % self.maxsize
        self.last_index[0] = max(count - 1, 0)

    def set_array_at_key(
        self,
        seq: np.ndarray,
        key: str,
        index: IndexType | None = None,
        default_value: float | None = None,
    ) -> None:
        """Write ``seq`` into stored field ``key`` at ``index`` (all rows when None), creating the
        field filled with ``default_value`` when it does not exist yet."""
        self._meta.set_array_at_key(seq, key, index, default_value)
        self._set_storage(self._meta)

    # ------------------------------------------------------------------ files
    def save_hdf5(self, path: str, compression: str | None = None) -> None:
        """Write the whole buffer (data, counters, options, random generator) to an HDF5 file.

        Numeric data and the buffer's own metadata are stored as plain HDF5 datasets and
        attributes with checksums, and object arrays of plain Python values (strings, None,
        numbers) as JSON texts; other objects and callables are pickled, and loading such a file
        then needs ``allow_pickle=True``. A buffer that is not full is written with its stored
        transitions only (a run's million-slot buffer holding a tenth of that takes a tenth of
        the space); :meth:`load_hdf5` puts them back in their rows, so the loaded buffer samples
        and adds as this one would.

        :param path: file to create (overwritten if it exists).
        :param compression: HDF5 filter for the data arrays, e.g. ``"gzip"`` or ``"lzf"``.
        """
        save_buffer(self, path, compression)

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
        return load_buffer(cls, path, device, allow_pickle)

    @classmethod
    def from_data(
        cls,
        obs: DataColumn,
        act: DataColumn,
        rew: DataColumn,
        terminated: DataColumn,
        truncated: DataColumn,
        done: DataColumn,
        obs_next: DataColumn,
    ) -> Self:
        """A full buffer holding the given columns (arrays or h5py datasets, read into memory).

        :raises ValueError: if the columns differ in length.
        """
        given = {
            "obs": obs,
            "act": act,
            "rew": rew,
            "terminated": terminated,
            "truncated": truncated,
            "done": done,
            "obs_next": obs_next,
        }
        columns: dict[str, dict | Batch | np.ndarray | torch.Tensor] = {
            name: col
            if isinstance(col, dict | Batch | np.ndarray | torch.Tensor)
            else np.asarray(col)
            for name, col in given.items()
        }
        lengths = {name: len(col) for name, col in columns.items()}
        if len(set(lengths.values())) > 1:
            raise ValueError(f"from_data needs columns of equal length, got {lengths}")
        size = lengths["obs"]
        buf = cls(size)
        if size == 0:
            return buf
        for flag in ("terminated", "truncated", "done"):
            columns[flag] = as_flags(columns[flag], flag)
        buf.set_batch(Batch(columns))
        buf._size = size
        buf.last_index[0] = size - 1
        return buf


def as_buffer_ids(buffer_ids: np.ndarray | list[int]) -> np.ndarray:
    """``buffer_ids`` as a 1-d int64 array; integers of any dtype are accepted.

    :raises ValueError: for non-integer ids (floats would silently be truncated) or another shape.
    """
    ids = np.asarray(buffer_ids)
    if ids.dtype != np.int64:
        if ids.dtype.kind not in "iu" and ids.size:
            raise ValueError(
                f"buffer_ids must be integers, got dtype {ids.dtype} "
                f"({ids.reshape(-1)[:4].tolist()}); pass sub-buffer indices such as "
                f"np.arange(env_num)",
            )
        ids = ids.astype(np.int64)
    if ids.ndim != 1:
        raise ValueError(f"buffer_ids must be one-dimensional, got shape {ids.shape}")
    return ids


def _normalize_index(index: Any) -> Any:
    """Turn lists, tensors and boolean masks into int64 arrays; ints pass through."""
    if isinstance(index, torch.Tensor):
        index = index.cpu().numpy()
    if isinstance(index, list | tuple):
        index = np.asarray(index)
    if isinstance(index, np.ndarray):
        if index.dtype == bool:
            return np.flatnonzero(index)
        if index.dtype != np.int64:
            return index.astype(np.int64)
    return index
