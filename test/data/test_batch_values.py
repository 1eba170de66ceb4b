"""Tests of tianshou.data._batch_values: what a Batch makes of a leaf value."""

import numpy as np
import pytest
import torch

from tianshou.data._batch_values import (
    is_number,
    leaf_to_torch,
    len_or_none,
    parse_leaf,
    to_array_with_correct_type,
)


def test_parse_leaf_keeps_numeric_arrays_tensors_and_none() -> None:
    array, tensor = np.arange(3), torch.zeros(2)
    assert parse_leaf(array) is array and parse_leaf(tensor) is tensor and parse_leaf(None) is None


@pytest.mark.parametrize(
    ("value", "expected_dtype", "expected_shape"),
    [
        (3, np.int64, ()),
        (np.float32(1.5), np.float32, ()),
        (True, np.bool_, ()),
        ([1, 2], np.int64, (2,)),
        ([True, False], np.bool_, (2,)),
        (("a", -2), object, (2,)),
        (np.array(["x", "y"]), object, (2,)),
        ([np.zeros(2), np.zeros(3)], object, (2,)),
    ],
)
def test_parse_leaf_makes_bool_numeric_or_object_arrays(
    value: object, expected_dtype: type, expected_shape: tuple[int, ...]
) -> None:
    parsed = parse_leaf(value)
    assert isinstance(parsed, np.ndarray)
    assert parsed.dtype == expected_dtype and parsed.shape == expected_shape


def test_parse_leaf_stacks_tensors_and_unwraps_lone_objects() -> None:
    stacked = parse_leaf([torch.ones(2), torch.zeros(2)])
    assert isinstance(stacked, torch.Tensor) and stacked.shape == (2, 2)
    assert parse_leaf("text") == "text"
    marker = {1, 2}
    assert parse_leaf(marker) is marker
    with pytest.raises(TypeError, match=r"torch\.stack"):
        parse_leaf([torch.ones(2), torch.ones(3)])


def test_to_array_with_correct_type_refuses_what_it_cannot_store() -> None:
    with pytest.raises(TypeError, match="tensors"):
        to_array_with_correct_type(np.array([torch.zeros(1), "x"], dtype=object))
    with pytest.raises(TypeError, match="mismatched shapes"):
        to_array_with_correct_type([np.zeros((3, 2)), np.zeros((3, 3))])


def test_leaf_to_torch_converts_numeric_leaves_only() -> None:
    cpu = torch.device("cpu")
    scalars = (np.float64(2.0), np.int64(2), 2, np.bool_(True), np.array(2.0))
    for scalar, own in zip(
        scalars, (torch.float64, torch.int64, torch.int64, torch.bool, torch.float64), strict=True
    ):
        converted = leaf_to_torch(scalar, torch.float32, cpu)  # scalars keep their own dtype
        assert isinstance(converted, torch.Tensor) and converted.dtype == own
        assert converted.shape == ()
    assert leaf_to_torch(np.zeros(2), torch.float32, cpu).dtype == torch.float32
    assert leaf_to_torch(torch.zeros(2), torch.float16, cpu).dtype == torch.float16
    assert leaf_to_torch(np.arange(2), None, cpu).dtype == torch.int64
    strings = np.array(["a"], dtype=object)
    assert leaf_to_torch(strings, torch.float32, cpu) is strings
    assert leaf_to_torch(None, torch.float32, cpu) is None


def test_small_predicates() -> None:
    assert is_number(np.int8(1)) and is_number(1.0) and not is_number("1")
    assert len_or_none([1, 2]) == 2 and len_or_none(3) is None
