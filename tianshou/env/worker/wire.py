"""Cheap encoding of numpy values for the pipe between a subprocess worker and its parent.

Pickling a numpy scalar or a small array costs several microseconds (the reduce protocol
pickles the dtype and looks up reconstructor functions each time), which is more than a
CartPole step. Actions and step results are therefore sent as plain Python data: an array as
``(dtype string, shape, bytes)``, a numpy scalar as ``(type char, Python number)``. Decoding
restores the same types, dtypes and values, so envs and callers cannot tell the difference.
Each encoded value is a ``(code, payload)`` pair; anything else travels as ``(RAW, value)``.
"""

from typing import Any

import numpy as np

RAW, ARRAY, SCALAR, DICT = 0, 1, 2, 3

# Scalars whose ``.item()`` converts to a Python number and back without loss.
_SCALAR_TYPES: dict[str, type] = {
    np.dtype(t).char: t
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
        np.complex64,
        np.complex128,
    )
}
_SCALAR_CHARS = {t: char for char, t in _SCALAR_TYPES.items()}
_DTYPES: dict[str, np.dtype] = {}

Encoded = tuple[int, Any]


def encode(value: Any) -> Encoded:
    """Encode one value; only plain arrays and common numpy scalars are converted."""
    cls = type(value)
    if cls is np.ndarray and not value.dtype.hasobject:
        return ARRAY, (value.dtype.str, value.shape, value.tobytes())
    char = _SCALAR_CHARS.get(cls)
    if char is not None:
        return SCALAR, (char, value.item())
    return RAW, value


def encode_info(info: Any) -> Encoded:
    """Encode an info dict value by value (its entries are often numpy scalars)."""
    if type(info) is dict:
        return DICT, {key: encode(value) for key, value in info.items()}
    return RAW, info


def decode(encoded: Encoded) -> Any:
    """Rebuild a value from :func:`encode` or :func:`encode_info` output."""
    code, payload = encoded
    if code == RAW:
        return payload
    if code == ARRAY:
        dtype_str, shape, raw = payload
        dtype = _DTYPES.get(dtype_str)
        if dtype is None:
            dtype = _DTYPES[dtype_str] = np.dtype(dtype_str)
        return np.frombuffer(bytearray(raw), dtype).reshape(shape)
    if code == SCALAR:
        char, number = payload
        return _SCALAR_TYPES[char](number)
    return {key: decode(value) for key, value in payload.items()}
