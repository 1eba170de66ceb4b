"""The pipe encoding must give back values of identical type, dtype, shape and content."""

import pickle
from typing import Any

import numpy as np
import pytest

from tianshou.env.worker.wire import ARRAY, RAW, SCALAR, decode, encode, encode_info

SCALARS = [
    np.bool_(True),
    np.int8(-3),
    np.int64(2**62),
    np.uint64(2**64 - 1),
    np.uint8(255),
    np.float16(0.1),
    np.float32(1 / 3),
    np.float64(np.pi),
    np.float64(np.nan),
    np.complex64(1 + 2j),
    np.complex128(-1.5j),
]

ARRAYS = [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    np.zeros((0, 4)),
    np.array(7, dtype=np.int16),
    np.arange(12).reshape(3, 4)[:, ::2],  # not contiguous
    np.asfortranarray(np.arange(6.0).reshape(2, 3)),
    np.array([True, False]),
    np.array([[1 + 1j]], dtype=np.complex64),
]


def roundtrip(value: Any) -> Any:
    return decode(pickle.loads(pickle.dumps(encode(value))))


@pytest.mark.parametrize("value", SCALARS, ids=lambda v: type(v).__name__)
def test_numpy_scalars_keep_type_and_bits(value: np.generic) -> None:
    assert encode(value)[0] == SCALAR
    back = roundtrip(value)
    assert type(back) is type(value)
    assert back.tobytes() == value.tobytes()


@pytest.mark.parametrize("value", ARRAYS, ids=lambda v: str(v.shape))
def test_arrays_keep_dtype_shape_values_and_are_writable(value: np.ndarray) -> None:
    assert encode(value)[0] == ARRAY
    back = roundtrip(value)
    assert type(back) is np.ndarray and back.dtype == value.dtype and back.shape == value.shape
    np.testing.assert_array_equal(back, value)
    assert back.flags.writeable


@pytest.mark.parametrize(
    "value",
    [1, 2.5, True, None, "text", [np.int64(1)], np.array([{}], dtype=object), np.longdouble(1)],
    ids=repr,
)
def test_everything_else_travels_unchanged(value: Any) -> None:
    assert encode(value)[0] == RAW
    back = roundtrip(value)
    assert type(back) is type(value)


def test_info_dicts_are_encoded_per_entry() -> None:
    info = {"x": np.float64(1.5), "flag": np.bool_(True), "nested": {"y": np.int64(2)}, "n": 3}
    back = decode(pickle.loads(pickle.dumps(encode_info(info))))
    assert back == info
    assert type(back["x"]) is np.float64 and type(back["flag"]) is np.bool_
    assert type(back["nested"]["y"]) is np.int64
    assert decode(encode_info(None)) is None
