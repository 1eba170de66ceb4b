"""Leaf values of a Batch: which values a Batch keeps as they are, and what it makes of the rest.

A Batch stores numeric numpy arrays (dtype kinds bool, int, uint, float, complex) and torch
tensors unchanged; numbers become 0-d arrays, sequences become arrays (``object`` dtype unless
bool or numeric), sequences of equally shaped tensors become one stacked tensor. Dicts and
sequences of dicts, which become (stacked) sub-Batches, are handled by :mod:`tianshou.data.batch`
before it hands the remaining values to :func:`parse_leaf`.

This module knows nothing of the Batch class, so that :mod:`tianshou.data.batch`,
:mod:`tianshou.data.batch_ops` and :mod:`tianshou.data.utils.converter` can all build on it.
"""

from numbers import Number

import numpy as np
import torch

NUMERIC_KINDS = frozenset("biufc")
"""dtype kinds a Batch keeps as they are; every other dtype is stored as an ``object`` array."""

# concrete types first: isinstance tries them in order and the Number ABC check is slow
NUMBER_TYPES = (int, float, complex, np.number, np.bool_, Number)
"""Python and numpy scalar number types (``bool`` included)."""


def is_number(value: object) -> bool:
    """Whether ``value`` is a Python or numpy scalar number (``bool`` included)."""
    return isinstance(value, NUMBER_TYPES)


def parse_leaf(value: object) -> object:
    """Convert a value that is neither a dict, a Batch nor a sequence of them into a Batch leaf.

    Numeric arrays, tensors and ``None`` are returned as they are; numbers become 0-d arrays;
    lists/tuples of tensors are stacked; anything else goes through
    :func:`to_array_with_correct_type`.
    """
    if isinstance(value, np.ndarray):
        if value.dtype.kind in NUMERIC_KINDS:
            return value
        return to_array_with_correct_type(value)
    if value is None or isinstance(value, torch.Tensor):
        return value
    if is_number(value):
        return np.asanyarray(value)
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(element, torch.Tensor) for element in value)
    ):
        return _stack_tensors(value)
    return to_array_with_correct_type(value)


def _stack_tensors(tensors: list[torch.Tensor] | tuple[torch.Tensor, ...]) -> torch.Tensor:
    try:
        return torch.stack(list(tensors))
    except RuntimeError as error:
        raise TypeError(
            "Batch can only store a list of tensors that torch.stack accepts (same shape, "
            f"dtype and device); stacking failed: {error}"
        ) from error


def to_array_with_correct_type(obj: object) -> object:
    """Turn ``obj`` into an array whose dtype is bool, numeric or ``object``.

    Ragged sequences (elements of different lengths) become 1-d object arrays; a 0-d object
    result is unwrapped to the object itself (so a string stays a string); object arrays holding
    tensors are rejected.

    :raises TypeError: for object arrays of tensors and for sequences whose elements have
        mismatched shapes beyond their first axis.
    """
    try:
        array = np.asanyarray(obj)
    except ValueError as error:
        array = _ragged_object_array(obj, error)
    if array.dtype.kind in NUMERIC_KINDS:
        return array
    if array.dtype != object:
        array = array.astype(object)
    if array.ndim == 0:
        return array.item()
    if any(isinstance(element, torch.Tensor) for element in array.flat):
        raise TypeError(
            "Batch does not store numpy arrays of torch tensors; stack the tensors with "
            "torch.stack (equal shapes) or convert them with to_numpy first"
        )
    return array


def _ragged_object_array(obj: object, error: ValueError) -> np.ndarray:
    """Store a sequence whose elements differ in length as a 1-d array of those elements."""
    if not isinstance(obj, list | tuple) or len({len_or_none(e) for e in obj}) < 2:
        raise TypeError(
            "Batch cannot build an array from a sequence whose elements have mismatched "
            f"shapes beyond the first axis ({error}); give them equal shapes or store them "
            "in separate keys"
        ) from error
    array = np.empty(len(obj), dtype=object)
    for i, element in enumerate(obj):
        array[i] = element
    return array


def len_or_none(obj: object) -> int | None:
    """``len(obj)``, or None if ``obj`` has no length."""
    try:
        return len(obj)  # type: ignore[arg-type]
    except TypeError:
        return None


def leaf_to_torch(value: object, dtype: torch.dtype | None, device: torch.device) -> object:
    """Convert a numeric leaf (array, number, numpy scalar, tensor) to a tensor on ``device``.

    :param value: the leaf; object arrays, strings, ``None`` and other objects are returned
        unchanged.
    :param dtype: target dtype of array and tensor leaves, None to keep each leaf's own dtype.
        Scalar leaves (numbers and 0-d arrays) keep their own dtype, as in the published
        library: only data with a batch axis is cast.
    :param device: target device.
    """
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in NUMERIC_KINDS:
            return value
        tensor = torch.from_numpy(value)
        if value.ndim == 0:
            dtype = None
    elif is_number(value):
        tensor = torch.from_numpy(np.asanyarray(value))
        dtype = None
    elif isinstance(value, torch.Tensor):
        tensor = value
    else:
        return value
    return tensor.to(device=device, dtype=dtype)
