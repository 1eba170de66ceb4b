"""Converters between numpy arrays, torch tensors, Batches and HDF5 groups.

The HDF5 layout matches the published library, so files written by either can be read by both:
a dict or Batch is a group (a Batch's group carries the attribute ``__data_type__ = "Batch"``),
Python ints and floats are attributes of their group, arrays and tensors are datasets tagged
``"ndarray"`` / ``"Tensor"``, and anything HDF5 cannot store (object arrays, strings, arbitrary
objects) is pickled into a byte dataset tagged ``"pickled_ndarray"`` or with its class name.
"""

import pickle
from copy import deepcopy
from numbers import Number
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import torch

from tianshou.data.batch import _NUMERIC_KINDS, Batch, _parse_value

if TYPE_CHECKING:
    import h5py

_DATA_TYPE = "__data_type__"
_NUMBER_TYPES = (int, float, complex, np.number, np.bool_, Number)


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
    if isinstance(x, _NUMBER_TYPES):
        return np.asanyarray(x)
    if x is None:
        return np.array(None, dtype=object)
    if isinstance(x, dict | Batch):
        batch = Batch(x) if isinstance(x, dict) else deepcopy(x)
        Batch.to_numpy_(batch)
        return batch
    if isinstance(x, list | tuple):
        return to_numpy(_parse_value(x))
    return np.asanyarray(x)


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

    Batches and dicts are deep-copied and converted leaf by leaf; lists/tuples are parsed first.

    :raises TypeError: if ``x`` (e.g. ``None`` or an object array) has no tensor form.
    """
    if isinstance(x, np.ndarray) and x.dtype.kind in _NUMERIC_KINDS:
        return torch.from_numpy(x).to(device=device, dtype=dtype)
    if isinstance(x, torch.Tensor):
        return x.to(device=device, dtype=dtype)
    if isinstance(x, _NUMBER_TYPES):
        return to_torch(np.asanyarray(x), dtype, device)
    if isinstance(x, dict | Batch):
        batch = Batch(x, copy=True) if isinstance(x, dict) else deepcopy(x)
        Batch.to_torch_(batch, dtype, device)
        return batch
    if isinstance(x, list | tuple):
        return to_torch(_parse_value(x), dtype, device)
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


def to_hdf5(x: dict[str, Any], y: "h5py.Group", compression: str | None = None) -> None:
    """Write the dict ``x`` (values: Batches, dicts, arrays, tensors, numbers, objects) into ``y``.

    :param x: the data; nested dicts and Batches become sub-groups.
    :param y: an open HDF5 group (or file) to write into.
    :param compression: HDF5 filter for array datasets, e.g. ``"gzip"`` or ``"lzf"``.
    """
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
            if value.dtype.kind in _NUMERIC_KINDS:
                _write_array(y, key, value, compression)
                y[key].attrs[_DATA_TYPE] = "ndarray"
            else:
                _write_pickled(y, key, value, compression, "pickled_ndarray")
        elif isinstance(value, int | float):
            y.attrs[key] = value
        else:
            _write_pickled(y, key, value, compression, type(value).__name__)


def from_hdf5(x: "h5py.Group", device: str | None = None) -> Any:
    """Read back what :func:`to_hdf5` wrote: a dict, or a Batch for groups tagged as one.

    :param x: an open HDF5 group (or file).
    :param device: device for tensor datasets (default: CPU).
    :raises ValueError: if the group holds data not written by :func:`to_hdf5`.
    """
    import h5py

    if isinstance(x, h5py.Dataset):
        return _read_dataset(x, device)
    result: dict[str, Any] = dict(x.attrs.items())
    data_type = result.pop(_DATA_TYPE, None)
    for key, value in x.items():
        result[key] = from_hdf5(value, device)
    if data_type not in (None, "Batch"):
        raise ValueError(f"HDF5 group {x.name!r} has unknown {_DATA_TYPE} {data_type!r}")
    return Batch(result) if data_type == "Batch" else result


def _write_array(group: "h5py.Group", key: str, array: np.ndarray, compression: str | None) -> None:
    # HDF5 cannot apply filters to scalar datasets
    group.create_dataset(key, data=array, compression=compression if array.ndim else None)


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
    group.create_dataset(key, data=payload, compression=compression)
    group[key].attrs[_DATA_TYPE] = tag


def _read_dataset(dataset: "h5py.Dataset", device: str | None) -> Any:
    data_type = dataset.attrs.get(_DATA_TYPE)
    if data_type is None:
        raise ValueError(
            f"HDF5 dataset {dataset.name!r} has no {_DATA_TYPE} attribute; it was not written "
            "by tianshou's to_hdf5"
        )
    if data_type == "ndarray":
        return dataset[()]
    if data_type == "Tensor":
        return torch.as_tensor(dataset[()], device=device)
    try:
        return pickle.loads(np.asarray(dataset[()]).tobytes())
    except Exception as error:
        raise ValueError(
            f"HDF5 dataset {dataset.name!r} (type {data_type!r}) could not be unpickled; the "
            "file is corrupt or was not written by tianshou's to_hdf5"
        ) from error
