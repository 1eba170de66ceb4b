"""Whole-Batch operations: joining, equality, nulls, arithmetic; storage and distribution helpers.

Split out of :mod:`tianshou.data.batch` to keep each module readable. Users reach this code
through the ``Batch`` methods (``cat``, ``stack``, ``==``, ``isnull``, ``+``, ...) and through the
public helpers ``create_value``, ``alloc_by_keys_diff``, ``get_sliced_dist`` and
``dist_to_atleast_2d``, which :mod:`tianshou.data.batch` re-exports (import them from there).

Joining has two routes. The fast route handles the common case of inputs with one key structure
and one leaf type per key: it gathers each key's values and calls ``np.concatenate`` /
``np.stack`` / ``torch.cat`` / ``torch.stack`` once. Anything else (missing keys, reserved empty
sub-Batches, mixed leaf types, ``None`` leaves, shape mismatches) falls back to the general route,
which pads and reports problems with the offending key.
"""

import warnings
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from operator import attrgetter
from typing import Any, TypeVar, overload

import numpy as np
import torch
from torch.distributions import Categorical, Distribution, Independent, Normal

from tianshou.data._batch_values import (
    NUMERIC_KINDS,
    is_number,
    parse_leaf,
    to_array_with_correct_type,
)
from tianshou.data.batch import Batch
from tianshou.data.types import BatchProtocol, IndexType

ArrayJoiner = Callable[[list[np.ndarray]], np.ndarray]
"""Joins one key's numpy leaves (concatenate or stack)."""
TensorJoiner = Callable[[list[torch.Tensor]], torch.Tensor]
"""Joins one key's tensor leaves (cat or stack)."""
TDistribution = TypeVar("TDistribution", bound=Distribution)
TBatch = TypeVar("TBatch", bound=Batch)
_DATA = attrgetter("__dict__")

# ---------------------------------------------------------------------------------------------
# storage allocation helpers used by cat/stack and the replay buffers


@overload
def create_value(inst: dict | BatchProtocol, size: int, stack: bool = True) -> Batch: ...
@overload
def create_value(
    inst: object, size: int, stack: bool = True
) -> Batch | np.ndarray | torch.Tensor: ...
def create_value(inst: object, size: int, stack: bool = True) -> Batch | np.ndarray | torch.Tensor:
    """Allocate zero/None filled storage able to hold ``size`` values shaped like ``inst``.

    :param inst: an example value (array, tensor, Batch/dict, number or any object).
    :param size: length of the new leading axis.
    :param stack: if True the result has shape ``(size, *inst.shape)`` (``inst`` is one row);
        if False ``(size, *inst.shape[1:])`` (``inst`` is already a batch of rows).
    :return: zeros of ``inst``'s dtype/device for numeric arrays and tensors, an ``object``
        array of ``None`` for anything else, and a Batch of such storage for Batches/dicts.
    """
    if isinstance(inst, np.ndarray | torch.Tensor):
        if not stack and inst.ndim == 0:
            raise TypeError(
                f"cannot concatenate the scalar {inst!r}; every concatenated leaf needs a "
                "leading batch axis"
            )
        shape = (size, *inst.shape) if stack else (size, *inst.shape[1:])
        if isinstance(inst, torch.Tensor):
            return torch.zeros(shape, dtype=inst.dtype, device=inst.device)
        if inst.dtype.kind in NUMERIC_KINDS:
            return np.zeros(shape, dtype=inst.dtype)
        return np.full(shape, None, dtype=object)
    if isinstance(inst, dict | Batch):
        storage = object.__new__(Batch)
        for key, value in (inst.__dict__ if isinstance(inst, Batch) else inst).items():
            storage.__dict__[key] = create_value(value, size, stack)
        return storage
    if is_number(inst) or isinstance(inst, str | bytes):
        return create_value(np.asarray(inst), size, stack)
    return np.full(size, None, dtype=object)


def alloc_by_keys_diff(
    meta: BatchProtocol, batch: BatchProtocol, size: int, stack: bool = True
) -> None:
    """Add storage to ``meta`` for every key of ``batch`` that ``meta`` lacks (recursively).

    Keys already present keep their storage, except empty sub-Batches (reserved keys), which are
    replaced by storage shaped like ``batch``'s value. See :func:`create_value` for ``stack``.
    """
    meta_data = meta.__dict__
    for key, value in batch.__dict__.items():
        current = meta_data.get(key, _ABSENT)
        if current is _ABSENT:
            meta_data[key] = create_value(value, size, stack)
        elif isinstance(current, Batch) and isinstance(value, Batch):
            alloc_by_keys_diff(current, value, size, stack)
        elif isinstance(current, Batch) and not current.__dict__:
            meta_data[key] = create_value(value, size, stack)


# ---------------------------------------------------------------------------------------------
# distributions as leaves


def get_sliced_dist(dist: TDistribution, index: IndexType) -> TDistribution:
    """Select rows of a distribution's batch axes, as ``array[index]`` does for arrays.

    Categorical, Normal and Independent (over any of these) are sliced explicitly; other
    distributions are rebuilt from their sliced parameters (``arg_constraints``).
    """
    result: Distribution
    if isinstance(dist, Independent):
        result = Independent(get_sliced_dist(dist.base_dist, index), dist.reinterpreted_batch_ndims)
    elif isinstance(dist, Categorical):
        use_logits = "logits" in dist.__dict__ and "probs" not in dist.__dict__
        result = (
            Categorical(logits=dist.logits[index])
            if use_logits
            else Categorical(probs=dist.probs[index])
        )
    elif isinstance(dist, Normal):
        result = Normal(loc=dist.loc[index], scale=dist.scale[index])
    else:
        result = _rebuild_dist(dist, lambda param: param[index])
    return result  # type: ignore[return-value]


def get_len_of_dist(dist: Distribution) -> int:
    """The length of a distribution's first batch axis (its number of rows).

    :raises TypeError: if the distribution has no batch axis (a single, unbatched distribution).
    """
    if not dist.batch_shape:
        raise TypeError(
            f"{type(dist).__name__} distribution with batch_shape {tuple(dist.batch_shape)} has "
            "no length; only batched distributions have rows"
        )
    return int(dist.batch_shape[0])


def dist_to_atleast_2d(dist: TDistribution) -> TDistribution:
    """Give a distribution without batch axes a batch axis of length one (for recurrent nets)."""
    if len(dist.batch_shape) > 0:
        return dist
    return _prepend_batch_axis(dist)


def _prepend_batch_axis(dist: TDistribution) -> TDistribution:
    result: Distribution
    if isinstance(dist, Independent):
        result = Independent(_prepend_batch_axis(dist.base_dist), dist.reinterpreted_batch_ndims)
    elif isinstance(dist, Categorical):
        result = Categorical(logits=dist.logits.unsqueeze(0))
    elif isinstance(dist, Normal):
        result = Normal(loc=dist.loc.unsqueeze(0), scale=dist.scale.unsqueeze(0))
    else:
        result = _rebuild_dist(dist, lambda param: param.unsqueeze(0))
    return result  # type: ignore[return-value]


def _rebuild_dist(
    dist: Distribution, transform: Callable[[torch.Tensor], torch.Tensor]
) -> Distribution:
    params = {
        name: transform(dist.__dict__[name])
        for name in dist.arg_constraints
        if isinstance(dist.__dict__.get(name), torch.Tensor)
    }
    # a distribution is built from its parameters (the constructor's signature varies by type)
    build: Callable[..., Distribution] = type(dist)
    try:
        return build(**params)
    except Exception as error:
        raise NotImplementedError(
            f"Batch cannot slice or reshape a {type(dist).__name__} distribution; supported are "
            "Categorical, Normal, Independent and distributions built from their arg_constraints"
        ) from error


# ---------------------------------------------------------------------------------------------
# leaf updates used by Batch methods


def reset_at(value: object, index: IndexType | None) -> None:
    """Set ``value[index]`` to zero (numeric) or None (object), recursing into Batches."""
    if isinstance(value, Batch):
        data = value.__dict__
        for key, leaf in data.items():
            if isinstance(leaf, np.ndarray | torch.Tensor | Batch):
                reset_at(leaf, index)
            elif leaf is not None:
                data[key] = None if not is_number(leaf) else type(leaf)(0)
    elif isinstance(value, torch.Tensor):
        value[index] = 0
    elif isinstance(value, np.ndarray):
        value[index] = 0 if value.dtype.kind in NUMERIC_KINDS else None


# ---------------------------------------------------------------------------------------------
# entry points


def cat_into(target: Batch, batches: Sequence[dict | BatchProtocol]) -> None:
    """Implement ``target.cat_(batches)``: concatenate along axis 0 after target's own rows."""
    inputs = _as_batches(batches, "cat")
    dicts = list(map(_DATA, inputs))
    if not all(dicts):
        dicts = [data for data in dicts if data]
    if not dicts:
        return
    if target.__dict__:
        dicts.insert(0, target.__dict__)
    joined = _fast_join(dicts, _concat_arrays, torch.cat, True)
    if joined is None:
        inputs = [batch for batch in inputs if not Batch.is_empty(batch, recurse=True)]
        if not inputs:
            return
        _check_same_structure(inputs)
        parts = [target, *inputs] if target.__dict__ else inputs
        lens = [0 if Batch.is_empty(part, recurse=True) else _len_for_cat(part) for part in parts]
        joined = _cat_general(parts, lens)
    elif not _has_leaf(dicts[-1]):
        # identical structures: all inputs are recursively empty, so there is nothing to join
        return
    target.__dict__.update(joined)


def stack_into(target: Batch, batches: Sequence[dict | BatchProtocol], axis: int) -> None:
    """Implement ``target.stack_(batches, axis)``: stack along a new axis after target's rows."""
    parts = [batch for batch in _as_batches(batches, "stack") if batch.__dict__]
    if not parts:
        return
    if target.__dict__:
        parts.insert(0, target)

    def stack_arrays(values: list[np.ndarray]) -> np.ndarray:
        return np.stack(values, axis)

    def stack_tensors(values: list[torch.Tensor]) -> torch.Tensor:
        return torch.stack(values, axis)

    joined = _fast_join(list(map(_DATA, parts)), stack_arrays, stack_tensors, False)
    if joined is None:
        joined = _stack_general(parts, axis)
    target.__dict__.update(joined)


def _has_leaf(data: Mapping[str, object]) -> bool:
    return any(type(value) is not Batch or _has_leaf(value.__dict__) for value in data.values())


def _as_batches(batches: Sequence[dict | BatchProtocol], verb: str) -> list[Batch]:
    """Validate the inputs of cat/stack, turning non-empty dicts into Batches."""
    if not isinstance(batches, list | tuple | np.ndarray):
        batches = list(batches)  # e.g. a generator, which can only be iterated once
    if set(map(type, batches)) == {Batch}:
        return list(batches)
    result = []
    for batch in batches:
        if isinstance(batch, dict):
            if batch:
                result.append(Batch(batch))
        elif isinstance(batch, Batch):
            result.append(batch)
        else:
            raise ValueError(
                f"Batch.{verb} accepts only Batch or dict elements, got {type(batch).__name__}"
            )
    return result


# ---------------------------------------------------------------------------------------------
# fast route: identical key structure, one leaf type per key


def _concat_arrays(values: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(values)


def _fast_join(
    dicts: list[dict[str, Any]],
    join_arrays: ArrayJoiner,
    join_tensors: TensorJoiner,
    concat: bool,
) -> dict[str, object] | None:
    """Join leaf by leaf if all ``dicts`` share keys and leaf types, else return None.

    ``concat`` selects concatenation (numpy scalars not allowed) over stacking. Every failure
    (missing key, mixed types, numpy/torch refusing the shapes) returns None, and the general
    route repeats the work with padding and error reporting.
    """
    if len(set(map(len, dicts))) != 1:
        return None
    joined: dict[str, object] = {}
    try:
        for key, value in dicts[0].items():
            leaf_type = type(value)
            if leaf_type is Batch:
                # a non-Batch value has no __dict__ (AttributeError) or one with other keys
                sub_dicts = [data[key].__dict__ for data in dicts]
                sub = _fast_join(sub_dicts, join_arrays, join_tensors, concat)
                if sub is None or (not sub and not _all_batches(dicts, key)):
                    return None
                joined[key] = Batch._from_parsed_dict(sub)
                continue
            values = [data[key] for data in dicts]
            if len(set(map(type, values))) != 1:
                return None
            if leaf_type is np.ndarray:
                joined[key] = join_arrays(values)
            elif leaf_type is torch.Tensor:
                joined[key] = join_tensors(values)
            elif not concat and issubclass(leaf_type, np.number | np.bool_):
                joined[key] = join_arrays(values)
            else:
                return None
    except (KeyError, AttributeError, ValueError, RuntimeError):
        return None
    return joined


def _all_batches(dicts: Sequence[Mapping[str, object]], key: str) -> bool:
    return all(type(data[key]) is Batch for data in dicts)


# ---------------------------------------------------------------------------------------------
# general route


def _is_reserved(value: object) -> bool:
    """An empty sub-Batch: a key whose content is not known yet."""
    return isinstance(value, Batch) and not value.__dict__


def _union_keys(batches: Sequence[Batch]) -> list[str]:
    """All keys of ``batches`` in order of first appearance."""
    keys: dict[str, None] = {}
    for batch in batches:
        keys.update(dict.fromkeys(batch.__dict__))
    return list(keys)


def _structure_mismatch(left: dict, right: dict, prefix: str) -> str | None:
    """Describe the first key where two Batches' structures differ, or None if compatible.

    A recursively empty sub-Batch is compatible with anything at its position.
    """
    for key in _union_keys([Batch._from_parsed_dict(left), Batch._from_parsed_dict(right)]):
        path = prefix + key
        in_left, in_right = left.get(key, _ABSENT), right.get(key, _ABSENT)
        if _is_wildcard(in_left) or _is_wildcard(in_right):
            continue
        if in_left is _ABSENT or in_right is _ABSENT:
            return f"key {path!r} exists in only one of them"
        left_is_batch, right_is_batch = isinstance(in_left, Batch), isinstance(in_right, Batch)
        if left_is_batch and right_is_batch:
            problem = _structure_mismatch(in_left.__dict__, in_right.__dict__, path + ".")
            if problem:
                return problem
        elif left_is_batch or right_is_batch:
            return f"key {path!r} is a Batch in one and a leaf in the other"
    return None


_ABSENT = object()


def _is_wildcard(value: object) -> bool:
    return isinstance(value, Batch) and Batch.is_empty(value, recurse=True)


def _check_same_structure(batches: list[Batch]) -> None:
    reference = batches[0].__dict__
    for i, batch in enumerate(batches[1:], start=1):
        problem = _structure_mismatch(reference, batch.__dict__, "")
        if problem:
            raise ValueError(
                "Batch.cat needs inputs with the same keys (an empty sub-Batch may stand in for "
                f"any sub-tree), but input 0 and input {i} differ: {problem}"
            )


def _len_for_cat(batch: Batch) -> int:
    try:
        return len(batch)
    except TypeError as error:
        raise ValueError(f"Batch.cat cannot concatenate scalars: {error}") from error


def _cat_general(batches: list[Batch], lens: list[int]) -> dict[str, object]:
    offsets = [0]
    for length in lens:
        offsets.append(offsets[-1] + length)
    joined: dict[str, object] = {}
    for key in _union_keys(batches):
        filled = [
            (i, batch.__dict__[key])
            for i, batch in enumerate(batches)
            if key in batch.__dict__ and not _is_reserved(batch.__dict__[key])
        ]
        if not filled:
            joined[key] = Batch()
        elif len(filled) == len(batches):
            joined[key] = _cat_shared(key, [value for _, value in filled], lens)
        else:
            joined[key] = _pad(
                key, filled, offsets[-1], False, lambda i: slice(offsets[i], offsets[i + 1])
            )
    return joined


def _cat_shared(key: str, values: list[object], lens: list[int]) -> object:
    batches = [value for value in values if isinstance(value, Batch)]
    if len(batches) == len(values):
        return Batch._from_parsed_dict(_cat_general(batches, lens))
    if batches:
        raise ValueError(f"Batch.cat: key {key!r} is a Batch in some inputs and a leaf in others")
    if all(value is None for value in values):
        return None
    tensors = [value for value in values if isinstance(value, torch.Tensor)]
    try:
        if len(tensors) == len(values):
            return torch.cat(tensors)
        return to_array_with_correct_type(np.concatenate([np.asanyarray(v) for v in values]))
    except (ValueError, RuntimeError) as error:
        raise ValueError(f"Batch.cat cannot concatenate key {key!r}: {error}") from error


def _stack_general(batches: list[Batch], axis: int) -> dict[str, object]:
    joined: dict[str, object] = {}
    for key in _union_keys(batches):
        filled = [
            (i, batch.__dict__[key])
            for i, batch in enumerate(batches)
            if key in batch.__dict__ and not _is_reserved(batch.__dict__[key])
        ]
        if not filled:
            joined[key] = Batch()
        elif len(filled) == len(batches):
            joined[key] = _stack_shared(key, [value for _, value in filled], axis)
        elif axis != 0:
            raise ValueError(
                f"Batch.stack with axis={axis} needs every key in every input, but key {key!r} "
                "is missing in some; only axis=0 can pad missing keys"
            )
        else:
            joined[key] = _pad(key, filled, len(batches), True, lambda i: i)
    return joined


def _stack_shared(key: str, values: list[object], axis: int) -> object:
    batches = [value for value in values if isinstance(value, Batch)]
    if len(batches) == len(values):
        return Batch._from_parsed_dict(_stack_general(batches, axis))
    if batches:
        raise ValueError(f"Batch.stack: key {key!r} is a Batch in some inputs and a leaf in others")
    tensors = [value for value in values if isinstance(value, torch.Tensor)]
    if len(tensors) == len(values):
        try:
            return torch.stack(tensors, axis)
        except RuntimeError as error:
            raise ValueError(f"Batch.stack cannot stack key {key!r}: {error}") from error
    try:
        return to_array_with_correct_type(np.stack([np.asanyarray(v) for v in values], axis))
    except ValueError:
        warnings.warn(
            f"Batch.stack: values of key {key!r} have different shapes; storing them as an "
            "object array",
            stacklevel=4,
        )
        array = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            array[i] = value
        return array


def _pad(
    key: str,
    filled: list[tuple[int, Any]],
    size: int,
    stack: bool,
    position: Callable[[int], int | slice],
) -> Batch | np.ndarray | torch.Tensor:
    """Allocate zero/None storage for a key missing in some inputs and write the present ones."""
    storage = create_value(filled[0][1], size, stack=stack)
    for i, value in filled:
        if isinstance(storage, Batch) and isinstance(value, Batch):
            alloc_by_keys_diff(storage, value, size, stack=stack)
        try:
            storage[position(i)] = value
        except (ValueError, TypeError, RuntimeError) as error:
            raise ValueError(
                f"Batch.{'stack' if stack else 'cat'} cannot pad key {key!r}: {error}"
            ) from error
    return storage


# ---------------------------------------------------------------------------------------------
# equality


def trees_equal(left: Batch, right: Batch) -> bool:
    """Structural equality: same keys at every level and equal leaves (see :func:`leaves_equal`)."""
    left_data, right_data = left.__dict__, right.__dict__
    if left_data.keys() != right_data.keys():
        return False
    for key, value in left_data.items():
        other = right_data[key]
        if isinstance(value, Batch) or isinstance(other, Batch):
            if not (
                isinstance(value, Batch) and isinstance(other, Batch) and trees_equal(value, other)
            ):
                return False
        elif not leaves_equal(value, other):
            return False
    return True


def leaves_equal(left: object, right: object) -> bool:
    """Compare two leaves: tensors as numpy arrays, arrays by dtype, shape and values.

    0-d arrays compare like 1-element arrays; NaN equals NaN; object arrays are compared
    element by element.
    """
    if left is right:
        return True
    left, right = _comparable(left), _comparable(right)
    if isinstance(left, np.ndarray) and isinstance(right, np.ndarray):
        return _arrays_equal(np.atleast_1d(left), np.atleast_1d(right))
    if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
        return False
    return _objects_equal(left, right)


def _arrays_equal(left: np.ndarray, right: np.ndarray) -> bool:
    if left.dtype != right.dtype or left.shape != right.shape:
        return False
    if left.dtype == object:
        return all(_objects_equal(a, b) for a, b in zip(left.flat, right.flat, strict=True))
    return bool(np.array_equal(left, right, equal_nan=left.dtype.kind in "fc"))


def _comparable(value: object) -> object:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return value


def _objects_equal(left: object, right: object) -> bool:
    if isinstance(left, np.ndarray | torch.Tensor) or isinstance(right, np.ndarray | torch.Tensor):
        return leaves_equal(left, right)
    if isinstance(left, float) and isinstance(right, float) and left != left and right != right:
        return True
    try:
        return bool(left == right)
    except (TypeError, ValueError, RuntimeError):
        return False


# ---------------------------------------------------------------------------------------------
# null values


def null_mask(value: object) -> np.ndarray | torch.Tensor:
    """Element-wise mask of a leaf: True where it is None or NaN (the whole leaf if scalar)."""
    if isinstance(value, torch.Tensor):
        return torch.isnan(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return np.asarray(np.isnan(value))
        if value.dtype.kind in NUMERIC_KINDS:
            return np.zeros(value.shape, dtype=bool)
        return np.asarray(np.frompyfunc(_is_null_object, 1, 1)(value), dtype=bool)
    return np.asarray(_is_null_object(value))


def _is_null_object(obj: object) -> bool:
    return obj is None or (isinstance(obj, float | np.floating) and obj != obj)


def has_null(batch: Batch) -> bool:
    """Whether any leaf of ``batch`` (recursively) holds None or NaN."""
    for value in batch.__dict__.values():
        if isinstance(value, Batch):
            if has_null(value):
                return True
        elif bool(null_mask(value).any()):
            return True
    return False


def null_rows(batch: Batch) -> np.ndarray:
    """Boolean vector over ``batch``'s rows: True where any leaf's row holds None or NaN."""
    length = len(batch)
    rows = np.zeros(length, dtype=bool)
    _mark_null_rows(batch, rows)
    return rows


def _mark_null_rows(batch: Batch, rows: np.ndarray) -> None:
    for value in batch.__dict__.values():
        if isinstance(value, Batch):
            _mark_null_rows(value, rows)
        elif value is None:
            rows[:] = True
        else:
            mask = null_mask(value)
            if isinstance(mask, torch.Tensor):
                mask = mask.cpu().numpy()
            if mask.ndim == 0:
                continue
            row_has_null = np.asarray(mask.reshape(mask.shape[0], -1).any(axis=1))
            rows |= row_has_null[: len(rows)]


def retype_object_leaves(batch: Batch) -> None:
    """Give every non-empty object array of ``batch`` (recursively) the dtype a Batch infers for
    its values, in place: an object column of numbers becomes numeric once its ``None`` rows are
    dropped. Values a Batch keeps as objects (strings, ragged rows, mixed types) stay as they are.
    """
    data = batch.__dict__
    for key, value in data.items():
        if isinstance(value, Batch):
            retype_object_leaves(value)
        elif isinstance(value, np.ndarray) and value.dtype == object and value.size:
            with suppress(TypeError):  # values of mismatched shapes fit only an object array
                data[key] = to_array_with_correct_type(value.tolist())


# ---------------------------------------------------------------------------------------------
# arithmetic


def arithmetic(
    batch: TBatch, other: object, op: Callable[[Any, Any], object], inplace: bool
) -> TBatch:
    """Apply the binary operator ``op`` leaf-wise with a number or a Batch with the same keys.

    ``None`` leaves and empty sub-Batches are carried over untouched. With ``inplace`` the
    leaves are updated in place (``op`` is then an in-place operator such as ``operator.iadd``)
    and ``batch`` itself is returned; otherwise a new Batch holds the results.
    """
    if isinstance(other, Batch):
        if other.__dict__.keys() != batch.__dict__.keys():
            raise ValueError(
                f"Batch {op.__name__} Batch needs the same keys, got {list(batch.__dict__)} and "
                f"{list(other.__dict__)}"
            )
        operands = other.__dict__
    elif is_number(other):
        operands = None
    else:
        raise TypeError(
            f"unsupported operand for Batch {op.__name__}: {type(other).__name__}; use a number "
            "or a Batch with the same keys"
        )
    target = batch if inplace else object.__new__(type(batch))
    out = target.__dict__
    for key, value in batch.__dict__.items():
        if value is None or (isinstance(value, Batch) and not value.__dict__):
            out[key] = value if inplace or value is None else Batch()
            continue
        result = op(value, other if operands is None else operands[key])
        out[key] = result if inplace or isinstance(result, Batch) else parse_leaf(result)
    return target
