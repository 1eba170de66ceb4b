"""Property tests: Batch against a plain model, a nested dict of numpy arrays.

Every operation is done twice, once on a Batch and once leaf by leaf on the dict model with
plain numpy, and the results must agree exactly (keys, dtypes, shapes and values).
"""

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tianshou.data import Batch
from tianshou.data.batch_ops import _cat_general, _stack_general

SETTINGS = settings(max_examples=60, deadline=None)
DTYPES = [np.float64, np.float32, np.int64, np.int32, np.bool_]
KEYS = st.sampled_from(["a", "b", "obs", "act", "rew"])

# a structure is a nested dict whose leaves are (dtype, trailing shape) specifications
leaf_specs = st.tuples(st.sampled_from(DTYPES), st.lists(st.integers(1, 3), max_size=2).map(tuple))
structures = st.dictionaries(
    KEYS,
    st.recursive(
        leaf_specs, lambda inner: st.dictionaries(KEYS, inner, min_size=1, max_size=3), max_leaves=5
    ),
    min_size=1,
    max_size=4,
)
Model = dict[str, Any]


def model_for(draw: Callable[[Any], Any], structure: dict, rows: int) -> Model:
    """Draw arrays with ``rows`` rows following ``structure``."""
    model: Model = {}
    for key, spec in structure.items():
        if isinstance(spec, dict):
            model[key] = model_for(draw, spec, rows)
        else:
            dtype, trailing = spec
            elements = st.booleans() if dtype is np.bool_ else st.integers(-50, 50)
            model[key] = draw(hnp.arrays(dtype, (rows, *trailing), elements=elements))
    return model


def model_map(fn: Callable[..., Any], *models: Model) -> Model:
    """Apply ``fn`` leaf-wise over models of identical structure."""
    return {
        key: model_map(fn, *(m[key] for m in models))
        if isinstance(value, dict)
        else fn(*(m[key] for m in models))
        for key, value in models[0].items()
    }


def assert_matches(batch: Batch, model: Model) -> None:
    """The Batch holds exactly the model's keys, dtypes, shapes and values."""
    assert isinstance(batch, Batch)
    assert list(batch.keys()) == list(model.keys())
    for key, expected in model.items():
        value = batch[key]
        if isinstance(expected, dict):
            assert_matches(value, expected)
        else:
            assert isinstance(value, np.ndarray), key
            assert value.dtype == expected.dtype, key
            assert value.shape == expected.shape, key
            assert np.array_equal(value, expected), key


@st.composite
def models(draw: Callable[[Any], Any], rows: int | None = None) -> Model:
    structure = draw(structures)
    return model_for(draw, structure, draw(st.integers(1, 7)) if rows is None else rows)


@st.composite
def same_structure_models(draw: Callable[[Any], Any], same_rows: bool) -> list[Model]:
    structure = draw(structures)
    count = draw(st.integers(1, 5))
    rows = draw(st.integers(1, 4))
    return [
        model_for(draw, structure, rows if same_rows else draw(st.integers(1, 4)))
        for _ in range(count)
    ]


def rows_of(model: Model) -> int:
    first = next(iter(model.values()))
    return rows_of(first) if isinstance(first, dict) else len(first)


@SETTINGS
@given(models())
def test_construction_keeps_leaves_and_reports_size(model: Model) -> None:
    batch = Batch(model)
    assert_matches(batch, model)
    assert len(batch) == rows_of(model)
    assert batch.shape[0] == rows_of(model)
    assert Batch(**model) == batch
    assert pickle.loads(pickle.dumps(batch)) == batch


@SETTINGS
@given(models(), st.data())
def test_indexing_matches_numpy(model: Model, data: st.DataObject) -> None:
    rows = rows_of(model)
    index = data.draw(
        st.one_of(
            st.integers(-rows, rows - 1),
            st.slices(rows),
            hnp.arrays(np.int64, st.integers(0, 6), elements=st.integers(-rows, rows - 1)),
            hnp.arrays(np.bool_, rows),
            st.lists(st.integers(0, rows - 1), max_size=5),
        )
    )
    result = Batch(model)[index]
    expected = model_map(lambda v: v[index], model)
    if isinstance(index, int):  # rows of an int index are numpy scalars or arrays
        flat = model_map(np.asarray, result.to_dict())
        assert Batch(flat) == Batch(model_map(np.asarray, expected))
    else:
        assert_matches(result, expected)


@SETTINGS
@given(models(), st.data())
def test_set_rows_matches_numpy(model: Model, data: st.DataObject) -> None:
    rows = rows_of(model)
    index = data.draw(hnp.arrays(np.int64, st.integers(1, 3), elements=st.integers(0, rows - 1)))
    index = np.unique(index)
    source = model_map(lambda v: np.ones_like(v[index]), model)
    batch = Batch(model_map(np.copy, model))
    batch[index] = source
    expected = model_map(np.copy, model)

    def write(target: np.ndarray, value: np.ndarray) -> None:
        target[index] = value

    model_map(write, expected, source)
    assert_matches(batch, expected)


@SETTINGS
@given(same_structure_models(same_rows=False))
def test_cat_matches_numpy_concatenate(inputs: list[Model]) -> None:
    batches = [Batch(m) for m in inputs]
    expected = model_map(lambda *vs: np.concatenate(vs), *inputs)
    assert_matches(Batch.cat(batches), expected)
    assert_matches(
        Batch._from_parsed_dict(_cat_general(batches, [rows_of(m) for m in inputs])), expected
    )
    in_place = Batch(inputs[0])
    in_place.cat_(batches[1:])
    assert_matches(in_place, expected)


@SETTINGS
@given(same_structure_models(same_rows=True), st.integers(0, 1))
def test_stack_matches_numpy_stack(inputs: list[Model], axis: int) -> None:
    batches = [Batch(m) for m in inputs]
    expected = model_map(lambda *vs: np.stack(vs, axis), *inputs)
    assert_matches(Batch.stack(batches, axis), expected)
    assert_matches(Batch._from_parsed_dict(_stack_general(batches, axis)), expected)


@SETTINGS
@given(same_structure_models(same_rows=True), st.data())
def test_stack_pads_missing_keys_with_zeros(inputs: list[Model], data: st.DataObject) -> None:
    top_keys = list(inputs[0])
    dropped = [
        data.draw(st.sets(st.sampled_from(top_keys), max_size=len(top_keys) - 1)) for _ in inputs
    ]
    partial = [
        {k: v for k, v in m.items() if k not in drop}
        for m, drop in zip(inputs, dropped, strict=True)
    ]
    result = Batch.stack([Batch(m) for m in partial])
    for key in top_keys:
        present = [i for i, drop in enumerate(dropped) if key not in drop]
        if not present:
            assert key not in result
            continue
        zeroed = [
            m[key] if key not in drop else model_map(np.zeros_like, {key: m[key]})[key]
            for m, drop in zip(inputs, dropped, strict=True)
        ]
        if isinstance(inputs[0][key], dict):
            assert_matches(result[key], model_map(lambda *vs: np.stack(vs), *zeroed))
        else:
            expected = np.stack(zeroed)
            assert result[key].shape == expected.shape
            assert np.array_equal(result[key], expected)


@SETTINGS
@given(models(), st.integers(1, 8), st.booleans(), st.booleans())
def test_split_then_cat_round_trips(
    model: Model, size: int, shuffle: bool, merge_last: bool
) -> None:
    rows = rows_of(model)
    model = {**model, "row_id": np.arange(rows)}
    batch = Batch(model)
    parts = list(batch.split(size, shuffle=shuffle, merge_last=merge_last))
    assert sum(len(p) for p in parts) == rows
    assert all(len(p) <= size or (merge_last and p is parts[-1]) for p in parts)
    joined = Batch.cat(parts)
    order = joined.row_id
    assert sorted(order.tolist()) == list(range(rows))
    if not shuffle:
        assert order.tolist() == list(range(rows))
    assert_matches(joined, model_map(lambda v: v[order], model))


@SETTINGS
@given(models(), st.integers(-3, 3))
def test_arithmetic_matches_numpy(model: Model, number: int) -> None:
    numeric = model_map(lambda v: v.astype(np.float64), model)
    batch = Batch(numeric)
    assert_matches(batch + number, model_map(lambda v: v + number, numeric))
    assert_matches(batch * number, model_map(lambda v: v * number, numeric))
    assert_matches(batch + batch, model_map(lambda v: v + v, numeric))


@SETTINGS
@given(models())
def test_to_torch_and_back_round_trips(model: Model) -> None:
    batch = Batch(model)
    assert batch.to_torch().to_numpy() == batch
    assert Batch.stack(list(batch)) == batch
    assert Batch(batch.to_list_of_dicts()) == batch
