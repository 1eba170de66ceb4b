"""Converters between numpy arrays, torch tensors, Batches and HDF5 groups.

The HDF5 layout follows the published library's, so either can read the other's numeric data:
a dict or Batch is a group (a Batch's group carries the attribute ``__data_type__ = "Batch"``),
Python ints, floats and strings are attributes of their group (``None`` an empty attribute),
arrays and tensors are datasets tagged ``"ndarray"`` / ``"Tensor"``, and an object array holding
only ``None`` (a buffer's placeholder) is stored as its shape, tagged ``"none_ndarray"``. An object
array of plain Python scalars (``None``, bools, ints, floats, strings: string labels in ``info``,
say) is stored as one JSON text per element, tagged ``"json_ndarray"``, which reads back exactly
and runs no code. Anything else HDF5 cannot store (other object arrays, arbitrary objects) is
pickled into a byte dataset tagged ``"pickled_ndarray"`` or with its class name. Reading a
pickle back runs code chosen by whoever wrote the file, so :func:`from_hdf5` only does it when
the caller passes ``allow_pickle=True``. Array datasets carry a fletcher32 checksum, so
corrupted data is reported instead of returned.
"""

import json
import pickle
from copy import deepcopy
from typing import TYPE_CHECKING, Any, TypeAlias, Union, overload

import numpy as np
import torch

from tianshou.data._batch_values import NUMBER_TYPES, NUMERIC_KINDS, parse_leaf
from tianshou.data.batch import Batch

if TYPE_CHECKING:
    import h5py

_DATA_TYPE = "__data_type__"
_PLAIN_DATASETS = ("ndarray", "Tensor", "none_ndarray", "json_ndarray")
_JSON_SCALAR_TYPES = (type(None), bool, int, float, str)
"""Element types an object array may hold to be stored as JSON texts: each reads back as itself."""

Hdf5ConvertibleValues: TypeAlias = Union[
    int, float, str, Batch, np.ndarray, torch.Tensor, object, "Hdf5ConvertibleType", None
]
"""A value :func:`to_hdf5` can write (anything else than the named types is pickled)."""
Hdf5ConvertibleType: TypeAlias = dict[str, Hdf5ConvertibleValues]
"""The dict :func:`to_hdf5` writes and :func:`from_hdf5` reads back."""


@overload
def to_numpy(x: dict | Batch) -> Batch: ...


@overload
def to_numpy(x: torch.Tensor | np.ndarray | float | None) -> np.ndarray: ...


@overload
def to_numpy(x: Any) -> Batch | np.ndarray: ...


def to_numpy(x: Any) -> Batch | np.ndarray:
    """Return ``x`` without torch tensors: tensors become arrays, Batches/dicts are copied.

    Numbers and ``None`` become 0-d arrays; lists/tuples are parsed as a Batch value would be.
    """
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, NUMBER_TYPES):
        return np.asanyarray(x)
    if x is None:
        return np.array(None, dtype=object)
    if isinstance(x, dict | Batch):
        batch = Batch(x) if isinstance(x, dict) else deepcopy(x)
        Batch.to_numpy_(batch)
        return batch
    if isinstance(x, list | tuple):
        return to_numpy(_parse_sequence(x))
    return np.asanyarray(x)


def _parse_sequence(seq: list | tuple) -> Any:
    """Parse a list/tuple as a Batch value: rows of dicts/Batches are stacked into a Batch."""
    if seq and all(isinstance(element, dict | Batch) for element in seq):
        return Batch(seq)
    return parse_leaf(seq)


@overload
def to_torch(
    x: dict | Batch, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
) -> Batch: ...


@overload
def to_torch(
    x: torch.Tensor | np.ndarray | float,
    dtype: torch.dtype | None = None,
    device: str | int | torch.device = "cpu",
) -> torch.Tensor: ...


@overload
def to_torch(
    x: Any, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
) -> Batch | torch.Tensor: ...


def to_torch(
    x: Any, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
) -> Batch | torch.Tensor:
    """Return ``x`` as tensors of ``dtype`` (None: keep) on ``device``.

    Batches and dicts are deep-copied and converted leaf by leaf (see
    :meth:`~tianshou.data.Batch.to_torch_`: their scalar leaves keep their own dtype);
    lists/tuples are parsed first. A number or array given alone is cast to ``dtype``.

    :raises TypeError: if ``x`` (e.g. ``None`` or an object array) has no tensor form.
    """
    if isinstance(x, np.ndarray) and x.dtype.kind in NUMERIC_KINDS:
        return torch.from_numpy(x).to(device=device, dtype=dtype)
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype)
    if isinstance(x, NUMBER_TYPES):
        return to_torch(np.asanyarray(x), dtype, device)
    if isinstance(x, dict | Batch):
        batch = Batch(x, copy=True) if isinstance(x, dict) else deepcopy(x)
        Batch.to_torch_(batch, dtype, device)
        return batch
    if isinstance(x, list | tuple):
        return to_torch(_parse_sequence(x), dtype, device)
    described = f"an array of dtype {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__
    raise TypeError(
        f"cannot convert {described} to a torch tensor; expected a numeric array, a number, a "
        "tensor, a Batch/dict or a list of those"
    )


@overload
def to_torch_as(x: dict | Batch, y: torch.Tensor) -> Batch: ...


@overload
def to_torch_as(x: torch.Tensor | np.ndarray | float, y: torch.Tensor) -> torch.Tensor: ...


@overload
def to_torch_as(x: Any, y: torch.Tensor) -> Batch | torch.Tensor: ...


def to_torch_as(x: Any, y: torch.Tensor) -> Batch | torch.Tensor:
    """Convert ``x`` to tensors with ``y``'s dtype and device."""
    if not isinstance(y, torch.Tensor):
        raise TypeError(f"to_torch_as needs a tensor as reference, got {type(y).__name__}")
    return to_torch(x, dtype=y.dtype, device=y.device)


def to_hdf5(x: Hdf5ConvertibleType, y: "h5py.Group", compression: str | None = None) -> None:
    """Write the dict ``x`` (values: Batches, dicts, arrays, tensors, numbers, objects) into ``y``.

    Array datasets carry HDF5's fletcher32 checksum, so a corrupted file fails to load instead of
    returning flipped values (0-d and empty arrays cannot be filtered and are stored plainly).
    Strings, numbers and ``None`` become attributes, object arrays of such scalars JSON texts;
    only values HDF5 has no type for (other object arrays, arbitrary objects) are pickled, and
    reading those back needs ``from_hdf5(..., allow_pickle=True)``.

    :param x: the data; nested dicts and Batches become sub-groups.
    :param y: an open HDF5 group (or file) to write into.
    :param compression: HDF5 filter for array datasets, e.g. ``"gzip"`` or ``"lzf"``.
    :raises NotImplementedError: for a value that is neither an HDF5 type nor picklable.
    """
    import h5py

    for key, value in x.items():
        if isinstance(value, Batch | dict):
            group = y.create_group(key)
            if isinstance(value, Batch):
                group.attrs[_DATA_TYPE] = "Batch"
                value = value.__getstate__()
            to_hdf5(value, group, compression=compression)
        elif isinstance(value, torch.Tensor):
            _write_array(y, key, value.detach().cpu().numpy(), compression)
            y[key].attrs[_DATA_TYPE] = "Tensor"
        elif isinstance(value, np.ndarray):
            if value.dtype.kind in NUMERIC_KINDS:
                _write_array(y, key, value, compression)
                y[key].attrs[_DATA_TYPE] = "ndarray"
            elif value.dtype == object and all(v is None for v in value.flat):
                # the placeholder buffers allocate for object fields: its shape says it all
                _write_array(y, key, np.asarray(value.shape, dtype=np.int64), None)
                y[key].attrs[_DATA_TYPE] = "none_ndarray"
            elif value.dtype == object and all(type(v) in _JSON_SCALAR_TYPES for v in value.flat):
                _write_json_array(y, key, value)
            else:
                _write_pickled(y, key, value, compression, "pickled_ndarray")
        elif isinstance(value, int | float | str):
            y.attrs[key] = value
        elif value is None:
            y.attrs[key] = h5py.Empty("i1")
        else:
            _write_pickled(y, key, value, compression, type(value).__name__)


def from_hdf5(x: "h5py.Group", device: str | None = None, allow_pickle: bool = False) -> Any:
    """Read back what :func:`to_hdf5` wrote: a dict, or a Batch for groups tagged as one.

    :param x: an open HDF5 group (or file).
    :param device: device for tensor datasets (default: CPU).
    :param allow_pickle: unpickle datasets holding pickled objects. Unpickling runs code chosen
        by whoever wrote the file, so it is refused by default (as ``numpy.load`` does); pass
        True only for files you trust.
    :raises ValueError: if the group holds data not written by :func:`to_hdf5`, or a pickled
        object while ``allow_pickle`` is False.
    :raises OSError: if a dataset cannot be read (a checksum mismatch: the file is corrupted).
    """
    import h5py

    if isinstance(x, h5py.Dataset):
        return _read_dataset(x, device, allow_pickle)
    result = {key: _attribute_value(value) for key, value in x.attrs.items()}
    data_type = result.pop(_DATA_TYPE, None)
    for key, value in x.items():
        result[key] = from_hdf5(value, device, allow_pickle)
    if data_type not in (None, "Batch"):
        raise ValueError(f"HDF5 group {x.name!r} has unknown {_DATA_TYPE} {data_type!r}")
    return Batch(result) if data_type == "Batch" else result


def _attribute_value(value: Any) -> Any:
    """An attribute as :func:`to_hdf5` got it: Python scalars, ``None`` for an empty one."""
    import h5py

    if isinstance(value, h5py.Empty):
        return None
    return value.item() if isinstance(value, np.generic) else value


def _write_array(group: "h5py.Group", key: str, array: np.ndarray, compression: str | None) -> None:
    # HDF5 filters (compression, checksum) need chunked storage, which 0-d and empty arrays lack
    filtered = array.size > 0 and array.ndim > 0
    group.create_dataset(
        key,
        data=array,
        compression=compression if filtered else None,
        fletcher32=filtered,
    )


def _write_json_array(group: "h5py.Group", key: str, array: np.ndarray) -> None:
    import h5py

    texts = [json.dumps(v) for v in array.flat]
    data = np.array(texts, dtype=h5py.string_dtype()).reshape(array.shape)
    # HDF5 filters (checksum, compression) do not apply to variable-length strings; a corrupted
    # text fails to parse instead
    group.create_dataset(key, data=data)
    group[key].attrs[_DATA_TYPE] = "json_ndarray"


def _read_json_array(dataset: "h5py.Dataset", data: Any) -> np.ndarray:
    texts = np.asarray(data, dtype=object)
    result = np.empty(texts.shape, dtype=object)
    try:
        for index, text in np.ndenumerate(texts):
            value = json.loads(text.decode() if isinstance(text, bytes) else text)
            if type(value) not in _JSON_SCALAR_TYPES:
                raise ValueError(f"element {index} is a {type(value).__name__}, not a scalar")
            result[index] = value
    except ValueError as error:  # json.JSONDecodeError is a ValueError
        raise ValueError(
            f"HDF5 dataset {dataset.name!r} (type 'json_ndarray') is corrupt: {error}"
        ) from error
    return result


def _write_pickled(
    group: "h5py.Group", key: str, value: Any, compression: str | None, tag: str
) -> None:
    try:
        payload = np.frombuffer(pickle.dumps(value), dtype=np.byte)
    except Exception as error:
        raise NotImplementedError(
            f"cannot write key {key!r} to HDF5: {type(value).__name__} is neither an HDF5 type "
            "nor picklable"
        ) from error
    _write_array(group, key, payload, compression)
    group[key].attrs[_DATA_TYPE] = tag


def _read_dataset(dataset: "h5py.Dataset", device: str | None, allow_pickle: bool) -> Any:
    data_type = dataset.attrs.get(_DATA_TYPE)
    if data_type is None:
        raise ValueError(
            f"HDF5 dataset {dataset.name!r} has no {_DATA_TYPE} attribute; it was not written "
            "by tianshou's to_hdf5"
        )
    if data_type not in _PLAIN_DATASETS and not allow_pickle:
        raise ValueError(
            f"HDF5 dataset {dataset.name!r} holds a pickled object (type {data_type!r}); "
            "unpickling can run arbitrary code from the file, so it is refused by default. "
            "Pass allow_pickle=True only if you trust the file"
        )
    try:
        data = dataset[()]
    except OSError as error:
        raise OSError(
            f"cannot read HDF5 dataset {dataset.name!r} (checksum mismatch or truncated data: "
            f"the file is corrupted): {error}"
        ) from error
    if data_type == "ndarray":
        return data
    if data_type == "Tensor":
        return torch.as_tensor(data, device=device)
    if data_type == "none_ndarray":
        return np.full(tuple(int(n) for n in data), None, dtype=object)
    if data_type == "json_ndarray":
        return _read_json_array(dataset, data)
    try:
        return pickle.loads(np.asarray(data).tobytes())
    except Exception as error:
        raise ValueError(
            f"HDF5 dataset {dataset.name!r} (type {data_type!r}) could not be unpickled; the "
            "file is corrupt or was not written by tianshou's to_hdf5"
        ) from error
