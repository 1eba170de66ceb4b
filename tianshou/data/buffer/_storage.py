"""Write and read paths between an incoming :class:`~tianshou.data.Batch` and a buffer's storage.

:func:`prepare_input` checks the required keys of a transition batch and derives ``done``.

A buffer keeps one pre-allocated Batch (its ``_meta``) whose leaves are arrays with one row per
slot. Writing a transition through ``Batch.__setitem__`` walks the whole tree with generic checks
on every call; the collector does this thousands of times per second with the same structure, so
:class:`StorageIndex` flattens the storage into ``path -> leaf`` once, caches one
:class:`WritePlan` per incoming key structure, and the buffer then validates every value up front
(shape, dtype, leading dimension) and writes leaves directly with ``array[rows] = value``.
Validating everything before the first write is what keeps a rejected ``add`` from touching stored
data. Reads go the other way: :func:`gather` fancy-indexes every leaf and rebuilds the tree with
``Batch._from_parsed_dict`` (no re-parsing of values that are already arrays).
"""

from collections.abc import Collection, Mapping
from typing import Any, TypeGuard

import numpy as np
import torch

from tianshou.data.batch import Batch, batch_of_parsed_values

Path = tuple[str, ...]
"""The keys leading from the storage's root to a leaf (or to an empty sub-Batch)."""
EMPTY = "<empty Batch>"
"""Marker appended to the path of an empty sub-Batch in a flattened input."""


def is_batch(value: object) -> TypeGuard[Batch]:
    """``isinstance(value, Batch)``, fast for the common leaf types (a failing isinstance check
    against Batch's protocol base class is slow)."""
    kind = type(value)
    if kind is Batch:
        return True
    if kind is np.ndarray or value is None:
        return False
    return isinstance(value, Batch)


def path_name(path: Path) -> str:
    """Dotted name of a key path, for error messages (``info.env_id``)."""
    return ".".join(str(p) for p in path if p is not EMPTY)


class LeafSpec:
    """One storage leaf: its array plus what a value must look like to be written into it."""

    __slots__ = ("array", "dtype", "fill", "is_tensor", "ok_dtypes", "path", "tail")

    def __init__(self, path: Path, array: np.ndarray | torch.Tensor) -> None:
        self.path = path
        self.array = array
        self.tail = tuple(array.shape[1:])
        self.is_tensor = isinstance(array, torch.Tensor)
        self.dtype: np.dtype | torch.dtype = array.dtype
        numeric = not isinstance(array, np.ndarray) or array.dtype.kind in "biufc"
        self.fill: int | None = 0 if numeric else None
        # dtypes already checked to convert losslessly into this leaf; others are checked on use
        self.ok_dtypes: set[np.dtype | torch.dtype] = {array.dtype}


class WritePlan:
    """How one incoming key structure maps onto storage: a spec per input leaf (``None`` for an
    empty sub-Batch, which writes nothing) and the storage leaves the input does not mention."""

    __slots__ = ("missing", "specs")

    def __init__(self, specs: list[LeafSpec | None], missing: list[LeafSpec]) -> None:
        self.specs = specs
        self.missing = missing


class StorageIndex:
    """Flattened view of a storage Batch, rebuilt whenever the storage's key structure changes."""

    def __init__(self, meta: Batch) -> None:
        self.leaves: dict[Path, LeafSpec] = {}
        self.nodes: set[Path] = set()
        self.empty_nodes: set[Path] = set()
        self._plans: dict[tuple[Path, ...], WritePlan] = {}
        self._index(meta, ())

    def _index(self, node: Batch, prefix: Path) -> None:
        items = node.__dict__.items()
        if prefix:
            self.nodes.add(prefix)
            if not items:
                self.empty_nodes.add(prefix)
        for key, value in items:
            path = (*prefix, key)
            if is_batch(value):
                self._index(value, path)
            elif isinstance(value, np.ndarray | torch.Tensor):
                self.leaves[path] = LeafSpec(path, value)

    def plan(self, paths: tuple[Path, ...]) -> WritePlan | None:
        """The cached plan for ``paths``, or ``None`` when the input carries keys the storage lacks.

        :raises ValueError: when the input nests a Batch where storage holds an array or vice versa.
        """
        plan = self._plans.get(paths)
        if plan is not None:
            return plan
        specs: list[LeafSpec | None] = []
        for path in paths:
            if path[-1] is EMPTY:
                node = path[:-1]
                if node in self.nodes or node in self.leaves:
                    specs.append(None)  # storage leaves under it are zero-filled as missing
                    continue
                return None
            spec = self.leaves.get(path)
            if spec is None:
                self._check_no_conflict(path)
                return None
            specs.append(spec)
        given = {p if p[-1] is not EMPTY else p[:-1] for p in paths}
        missing = [s for p, s in self.leaves.items() if not _covered(p, given)]
        plan = WritePlan(specs, missing)
        self._plans[paths] = plan
        return plan

    def _check_no_conflict(self, path: Path) -> None:
        for cut in range(1, len(path)):
            if path[:cut] in self.leaves:
                raise ValueError(
                    f"key '{path_name(path[:cut])}' is stored as an array, but the batch "
                    f"gives a Batch with key '{path_name(path)}' there",
                )
        if path in self.nodes and path not in self.empty_nodes:
            raise ValueError(
                f"key '{path_name(path)}' is stored as a Batch, but the batch gives a plain value",
            )


def _covered(path: Path, given: set[Path]) -> bool:
    return any(path[:cut] in given for cut in range(1, len(path) + 1))


def to_numpy(value: object) -> np.ndarray:
    """``value`` as a numpy array (tensors are detached and moved to the CPU)."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def as_flags(value: object, key: str) -> np.ndarray:
    """``value`` as a bool array: bools pass, numbers must be 0 or 1 (``1.0``, ``np.int8(0)``).

    Strings are refused rather than converted: ``bool("False")`` is True.

    :raises ValueError: naming ``key`` for any other value.
    """
    array = to_numpy(value)
    if array.dtype == object:
        array = np.asarray(array.tolist())  # e.g. Python bools collected in an object array
    if array.dtype == np.bool_:
        return array
    if array.dtype.kind in "iuf":
        valid = (array == 0) | (array == 1)
        if valid.all():
            return array.astype(bool)
        bad = array[~valid].reshape(-1)[0]
        raise ValueError(
            f"key '{key}' must hold booleans or the numbers 0 and 1, got {bad!r}",
        )
    raise ValueError(
        f"key '{key}' must hold booleans or the numbers 0 and 1, got {array.dtype} values "
        f"such as {array.reshape(-1)[:1].tolist()}; convert them (strings are not parsed)",
    )


def prepare_input(
    data: dict[str, Any],
    n: int | None,
    save_only_last_obs: bool,
    save_obs_next: bool,
    required_keys: Collection[str],
) -> tuple[dict[str, Any], np.ndarray, np.ndarray]:
    """Check the ``required_keys``; derive ``done``; apply the obs options; return the float64
    ``(n, r)`` rewards and the bool ``(n,)`` done flags for the bookkeeping kernel."""
    missing = sorted(key for key in required_keys if data.get(key) is None)
    if missing:
        raise ValueError(
            f"add() needs the keys {sorted(required_keys)}, but {missing} are missing; "
            f"got keys {list(data)}",
        )
    data = dict(data)
    flag_shape = () if n is None else (n,)
    if data.get("done") is not None:
        as_flags(data["done"], "done")  # recomputed below; checked so that typos surface
    for flag in ("terminated", "truncated"):
        value = to_numpy(data[flag])
        if value.dtype != np.bool_:
            value = as_flags(value, flag)
        if value.shape != flag_shape and value.size == max(n or 1, 1):
            value = value.reshape(flag_shape)  # tolerate extra singleton axes, e.g. (n, 1)
        data[flag] = value
    term, trunc = data["terminated"], data["truncated"]
    if term.shape != trunc.shape:
        raise ValueError(
            f"'terminated' has shape {term.shape} but 'truncated' has shape {trunc.shape}",
        )
    done = np.asarray(np.logical_or(term, trunc))
    data["done"] = done
    if save_only_last_obs:
        data["obs"] = data["obs"][:, -1] if n is not None else data["obs"][-1]
    if not save_obs_next:
        data.pop("obs_next", None)
    elif save_only_last_obs and data.get("obs_next") is not None:
        nxt = data["obs_next"]
        data["obs_next"] = nxt[:, -1] if n is not None else nxt[-1]
    rew = np.asarray(to_numpy(data["rew"]), dtype=np.float64)
    if n is None:
        if done.shape != ():
            raise ValueError(
                f"an un-stacked transition needs scalar flags, got terminated of shape "
                f"{term.shape}; pass buffer_ids to add a stacked batch",
            )
        return data, rew.reshape((1, *rew.shape)), done.reshape(1)
    if done.shape != (n,) or rew.shape[:1] != (n,):
        raise ValueError(
            f"the batch must have a leading dimension of {n} (len(buffer_ids)); got "
            f"terminated of shape {term.shape} and rew of shape {rew.shape}",
        )
    return data, rew, done


def flatten_input(data: Mapping[str, object]) -> tuple[list[Path], list[object]]:
    """Flatten a Batch's ``__dict__`` into parallel lists of key paths and leaf values."""
    paths: list[Path] = []
    values: list[object] = []
    _flatten(data, (), paths, values)
    return paths, values


def _flatten(
    data: Mapping[str, object], prefix: Path, paths: list[Path], values: list[object]
) -> None:
    for key, value in data.items():
        if is_batch(value):
            sub = value.__dict__
            if sub:
                _flatten(sub, (*prefix, key), paths, values)
            else:
                paths.append((*prefix, key, EMPTY))
                values.append(None)
        else:
            paths.append((*prefix, key))
            values.append(value)


def coerce(value: object, spec: LeafSpec, n: int | None) -> object:
    """Check ``value`` fits ``spec`` (``n`` rows, or one un-stacked row when ``n`` is None) and
    return it in a form that can be assigned without failing or losing information.

    :raises ValueError: naming the key on a shape mismatch or a lossy / impossible dtype change.
    """
    if type(value) is np.ndarray:
        shape = value.shape
        fits = shape[1:] == spec.tail and shape[0] == n if n is not None else shape == spec.tail
        if fits and value.dtype in spec.ok_dtypes:
            if n is None and not spec.is_tensor and spec.fill is None and not shape:
                return value[()]
            return value
    return _coerce_slow(value, spec, n)


def _coerce_slow(value: object, spec: LeafSpec, n: int | None) -> object:
    name = path_name(spec.path)
    if value is None:
        if spec.fill is None:
            return None
        raise ValueError(f"key '{name}': got None for a numeric field")
    if isinstance(value, torch.Tensor):
        if spec.is_tensor:
            return _coerce_tensor(value, spec, n, name)
        value = value.detach().cpu().numpy()
    original = value
    if not isinstance(value, np.ndarray):
        value = np.asarray(value)
    if spec.is_tensor:
        return _coerce_tensor(torch.as_tensor(value), spec, n, name)
    _check_shape(tuple(value.shape), spec, n, name)
    if spec.fill is None:  # object storage takes anything; keep a lone object as it was given
        if n is None and value.ndim == 0:
            return original if original is not value else value[()]
        return value
    return _coerce_numeric(value, spec, name)


def _check_shape(shape: tuple[int, ...], spec: LeafSpec, n: int | None, name: str) -> None:
    if n is None:
        if shape != spec.tail:
            raise ValueError(
                f"key '{name}': got a value of shape {shape}, the buffer stores rows of shape "
                f"{spec.tail} for it",
            )
    elif not shape or shape[0] != n:
        raise ValueError(
            f"key '{name}': got a value of shape {shape}, expected a leading dimension of {n} "
            f"(one row per entry of buffer_ids)",
        )
    elif shape[1:] != spec.tail:
        raise ValueError(
            f"key '{name}': got rows of shape {shape[1:]}, the buffer stores rows of shape "
            f"{spec.tail} for it",
        )


def _coerce_numeric(value: np.ndarray, spec: LeafSpec, name: str) -> np.ndarray:
    target = spec.array
    assert isinstance(target, np.ndarray)
    src, dst = value.dtype, target.dtype
    if src.kind in "biufc":
        lossless = np.can_cast(src, dst, "same_kind") or (dst.kind == "b" and src.kind in "iu")
        if not lossless:
            raise ValueError(
                f"key '{name}': cannot store {src} values in the buffer's {dst} field without "
                f"losing information; convert them first",
            )
        spec.ok_dtypes.add(src)
        return value
    try:
        return np.asarray(value, dtype=dst)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"key '{name}': cannot store {src} values in a {dst} field: {err}"
        ) from None


def _coerce_tensor(
    value: torch.Tensor,
    spec: LeafSpec,
    n: int | None,
    name: str,
) -> torch.Tensor:
    _check_shape(tuple(value.shape), spec, n, name)
    target = spec.array
    assert isinstance(target, torch.Tensor)
    if value.is_floating_point() and not target.is_floating_point():
        raise ValueError(
            f"key '{name}': cannot store {value.dtype} values in a {target.dtype} field"
        )
    return value.to(device=target.device, dtype=target.dtype)


def write(specs: list[LeafSpec | None], values: list[Any], rows: Any, span: slice | None) -> None:
    """Assign already-coerced ``values`` at ``rows`` (an int, or an int64 array).

    ``span``, when given, is ``rows`` as a strided slice; multi-dimensional numpy leaves are
    written through it, which is several times faster than fancy indexing.
    """
    tensor_rows = None
    for spec, value in zip(specs, values, strict=True):
        if spec is None:
            continue
        if spec.is_tensor:
            if tensor_rows is None:
                tensor_rows = torch.as_tensor(rows)
            spec.array[tensor_rows] = value
        elif span is not None and spec.tail:
            spec.array[span] = value
        else:
            spec.array[rows] = value


def fill(specs: list[LeafSpec], rows: int | np.ndarray) -> None:
    """Zero (numeric) or None (object) the given storage leaves at ``rows``."""
    for spec in specs:
        array = spec.array
        if isinstance(array, torch.Tensor):
            array[torch.as_tensor(rows)] = 0
        else:
            array[rows] = spec.fill


def gather(node: Any, index: Any) -> Any:
    """Index every leaf of a storage (sub)tree with ``index``; Batches are rebuilt, empty
    sub-Batches and None leaves are carried through."""
    kind = type(node)
    if kind is np.ndarray:
        # take() is several times faster than fancy indexing for multi-dimensional arrays
        return node.take(index, axis=0) if type(index) is np.ndarray else node[index]
    if is_batch(node):
        data = node.__dict__
        if not data:
            return Batch()
        return batch_of_parsed_values({k: gather(v, index) for k, v in data.items()})
    if node is None:
        return None
    if isinstance(node, torch.Tensor) and isinstance(index, np.ndarray):
        return node[torch.from_numpy(index)]
    return node[index]


def slice_view(node: Any, part: slice) -> Any:
    """Rows ``part`` of every leaf as views sharing memory with ``node`` (sub-buffer storage)."""
    if is_batch(node):
        return batch_of_parsed_values({k: slice_view(v, part) for k, v in node.__dict__.items()})
    if node is None:
        return None
    return node[part]


def null_rows(node: object, index: np.ndarray) -> np.ndarray:
    """Boolean mask over ``index``: True where any leaf holds NaN or None at that row."""
    mask = np.zeros(len(index), dtype=bool)
    for leaf in _leaves(node):
        rows = leaf[torch.from_numpy(index)] if isinstance(leaf, torch.Tensor) else leaf[index]
        if isinstance(rows, torch.Tensor):
            bad = (
                torch.isnan(rows)
                if rows.is_floating_point()
                else torch.zeros_like(rows, dtype=torch.bool)
            )
            bad_np = bad.reshape(len(index), -1).any(dim=1).cpu().numpy()
        elif rows.dtype == object:
            flat = rows.reshape(len(index), -1)
            bad_np = np.array([any(_is_null(x) for x in row) for row in flat], dtype=bool)
        elif rows.dtype.kind in "fc":
            bad_np = np.isnan(rows).reshape(len(index), -1).any(axis=1)
        else:
            continue
        mask |= bad_np
    return mask


def _is_null(x: object) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def _leaves(node: object) -> list[np.ndarray | torch.Tensor]:
    if is_batch(node):
        return [leaf for v in node.__dict__.values() for leaf in _leaves(v)]
    if isinstance(node, np.ndarray | torch.Tensor):
        return [node]
    return []
