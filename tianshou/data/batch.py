"""The :class:`Batch`: a tree of named arrays that carries data between every layer of tianshou.

A Batch maps string keys to leaves (numpy arrays, torch tensors, ``None``, torch distributions or
arbitrary objects) and to nested Batches. The leading axis of every leaf is the batch axis, so one
index (``batch[idx]``) selects the same rows of all leaves at once. Values live directly in the
instance ``__dict__``, so ``batch.obs`` and ``batch["obs"]`` cost what a plain attribute costs.

Construction, indexing, concatenation and stacking are the hot paths of collectors and replay
buffers: numeric numpy arrays and tensors pass through them without any conversion, and the
joining code (in :mod:`tianshou.data.batch_ops`) takes a fast route whenever all inputs share
one key structure.
"""

from __future__ import annotations

import operator
import pprint
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, Sequence, ValuesView
from copy import deepcopy
from typing import Any, Self, TypeVar

import numpy as np
import torch
from torch.distributions import Distribution

from tianshou.data._batch_values import (
    NUMERIC_KINDS,
    is_number,
    leaf_to_torch,
    len_or_none,
    parse_leaf,
    to_array_with_correct_type,
)
from tianshou.data.types import (
    BatchOperand,
    BatchProtocol,
    IndexType,
    ProtocolCalledException,
    TArr,
    TObsArr,
)

# ---------------------------------------------------------------------------------------------
# value parsing: dicts and rows become sub-Batches, everything else is a leaf (see _batch_values)


def _parse_value(value: Any) -> object:
    """Convert one user-supplied value into the form a Batch stores.

    Dicts become Batches and lists/tuples/object arrays of dicts or Batches become stacked
    Batches; Batches are kept; every other value is converted by
    :func:`~tianshou.data._batch_values.parse_leaf`. The cheap checks for the common values come
    first: this runs for every value set on a Batch. (``value`` is typed ``Any`` because those
    checks, type identity through a local, do not narrow it for type checkers.)
    """
    value_type = type(value)
    if value_type is np.ndarray:
        if value.dtype.kind in NUMERIC_KINDS:
            return value
        if _is_batch_sequence(value):
            return _stacked_batch(value)
        return to_array_with_correct_type(value)
    if value_type is dict:
        return _batch_from_mapping(value)
    if value_type is Batch or value is None or isinstance(value, _KEPT_TYPES):
        return value
    if is_number(value):
        return np.asanyarray(value)
    if isinstance(value, dict):
        return _batch_from_mapping(value)
    if isinstance(value, list | tuple | np.ndarray) and _is_batch_sequence(value):
        return _stacked_batch(value)  # ndarray subclasses land here too
    return parse_leaf(value)


def _parse_into(target: dict[str, object], source: Mapping[str, Any]) -> None:
    """Parse every value of ``source`` into ``target`` (a Batch's ``__dict__``)."""
    for key, value in source.items():
        if type(key) is not str and not isinstance(key, str):
            raise AssertionError(
                f"Batch keys must be str, but got key {key!r} of type {type(key).__name__}"
            )
        # the two most common values (numeric arrays, nested dicts) skip the general parser
        value_type = type(value)
        if value_type is np.ndarray and value.dtype.kind in NUMERIC_KINDS:
            target[key] = value
        elif value_type is dict:
            nested = object.__new__(Batch)
            _parse_into(nested.__dict__, value)
            target[key] = nested
        else:
            target[key] = _parse_value(value)


def _batch_from_mapping(mapping: Mapping[str, object]) -> Batch:
    batch = object.__new__(Batch)
    _parse_into(batch.__dict__, mapping)
    return batch


def _is_batch_sequence(obj: object) -> bool:
    """Whether ``obj`` is a non-empty list/tuple or object array of dicts/Batches (its rows)."""
    if isinstance(obj, np.ndarray):
        return (
            obj.dtype == object and obj.ndim > 0 and all(isinstance(e, dict | Batch) for e in obj)
        )
    return (
        isinstance(obj, list | tuple)
        and len(obj) > 0
        and all(isinstance(e, dict | Batch) for e in obj)
    )


def _stacked_batch(rows: Sequence[dict | BatchProtocol] | np.ndarray) -> Batch:
    batch = Batch()
    batch.stack_(list(rows))
    return batch


# ---------------------------------------------------------------------------------------------
# the Batch class


class Batch:
    """A nested dictionary of arrays indexed row-wise, the data carrier of tianshou.

    ``Batch(batch_dict=None, copy=False, **kwargs)`` takes a dict, a Batch, keyword arguments,
    or a list/tuple/object array of dicts or Batches (one per row, which are stacked). Values are
    parsed once on the way in: numbers become 0-d arrays, dicts nested Batches, lists arrays
    (``object`` dtype unless bool or numeric), lists of equally shaped tensors stacked tensors.
    Tensors stay on their device. With ``copy=True`` the inputs are deep-copied first.

    >>> import numpy as np
    >>> b = Batch(obs=np.zeros((3, 2)), info={"id": [7, 8, 9]})
    >>> b[1:].info.id
    array([8, 9])
    >>> len(b), b.shape
    (3, [3])
    """

    def __init__(
        self,
        batch_dict: dict
        | BatchProtocol
        | Sequence[dict | BatchProtocol]
        | np.ndarray
        | None = None,
        copy: bool = False,
        **kwargs: object,
    ) -> None:
        if copy:
            batch_dict = deepcopy(batch_dict)
            kwargs = deepcopy(kwargs)
        data = self.__dict__
        if batch_dict is not None:
            if isinstance(batch_dict, dict):
                _parse_into(data, batch_dict)
            elif isinstance(batch_dict, Batch):
                _parse_into(data, batch_dict.__dict__)
            elif _is_batch_sequence(batch_dict):
                self.stack_(batch_dict)  # type: ignore[arg-type]
            elif len_or_none(batch_dict) != 0:
                raise TypeError(
                    "Batch(batch_dict) accepts a dict, a Batch, or a sequence/object array of "
                    f"dicts or Batches, but got {type(batch_dict).__name__}"
                )
        if kwargs:
            _parse_into(data, kwargs)

    @classmethod
    def _from_parsed_dict(cls, data: Mapping[str, object]) -> Self:
        """Build a Batch from already-parsed values without any checks or conversion.

        For internal hot paths (indexing, joining, replay buffers): every value must already be
        what a Batch stores (numeric/object ndarray, tensor, Batch, None, ...) and every key a str.
        """
        batch = object.__new__(cls)
        batch.__dict__.update(data)
        return batch

    # -- access ---------------------------------------------------------------------------------

    def __setattr__(self, key: str, value: object) -> None:
        self.__dict__[key] = _parse_value(value)

    def __getattr__(self, key: str) -> Any:
        # only reached when normal lookup fails; plain dict methods (setdefault, copy, ...) act
        # on the underlying dict, as in the published library
        if not key.startswith("__") and hasattr(dict, key):
            return getattr(self.__dict__, key)
        raise AttributeError(
            f"{type(self).__name__} has no key or attribute {key!r}; keys: {list(self.__dict__)}"
        )

    def __contains__(self, key: object) -> bool:
        return key in self.__dict__

    def __delitem__(self, key: str) -> None:
        del self.__dict__[key]

    def get_keys(self) -> KeysView[str]:
        """The keys of this level (nested keys are not included)."""
        return self.__dict__.keys()

    def keys(self) -> KeysView[str]:
        return self.__dict__.keys()

    def values(self) -> ValuesView[Any]:
        return self.__dict__.values()

    def items(self) -> ItemsView[str, Any]:
        return self.__dict__.items()

    def get(self, key: str, default: object = None) -> Any:
        """Return the value of ``key``, or ``default`` when it is absent."""
        return self.__dict__.get(key, default)

    def pop(self, key: str, default: object = None) -> Any:
        """Remove ``key`` and return its value, or ``default`` when it is absent."""
        return self.__dict__.pop(key, default)

    def update(self, batch: dict | BatchProtocol | None = None, **kwargs: object) -> None:
        """Set (parsed) values from a dict or Batch, then from ``kwargs``, like ``dict.update``."""
        if batch is not None:
            _parse_into(self.__dict__, batch if isinstance(batch, dict) else batch.__dict__)
        if kwargs:
            _parse_into(self.__dict__, kwargs)

    def __getitem__(self, index: str | IndexType) -> Any:
        """``batch["key"]`` returns a value; any other index selects rows of every leaf.

        ``None`` leaves and empty sub-Batches are carried over unchanged, distributions are
        sliced with :func:`get_sliced_dist`. An int index yields scalar leaves.
        """
        if isinstance(index, str):
            try:
                return self.__dict__[index]
            except KeyError:
                raise KeyError(f"key {index!r} not in Batch; keys: {list(self.__dict__)}") from None
        items = self.__dict__.items()
        if not items:
            raise IndexError("cannot index an empty Batch (it has no keys)")
        np_index = index.detach().cpu().numpy() if type(index) is torch.Tensor else index
        result = object.__new__(Batch)
        out = result.__dict__
        for key, value in items:
            value_type = type(value)
            if value_type is np.ndarray:
                out[key] = value[np_index]
            elif value_type is torch.Tensor:
                out[key] = value[index]
            else:
                out[key] = _index_leaf(value, index, np_index)
        return result

    def __setitem__(self, index: str | IndexType, value: object) -> None:
        """``batch["key"] = v`` sets a key; ``batch[idx] = other`` writes rows of existing keys.

        ``other`` must be a Batch or dict whose keys already exist here; keys it lacks are reset
        to zero (numeric) or ``None`` (object) at ``idx``.
        """
        value = _parse_value(value)
        if isinstance(index, str):
            self.__dict__[index] = value
            return
        if not isinstance(value, Batch):
            raise ValueError(
                "assigning at an index needs a Batch or dict with existing keys, got "
                f"{type(value).__name__}; use batch[key] = value to set a single key"
            )
        new_keys = value.__dict__.keys() - self.__dict__.keys()
        if new_keys:
            raise ValueError(
                f"cannot create keys {sorted(new_keys)} by assigning at an index; existing keys "
                f"are {list(self.__dict__)}"
            )
        source = value.__dict__
        for key, current in self.__dict__.items():
            if key not in source:
                reset_at(current, index)
            elif current is None:
                raise ValueError(f"key {key!r} holds None and cannot be written at an index")
            elif isinstance(current, torch.Tensor) and isinstance(source[key], np.ndarray):
                current[index] = torch.as_tensor(source[key]).to(current)
            else:
                current[index] = source[key]

    # -- size -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        """The smallest leading-axis length over the leaves (``None`` and empty Batches skipped).

        :raises TypeError: if a leaf is a scalar (a 0-d array or a non-array object).
        """
        length = -1
        for key, value in self.__dict__.items():
            value_type = type(value)
            if value_type is np.ndarray or value_type is torch.Tensor:
                if not value.ndim:
                    raise TypeError(_scalar_len_message(key, value))
                n = value.shape[0]
            elif value is None:
                continue
            elif isinstance(value, Batch):
                if Batch.is_empty(value, recurse=True):
                    continue
                n = len(value)
            else:
                n = _leaf_len(key, value)
            if length < 0 or n < length:
                length = n
        return max(length, 0)

    @property
    def shape(self) -> list[int]:
        """Element-wise minimum of the leaves' shapes (``[]`` if any leaf is a scalar)."""
        if not self.__dict__:
            return []
        shapes = [list(getattr(value, "shape", [])) for value in self.__dict__.values()]
        if len(shapes) == 1:
            return shapes[0]
        return [min(dims) for dims in zip(*shapes, strict=False)]

    def __iter__(self) -> Iterator[Self]:
        """Iterate over rows (``batch[0]``, ``batch[1]``, ...), not over keys."""
        if not self.__dict__:
            return
        for i in range(len(self)):
            yield self[i]

    def is_empty(self, recurse: bool = False) -> bool:
        """Whether the Batch has no keys; with ``recurse``, whether it holds no leaves at all.

        ``Batch(a=Batch())`` has a key (not empty) but no leaf (recursively empty).
        """
        if not self.__dict__:
            return True
        if not recurse:
            return False
        return all(
            isinstance(value, Batch) and Batch.is_empty(value, recurse=True)
            for value in self.__dict__.values()
        )

    # -- conversion -----------------------------------------------------------------------------

    def to_dict(self, recursive: bool = True, *, recurse: bool | None = None) -> dict[str, Any]:
        """Return the contents as a dict (sub-Batches converted too unless ``recursive=False``).

        ``recurse`` is accepted as an alias of ``recursive``.
        """
        if recurse is not None:
            recursive = recurse
        return {
            key: Batch.to_dict(value) if recursive and isinstance(value, Batch) else value
            for key, value in self.__dict__.items()
        }

    def to_list_of_dicts(self) -> list[dict[str, Any]]:
        """One (nested) dict per row."""
        return [Batch.to_dict(row) for row in self]

    def to_numpy(self) -> Self:
        """Return a deep copy in which every tensor is a numpy array."""
        result = deepcopy(self)
        result.to_numpy_()
        return result

    def to_numpy_(self) -> None:
        """Convert every tensor leaf (recursively) to a numpy array, in place."""
        data = self.__dict__
        for key, value in data.items():
            if isinstance(value, torch.Tensor):
                data[key] = value.detach().cpu().numpy()
            elif isinstance(value, Batch):
                Batch.to_numpy_(value)

    def to_torch(
        self, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
    ) -> Self:
        """Return a deep copy in which numeric leaves are tensors on ``device`` (see
        :meth:`to_torch_` for ``dtype``)."""
        result = deepcopy(self)
        result.to_torch_(dtype, device)
        return result

    def to_torch_(
        self, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
    ) -> None:
        """Convert numeric arrays, numbers and tensors (recursively) to tensors, in place.

        :param dtype: target dtype of the array and tensor leaves; None keeps each leaf's dtype.
            Scalar leaves (numbers, 0-d arrays) keep their own dtype, as in the published library.
        :param device: target device. Object arrays, strings and ``None`` are left unchanged.
        """
        device = torch.device(device) if not isinstance(device, torch.device) else device
        data = self.__dict__
        for key, value in data.items():
            if isinstance(value, Batch):
                Batch.to_torch_(value, dtype, device)
            else:
                data[key] = leaf_to_torch(value, dtype, device)

    def apply_values_transform(
        self, values_transform: Callable[[Any], object], inplace: bool = False
    ) -> Self | None:
        """Apply ``values_transform`` to every non-Batch leaf (``None`` included), recursively.

        :return: a new Batch with the (parsed) results, or None when ``inplace`` is True, in
            which case this Batch and its sub-Batches are modified.
        """
        target = self if inplace else object.__new__(type(self))
        out = target.__dict__
        for key, value in self.__dict__.items():
            if not isinstance(value, Batch):
                out[key] = _parse_value(values_transform(value))
            elif inplace:
                Batch.apply_values_transform(value, values_transform, inplace=True)
            else:
                out[key] = Batch.apply_values_transform(value, values_transform)
        return None if inplace else target

    def to_at_least_2d(self) -> Self:
        """Return a copy whose arrays, tensors and distributions have at least 2 dimensions."""
        result = object.__new__(type(self))
        out = result.__dict__
        for key, value in self.__dict__.items():
            if isinstance(value, Batch):
                out[key] = Batch.to_at_least_2d(value)
            elif isinstance(value, torch.Tensor):
                out[key] = torch.atleast_2d(value)
            elif isinstance(value, Distribution):
                out[key] = dist_to_atleast_2d(value)
            elif value is None:
                out[key] = None
            else:
                out[key] = np.atleast_2d(value)
        return result

    def set_array_at_key(
        self,
        arr: np.ndarray,
        key: str,
        index: IndexType | None = None,
        default_value: float | None = None,
    ) -> None:
        """Write the array ``arr`` under ``key``: all rows, or only the rows at ``index``.

        :param arr: the values; without ``index`` it must have one row per row of the Batch.
        :param key: the key to write; it is created if missing.
        :param index: rows to write ``arr`` into. If ``key`` is missing, it is first created
            with ``len(self)`` rows shaped like ``arr``'s rows, filled with ``default_value``.
        :param default_value: fill value of a newly created key (None: NaN for float dtypes).
        :raises ValueError: if ``index`` is None and ``len(arr) != len(self)``.
        """
        if index is None:
            if len(arr) != len(self):
                raise ValueError(
                    f"set_array_at_key({key!r}) got an array of length {len(arr)} for a Batch of "
                    f"length {len(self)}; pass one row per row of the Batch, or pass index= to "
                    "write only some rows"
                )
            self[key] = arr
            return
        if key not in self.__dict__:
            try:
                self.__dict__[key] = np.full(
                    (len(self), *arr.shape[1:]), default_value, dtype=arr.dtype
                )
            except (TypeError, ValueError) as error:
                raise TypeError(
                    f"cannot create key {key!r} of dtype {arr.dtype} filled with {default_value!r}"
                    "; pass a default_value castable to that dtype or an array of another dtype"
                ) from error
        self.__dict__[key][index] = arr

    def replace_empty_batches_by_none(self) -> None:
        """Replace every empty sub-Batch (recursively) by ``None``, in place."""
        data = self.__dict__
        for key, value in data.items():
            if isinstance(value, Batch):
                if value.__dict__:
                    Batch.replace_empty_batches_by_none(value)
                else:
                    data[key] = None

    # -- null values ----------------------------------------------------------------------------

    def isnull(self) -> Self:
        """Boolean masks of the same structure: True where a value is None or NaN."""
        return Batch.apply_values_transform(self, null_mask)  # type: ignore[return-value]

    def hasnull(self) -> bool:
        """Whether any leaf contains None or NaN."""
        return has_null(self)

    def dropnull(self) -> Self:
        """Return the rows in which no leaf holds None or NaN.

        The rows are ``range(len(self))``; the kept ones are selected by their integer positions,
        so leaves longer than the Batch (``len`` is the shortest leaf) are cut to those rows.
        A leaf that is None as a whole is null in every row. Object leaves get the dtype the kept
        values have (:func:`~tianshou.data.batch_ops.retype_object_leaves`): a column that held
        ``None`` next to numbers is numeric once the ``None`` rows are gone.
        """
        kept = self[np.flatnonzero(~null_rows(self))]
        retype_object_leaves(kept)
        return kept

    # -- joining --------------------------------------------------------------------------------

    def cat_(self, batches: BatchProtocol | Sequence[dict | BatchProtocol]) -> None:
        """Concatenate ``batches`` along axis 0 after this Batch's own rows, in place.

        See :meth:`cat`.
        """
        inputs = [batches] if isinstance(batches, dict | Batch) else batches
        cat_into(self, inputs)  # type: ignore[arg-type]

    @staticmethod
    def cat(batches: Sequence[dict | TBatch]) -> TBatch:
        """Concatenate Batches (or dicts) along axis 0 into a new Batch.

        Inputs must share their keys; an empty sub-Batch (reserved key) may stand in for any
        sub-tree and is padded with zeros (numeric) or None (object). Empty inputs are skipped.

        :raises ValueError: on different key structures or scalar leaves.
        """
        result = Batch()
        result.cat_(batches)
        return result  # type: ignore[return-value]

    def stack_(self, batches: Sequence[dict | BatchProtocol], axis: int = 0) -> None:
        """Stack ``batches`` along a new axis after this Batch's rows, in place.

        See :meth:`stack`.
        """
        stack_into(self, batches, axis)

    @staticmethod
    def stack(batches: Sequence[dict | TBatch], axis: int = 0) -> TBatch:
        """Stack Batches (or dicts) along a new axis ``axis`` into a new Batch.

        Keys present in only some inputs are padded with zeros (numeric) or None (object); that
        is only possible for ``axis=0`` (ValueError otherwise). Leaves whose shapes differ are
        stored as an object array, with a warning.
        """
        result = Batch()
        result.stack_(batches, axis)
        return result  # type: ignore[return-value]

    def empty_(self, index: IndexType | None = None) -> Self:
        """Reset values to zero (numeric) or None (object), everywhere or only at ``index``."""
        reset_at(self, index)
        return self

    @staticmethod
    def empty(batch: TBatch, index: IndexType | None = None) -> TBatch:
        """Return a deep copy of ``batch`` reset with :meth:`empty_`."""
        return Batch.empty_(deepcopy(batch), index)  # type: ignore[type-var]

    def split(self, size: int, shuffle: bool = True, merge_last: bool = False) -> Iterator[Self]:
        """Yield consecutive sub-Batches of ``size`` rows.

        :param size: rows per sub-Batch (-1: everything in one); the last one may be shorter.
        :param shuffle: draw the rows in a random permutation instead of in order.
        :param merge_last: fold a shorter last sub-Batch into the one before it.
        """
        length = len(self)
        if size == -1:
            size = max(length, 1)
        if size < 1:
            raise AssertionError(f"split size must be a positive int or -1, got {size}")
        indices = np.random.permutation(length) if shuffle else np.arange(length)
        merge_last = merge_last and length % size > 0
        for start in range(0, length, size):
            if merge_last and start + 2 * size >= length:
                yield self[indices[start:]]
                return
            yield self[indices[start : start + size]]

    # -- arithmetic -----------------------------------------------------------------------------

    def __iadd__(self, other: BatchOperand) -> Self:
        return arithmetic(self, other, operator.iadd, inplace=True)

    def __add__(self, other: BatchOperand) -> Self:
        return arithmetic(self, other, operator.add, inplace=False)

    __radd__ = __add__

    def __isub__(self, other: BatchOperand) -> Self:
        return arithmetic(self, other, operator.isub, inplace=True)

    def __sub__(self, other: BatchOperand) -> Self:
        return arithmetic(self, other, operator.sub, inplace=False)

    def __imul__(self, value: BatchOperand) -> Self:
        return arithmetic(self, value, operator.imul, inplace=True)

    def __mul__(self, value: BatchOperand) -> Self:
        return arithmetic(self, value, operator.mul, inplace=False)

    __rmul__ = __mul__

    def __itruediv__(self, value: BatchOperand) -> Self:
        return arithmetic(self, value, operator.itruediv, inplace=True)

    def __truediv__(self, value: BatchOperand) -> Self:
        return arithmetic(self, value, operator.truediv, inplace=False)

    def __neg__(self) -> Self:
        return arithmetic(self, -1, operator.mul, inplace=False)

    # -- comparison, printing, copying ------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        """Same keys (recursively) and equal values; tensors compare as arrays, NaN equals NaN."""
        return isinstance(other, Batch) and trees_equal(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = type(self).__name__
        if not self.__dict__:
            return f"{name}()"
        lines = [f"{name}("]
        for key, value in self.__dict__.items():
            text = _leaf_repr(value).replace("\n", "\n" + " " * (6 + len(key)))
            lines.append(f"    {key}: {text},")
        lines.append(")")
        return "\n".join(lines)

    __str__ = __repr__

    def __getstate__(self) -> dict[str, object]:
        """Pickle only the data, as a nested dict (sub-Batches become dicts)."""
        return {
            key: value.__getstate__() if isinstance(value, Batch) else value
            for key, value in self.__dict__.items()
        }

    def __setstate__(self, state: Mapping[str, object]) -> None:
        _parse_into(self.__dict__, state)

    def __deepcopy__(self, memo: dict[int, object]) -> Self:
        result = object.__new__(type(self))
        memo[id(self)] = result
        out = result.__dict__
        for key, value in self.__dict__.items():
            out[key] = deepcopy(value, memo)
        return result


TBatch = TypeVar("TBatch", bound=BatchProtocol)
_KEPT_TYPES = (torch.Tensor, Batch)  # stored as they are (subclasses included)


def _index_leaf(value: Any, index: IndexType, np_index: IndexType) -> object:
    """Index a leaf that is not a plain ndarray/tensor (see ``Batch.__getitem__``)."""
    if value is None:
        return None
    if isinstance(value, Batch):
        return value[index] if value.__dict__ else Batch()
    if isinstance(value, np.ndarray):
        return value[np_index]
    if isinstance(value, Distribution):
        return get_sliced_dist(value, index)
    return value[index]


def _scalar_len_message(key: str, value: object) -> str:
    return (
        f"Batch has no len(): key {key!r} holds the scalar {value!r}; only leaves with a "
        "leading batch axis have a length"
    )


def _leaf_len(key: str, value: object) -> int:
    if isinstance(value, np.ndarray | torch.Tensor):
        if not value.ndim:
            raise TypeError(_scalar_len_message(key, value))
        return int(value.shape[0])
    if isinstance(value, Distribution):
        return get_len_of_dist(value)
    raise TypeError(_scalar_len_message(key, value))


def _leaf_repr(value: object) -> str:
    if type(value) is np.ndarray and value.ndim == 0 and value.dtype.kind in NUMERIC_KINDS:
        return str(value)
    if isinstance(value, Batch):
        return repr(value)
    return pprint.pformat(value)


# The public helpers below are implemented in batch_ops next to the algorithms that use them, and
# re-exported here, where users import them from. batch_ops builds on Batch, hence the late import.
from tianshou.data.batch_ops import (  # noqa: E402
    alloc_by_keys_diff,
    arithmetic,
    cat_into,
    create_value,
    dist_to_atleast_2d,
    get_len_of_dist,
    get_sliced_dist,
    has_null,
    null_mask,
    null_rows,
    reset_at,
    retype_object_leaves,
    stack_into,
    trees_equal,
)

__all__ = [
    "Batch",
    "BatchProtocol",
    "IndexType",
    "ProtocolCalledException",
    "TArr",
    "TObsArr",
    "alloc_by_keys_diff",
    "create_value",
    "dist_to_atleast_2d",
    "get_len_of_dist",
    "get_sliced_dist",
]


def batch_of_parsed_values(data: Mapping[str, object]) -> Batch:
    """Wrap values that are already what a :class:`Batch` stores, skipping every check.

    The package's hot paths (indexing, stacking, the replay buffers, the collect loop and the
    algorithms' per-update batches) build many Batches from values they produced themselves;
    parsing those again would cost more than the work around it. Every value must already be a
    numeric or object ndarray, a tensor, a Batch or None, and every key a str: nothing is
    converted or validated. Users build Batches with ``Batch(...)``.
    """
    return Batch._from_parsed_dict(data)
