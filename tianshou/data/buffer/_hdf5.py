"""HDF5 files of replay buffers, read without running code from the file unless asked to.

A buffer file holds the buffer's state (its ``__getstate__`` dict) in plain HDF5: the storage
Batch through :func:`~tianshou.data.utils.converter.to_hdf5`, numbers, strings and flags as
attributes, counters and offsets as int64 datasets, the random generator as its Mersenne-Twister
key array plus position, a priority tree as its leaf values, and the sub-buffers of a manager as
one group each. The root carries the format version and the name of the buffer class, checked on
load. Datasets are written with HDF5's fletcher32 checksum and the file with object headers that
carry checksums, so flipped bytes fail to load instead of returning wrong data.

A buffer that is not full is written with its stored rows only (the first ``size`` rows of each
sub-buffer, which is where a buffer that has not wrapped around keeps its transitions) and the
root flag ``__stored_rows_only__``; loading puts them back in their rows of a storage of the
full size, the other rows zero (None in object arrays) as in a new buffer. A training buffer of
a million slots holding a hundred thousand transitions thus takes a tenth of the space and time.

Only values HDF5 has no type for are pickled: object arrays in the storage holding more than
plain Python scalars (those are JSON texts), and callables such as HER's ``compute_reward_fn``.
Loading those runs code chosen by whoever wrote the file, so it needs ``allow_pickle=True``.
Files written by the published library (and by earlier versions of this one) pickle the random
generator, so they load through the same opt-in.

This module is a format on top of the buffer's state (:mod:`._state`): it writes what
``__getstate__`` returns and restores through ``__setstate__``, which also runs the consistency
check of every loader. It knows buffer classes only through that state protocol, so it imports
none of them.
"""

import contextlib
import os
import uuid
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from tianshou.data.batch import Batch
from tianshou.data.batch_ops import create_value
from tianshou.data.buffer._state import (
    BufferFileError,
    BufferStateMixin,
    MalformedBufferError,
    stored_rows,
)
from tianshou.data.utils.converter import _attribute_value, from_hdf5, to_hdf5
from tianshou.data.utils.segtree import SegmentTree

if TYPE_CHECKING:
    import h5py

FORMAT_VERSION = 3
"""Version of the layout written by :func:`save_buffer` (files without it use the published one).

2 added the class name and typed groups; 3 the storage of the stored rows only."""

TBuffer = TypeVar("TBuffer", bound=BufferStateMixin)

_FORMAT = "__buffer_format__"
_CLASS = "__buffer_class__"
_TYPE = "__data_type__"
_STORED_ROWS_ONLY = "__stored_rows_only__"
_SCALARS = (bool, int, float, str, np.bool_, np.integer, np.floating)
_MT_KEYS = 624  # length of the Mersenne-Twister state of np.random.RandomState
_LIBVER = ("v108", "v110")  # object headers with checksums, readable by HDF5 >= 1.10


# ---------------------------------------------------------------------------------- writing
def save_buffer(buffer: BufferStateMixin, path: str, compression: str | None) -> None:
    """Write ``buffer``'s state to a new HDF5 file at ``path`` (see the module docstring).

    The file is written beside ``path`` under a temporary name and then renamed to ``path``, so
    a process killed or an error raised while writing leaves any previous file at ``path``
    intact (and a failed write removes its temporary file).
    """
    import h5py

    tmp_path = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    config = h5py.get_config()
    track_order, config.track_order = config.track_order, True  # keep the key order on load
    try:
        with h5py.File(tmp_path, "w", libver=_LIBVER) as f:
            f.attrs[_FORMAT] = FORMAT_VERSION
            f.attrs[_CLASS] = type(buffer).__qualname__
            state = buffer.__getstate__()
            rows = _rows_worth_writing_alone(state)
            if rows is not None:
                f.attrs[_STORED_ROWS_ONLY] = True
                state["_meta"] = state["_meta"][rows]
            _write_state(f, state, compression)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp_path)
        raise
    finally:
        config.track_order = track_order


def _rows_worth_writing_alone(state: dict[str, Any]) -> np.ndarray | None:
    """The stored rows of the buffer's storage (:func:`stored_rows`), or None when writing them
    alone would save nothing (a full buffer, or nothing allocated yet)."""
    if state["_meta"].is_empty():
        return None
    rows = stored_rows(state)
    return None if len(rows) == int(state["maxsize"]) else rows


def _write_state(group: "h5py.Group", state: dict[str, Any], compression: str | None) -> None:
    for key, value in state.items():
        _write_value(group, key, value, compression)


def _write_value(group: "h5py.Group", key: str, value: Any, compression: str | None) -> None:
    import h5py

    if value is None:
        group.attrs[key] = h5py.Empty("i1")
    elif isinstance(value, _SCALARS):
        group.attrs[key] = value
    elif isinstance(value, np.random.RandomState):
        _, keys, pos, has_gauss, cached_gaussian = value.get_state()
        sub = _tagged_group(group, key, "RandomState")
        to_hdf5({"keys": keys}, sub, compression)
        sub.attrs.update(pos=pos, has_gauss=has_gauss, cached_gaussian=cached_gaussian)
    elif isinstance(value, SegmentTree):
        sub = _tagged_group(group, key, "SegmentTree")
        to_hdf5({"leaves": value[np.arange(len(value))]}, sub, compression)
    elif isinstance(value, tuple) and all(isinstance(v, int | np.integer) for v in value):
        to_hdf5({key: np.asarray(value, dtype=np.int64).reshape(-1)}, group, compression)
        group[key].attrs[_TYPE] = "tuple"
    elif isinstance(value, dict):
        _write_state(_tagged_group(group, key, "dict"), value, compression)
    elif _is_buffer_array(value):
        sub = _tagged_group(group, key, "buffers")
        for i, buf in enumerate(value):
            entry = sub.create_group(str(i))
            entry.attrs[_CLASS] = type(buf).__qualname__
            _write_state(entry, buf.__getstate__(), compression)
    else:  # Batches, arrays, tensors; anything else is pickled by to_hdf5
        to_hdf5({key: value}, group, compression)


def _tagged_group(group: "h5py.Group", key: str, tag: str) -> "h5py.Group":
    sub = group.create_group(key)
    sub.attrs[_TYPE] = tag
    return sub


def _is_buffer_array(value: Any) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.dtype == object
        and value.ndim == 1
        and all(isinstance(v, BufferStateMixin) for v in value)
    )


# ---------------------------------------------------------------------------------- reading
def load_buffer(
    cls: type[TBuffer],
    path: str,
    device: str | None,
    allow_pickle: bool,
) -> TBuffer:
    """Read a buffer of class ``cls`` from ``path``; restoring it checks its consistency.

    :raises BufferFileError: naming ``path`` if the file cannot be opened, is corrupted, holds
        another buffer class, needs unpickling while ``allow_pickle`` is False, or holds
        inconsistent counters or storage.
    """
    import h5py

    try:
        f = h5py.File(path, "r")
    except OSError as err:
        raise BufferFileError(
            f"cannot open {path!r} as an HDF5 replay buffer file (not an HDF5 file, truncated, "
            f"or unreadable): {err}",
        ) from err
    try:
        with f:
            if _FORMAT in f.attrs:
                _check_format(f, cls)
                state = _read_state(f, device, allow_pickle)
                if f.attrs.get(_STORED_ROWS_ONLY, False):
                    state["_meta"] = _full_storage(state)
            else:
                _check_published_layout(f, cls)
                state = from_hdf5(f, device=device, allow_pickle=allow_pickle)
        buf = cls.__new__(cls)
        buf.__setstate__(state)
    except BufferFileError:
        raise
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError) as err:
        raise BufferFileError(f"cannot load a {cls.__name__} from {path!r}: {err}") from err
    return buf


def _check_format(f: "h5py.File", cls: type) -> None:
    version = f.attrs[_FORMAT]
    if not isinstance(version, np.integer) or not 1 <= version <= FORMAT_VERSION:
        raise MalformedBufferError(
            f"unknown buffer file format {version} (this version reads up to "
            f"{FORMAT_VERSION}); it was written by a newer tianshou or is corrupted",
        )
    stored = f.attrs.get(_CLASS)
    if stored != cls.__qualname__:
        raise MalformedBufferError(
            f"the file holds a {stored}, not a {cls.__qualname__}; load it with {stored}.load_hdf5",
        )


def _full_storage(state: dict[str, Any]) -> Batch:
    """The storage of all ``maxsize`` rows, with the rows written by :func:`save_buffer` (the
    stored ones only) put back where they were."""
    meta = state.get("_meta")
    if not isinstance(meta, Batch):
        raise MalformedBufferError("missing or invalid buffer fields: ['_meta']")
    rows = stored_rows(state)
    if meta.is_empty():
        return meta
    if len(meta) != len(rows):
        raise MalformedBufferError(
            f"the file stores {len(meta)} rows, but its counters say {len(rows)} transitions",
        )
    storage = create_value(meta, int(state["maxsize"]), stack=False)
    storage[rows] = meta
    return storage


def _check_published_layout(f: "h5py.File", cls: type[BufferStateMixin]) -> None:
    """Tell buffer kinds apart in files without a class name (published layout) by the fields
    only some kinds write (``_state_markers``: a manager's ``buffers``, a prioritized buffer's
    ``weight``)."""
    own = cls._state_markers()
    known = own.union(*(kind._state_markers() for kind in _buffer_classes()))
    for key in sorted(known):
        if (key in f) != (key in own):
            held = "a" if key in f else "no"
            raise MalformedBufferError(
                f"the file (published layout) holds {held} '{key}' field, so it was not written "
                f"by a {cls.__qualname__}; load it with the buffer class that saved it",
            )


def _read_state(group: "h5py.Group", device: str | None, allow_pickle: bool) -> dict[str, Any]:
    state = {
        key: _attribute_value(value)
        for key, value in group.attrs.items()
        if key not in (_FORMAT, _CLASS, _TYPE, _STORED_ROWS_ONLY)
    }
    for key, node in group.items():
        state[key] = _read_value(node, device, allow_pickle)
    return state


def _read_value(node: Any, device: str | None, allow_pickle: bool) -> Any:
    tag = node.attrs.get(_TYPE)
    if tag == "dict":
        return _read_state(node, device, allow_pickle)
    if tag == "tuple":
        return tuple(int(v) for v in _read_array(node))
    if tag == "RandomState":
        return _read_random_state(node)
    if tag == "SegmentTree":
        return _read_tree(node)
    if tag == "buffers":
        return _read_buffers(node, device, allow_pickle)
    return from_hdf5(node, device=device, allow_pickle=allow_pickle)


def _read_array(dataset: Any) -> np.ndarray:
    if not hasattr(dataset, "dtype"):
        raise MalformedBufferError(f"{dataset.name!r} should be a dataset")
    try:
        return np.asarray(dataset[()])
    except OSError as err:
        raise OSError(
            f"cannot read {dataset.name!r} (checksum mismatch or truncated data: the file is "
            f"corrupted): {err}",
        ) from err


def _read_random_state(group: Any) -> np.random.RandomState:
    keys = _read_array(group["keys"])
    pos, has_gauss = int(group.attrs["pos"]), int(group.attrs["has_gauss"])
    if keys.shape != (_MT_KEYS,) or keys.dtype != np.uint32 or not 0 <= pos <= _MT_KEYS:
        raise MalformedBufferError(
            f"invalid random generator state in {group.name!r}: keys of shape {keys.shape} and "
            f"dtype {keys.dtype}, position {pos} (expected {_MT_KEYS} uint32 keys, position in "
            f"[0, {_MT_KEYS}])",
        )
    rng = np.random.RandomState()
    rng.set_state(("MT19937", keys, pos, has_gauss, float(group.attrs["cached_gaussian"])))
    return rng


def _read_tree(group: Any) -> SegmentTree:
    leaves = _read_array(group["leaves"]).astype(np.float64, copy=False)
    if leaves.ndim != 1 or not np.all(np.isfinite(leaves) & (leaves >= 0.0)):
        raise MalformedBufferError(
            f"invalid priorities in {group.name!r}: they must be a 1-d array of finite, "
            f"non-negative values",
        )
    tree = SegmentTree(len(leaves))
    tree._write(np.arange(len(leaves), dtype=np.int64), leaves)
    return tree


def _read_buffers(group: Any, device: str | None, allow_pickle: bool) -> np.ndarray:
    names = sorted(group.keys(), key=lambda name: int(name) if name.isdigit() else -1)
    if [str(i) for i in range(len(names))] != names:
        raise MalformedBufferError(f"sub-buffers in {group.name!r} must be named 0..n-1")
    buffers = np.empty(len(names), dtype=object)
    for i, name in enumerate(names):
        entry = group[name]
        sub_cls = _known_buffer_class(str(entry.attrs.get(_CLASS)))
        buf = sub_cls.__new__(sub_cls)
        buf.__setstate__(_read_state(entry, device, allow_pickle))
        buffers[i] = buf
    return buffers


def _buffer_classes() -> list[type[BufferStateMixin]]:
    """Every buffer class the program has defined so far (the subclasses of the state mixin)."""
    found: list[type[BufferStateMixin]] = []
    todo = list(BufferStateMixin.__subclasses__())
    while todo:
        kind = todo.pop()
        if kind not in found:
            found.append(kind)
            todo.extend(kind.__subclasses__())
    return found


def _known_buffer_class(name: str) -> type[BufferStateMixin]:
    """The defined buffer class called ``name``; nothing is imported on the file's behalf, so
    only classes the program already defined can be named."""
    for kind in _buffer_classes():
        if kind.__qualname__ == name:
            return kind
    raise MalformedBufferError(
        f"the file names the sub-buffer class {name!r}, which is not a ReplayBuffer subclass "
        f"defined in this program; import the module defining it before loading",
    )
