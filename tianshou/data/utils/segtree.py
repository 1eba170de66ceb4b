"""A sum segment tree: the sampling structure behind prioritized experience replay.

Prioritized replay draws transition ``i`` with probability ``p_i / sum(p)``. Keeping the
priorities in the leaves of a complete binary tree whose inner nodes hold the sum of their
children makes both changing a priority and drawing an index ``O(log n)``: a draw picks a uniform
target in ``[0, sum(p))`` and walks from the root towards the leaf whose prefix-sum interval
contains it.

The tree is stored heap-style in one float64 array ``_value`` of length ``2 * bound`` (``bound``
is the smallest power of two ``>= size``): node 1 is the root, the children of node ``k`` are
``2k`` and ``2k + 1``, and leaf ``i`` lives at ``bound + i``. The batched loops (write leaves,
descend) run in numba kernels compiled on first use and cached on disk, so importing this module
does not import numba. They work level by level over the whole batch of leaves or queries: the
memory reads of one level are independent of each other, which lets the CPU overlap their cache
misses instead of waiting for one root-to-leaf chain at a time.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["InvalidValueError", "SegmentTree", "TreeIndexError", "compile_kernel"]


class InvalidValueError(ValueError, AssertionError):
    """A value outside the range an operation accepts (a negative tree value, an out-of-range
    search target, a prioritized buffer's alpha or beta).

    Also an ``AssertionError``: the published library checked these with ``assert``, so code
    written for it that expects an AssertionError keeps working.
    """


class TreeIndexError(IndexError, AssertionError):
    """A leaf index outside ``[0, size)`` (also an ``AssertionError``, see InvalidValueError)."""


_compiled: dict[Callable[..., Any], Callable[..., Any]] = {}


def compile_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The numba-compiled version of the module-level loop function ``fn``, compiled on first
    use and cached on disk, so that importing a module that defines kernels never imports numba.
    Float arithmetic follows numpy (division by zero gives inf/NaN instead of raising).
    """
    compiled = _compiled.get(fn)
    if compiled is None:
        import numba

        compiled = _compiled[fn] = numba.njit(cache=True, nogil=True, error_model="numpy")(fn)
    return compiled


def _write_leaves(
    tree: np.ndarray,
    bound: int,
    size: int,
    index: np.ndarray,
    value: np.ndarray,
) -> int:
    """Set leaves ``index`` to ``value`` (in order, so a repeated index keeps its last value) and
    recompute the sums above them level by level.

    Near the root the batch's paths share nodes: once a level has no more nodes than the batch
    has entries, every node of it and of the levels above is recomputed in one sequential sweep,
    which is less work than following the paths and gives the same sums (each node is always its
    children's sum, so recomputing an untouched node reproduces it).

    Nothing is written when the input is invalid: returns ``-(j + 1)`` if ``index[j]`` is outside
    ``[0, size)``, ``j + 1`` if ``value[j]`` is negative or NaN, else 0.
    """
    n = index.shape[0]
    for j in range(n):
        if index[j] < 0 or index[j] >= size:
            return -(j + 1)
        if not value[j] >= 0.0:
            return j + 1
    nodes = np.empty(n, np.int64)
    for j in range(n):
        nodes[j] = index[j] + bound
        tree[nodes[j]] = value[j]
    width = bound  # number of nodes on the level that ``nodes`` points into
    while width >> 1 > n:
        for j in range(n):
            parent = nodes[j] >> 1
            tree[parent] = tree[2 * parent] + tree[2 * parent + 1]
            nodes[j] = parent
        width >>= 1
    for parent in range(width - 1, 0, -1):  # children before parents: the nodes above, bottom up
        tree[parent] = tree[2 * parent] + tree[2 * parent + 1]
    return 0


def _descend(
    query: np.ndarray,
    total: float,
    from_uniform: bool,
    bound: int,
    tree: np.ndarray,
    out: np.ndarray,
    leaf_values: np.ndarray,
    divisor: float,
) -> None:
    """For every target ``v`` write the smallest leaf ``i`` with ``v <= sum(leaves[:i + 1])`` to
    ``out`` and that leaf's value divided by ``divisor``, read while it is in cache, to
    ``leaf_values`` (a caller scaling the values saves a pass over them; 1.0 keeps them exact).

    The targets are ``query`` itself, or ``(1 - query) * total`` when ``from_uniform`` (uniform
    draws in ``[0, 1)`` become targets in ``(0, total]``). A subtree whose sum is 0 is never
    entered when its sibling is positive, so rounding in the running remainder cannot lead a
    search past the last positive leaf, and a positive target never ends on a zero leaf.
    """
    n = query.shape[0]
    remainder = np.empty(n)
    for j in range(n):
        remainder[j] = (1.0 - query[j]) * total if from_uniform else query[j]
        out[j] = 1
    width = bound
    while width > 1:
        for j in range(n):
            left = 2 * out[j]
            left_sum = tree[left]
            right = (left_sum < remainder[j]) & (tree[left + 1] > 0.0)
            remainder[j] -= left_sum * right
            out[j] = left + right
        width >>= 1
    for j in range(n):
        leaf_values[j] = tree[out[j]] / divisor
        out[j] -= bound


class SegmentTree:
    """Leaf values ``arr[0..size)`` with ``O(log size)`` updates, range sums and prefix-sum search.

    All leaves start at 0. Values must be non-negative (they are sampling priorities).

    >>> tree = SegmentTree(4)
    >>> tree[np.arange(4)] = np.array([1.0, 0.0, 2.0, 1.0])
    >>> float(tree.reduce()), float(tree.reduce(1, 3))
    (4.0, 2.0)
    >>> tree.get_prefix_sum_idx(np.array([0.5, 1.0, 1.5, 3.5]))
    array([0, 0, 2, 3])

    :param size: number of leaves (0 gives a tree that holds nothing).
    """

    def __init__(self, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 0:
            raise ValueError(f"SegmentTree size must be a non-negative integer, got {size!r}")
        bound = 1
        while bound < size:
            bound *= 2
        self._size = int(size)
        self._bound = bound
        self._value = np.zeros(2 * bound)

    def __len__(self) -> int:
        return self._size

    def __repr__(self) -> str:
        return f"SegmentTree(size={self._size}, sum={self.reduce()})"

    def _flat_index(self, index: int | slice | np.ndarray) -> np.ndarray:
        """``index`` (int, slice or int array-like) as a flat int64 array (not range-checked)."""
        if type(index) is np.ndarray and index.dtype == np.int64 and index.ndim == 1:
            return index
        if isinstance(index, slice):
            return np.arange(self._size)[index]
        arr = np.asarray(index)
        if arr.dtype.kind not in "iu" and arr.size:
            raise TypeError(f"SegmentTree indices must be integers, got dtype {arr.dtype}")
        return arr.astype(np.int64).reshape(-1)

    def __getitem__(self, index: int | slice | np.ndarray) -> Any:
        """Leaf value(s): a float for an int index, an array (shaped like ``index``) otherwise.

        :raises TreeIndexError: for an index outside ``[0, size)``.
        """
        if isinstance(index, int | np.integer):
            if not 0 <= index < self._size:
                raise TreeIndexError(f"SegmentTree index {index} is outside [0, {self._size})")
            return self._value[index + self._bound]
        flat = self._flat_index(index)
        if flat.size and (flat.min() < 0 or flat.max() >= self._size):
            bad = flat[(flat < 0) | (flat >= self._size)][0]
            raise TreeIndexError(f"SegmentTree index {bad} is outside [0, {self._size})")
        shape = flat.shape if isinstance(index, slice) else np.shape(index)
        return self._value[flat + self._bound].reshape(shape)

    def __setitem__(self, index: int | slice | np.ndarray, value: float | np.ndarray) -> None:
        """Set leaf value(s); a scalar ``value`` is broadcast. Within one call a repeated index
        takes its last value.

        :raises TreeIndexError: for an index outside ``[0, size)``.
        :raises InvalidValueError: for negative or NaN values, or a ``value`` whose size does not
            match ``index``.
        """
        flat = self._flat_index(index)
        values = np.asarray(value, dtype=np.float64)
        if values.ndim == 0:
            values = np.full(flat.shape, values)
        elif values.size != flat.size:
            raise InvalidValueError(
                f"SegmentTree got {values.size} values for {flat.size} indices; pass one value "
                f"per index or a scalar",
            )
        self._write(flat, values.reshape(-1))

    def _leaf_values(self) -> np.ndarray:
        """The leaves ``[0, size)`` as a view into the tree (read-only use: writes go through
        :meth:`_write`, which also updates the sums)."""
        return self._value[self._bound : self._bound + self._size]

    def _clear(self) -> None:
        """Set every leaf (and so every sum) to 0."""
        self._value[:] = 0.0

    def _write(self, index: np.ndarray, value: np.ndarray) -> None:
        """Write 1-D int64 ``index`` / float64 ``value`` of equal length (validated in the kernel).

        :raises TreeIndexError: for an index outside ``[0, size)``.
        :raises InvalidValueError: for a negative or NaN value.
        """
        code = compile_kernel(_write_leaves)(self._value, self._bound, self._size, index, value)
        if code < 0:
            raise TreeIndexError(
                f"SegmentTree index {index[-code - 1]} is outside [0, {self._size})",
            )
        if code > 0:
            raise InvalidValueError(
                f"SegmentTree values must be non-negative and not NaN, got {value[code - 1]} "
                f"for index {index[code - 1]}",
            )

    def reduce(self, start: int = 0, end: int | None = None) -> float:
        """Sum of the leaves in ``[start, end)``; ``end`` defaults to ``size`` and a negative
        ``end`` counts from the back (``reduce(end=-1)`` skips the last leaf).

        :raises TreeIndexError: if the range is not within ``[0, size]`` or ``start > end``.
        """
        if start == 0 and end is None:
            return self._value[1]
        end = self._size if end is None else end + self._size if end < 0 else end
        if not 0 <= start <= end <= self._size:
            raise TreeIndexError(
                f"reduce range [{start}, {end}) is not within [0, {self._size}]",
            )
        # walk up from the open interval (start - 1, end) of leaf positions, adding the nodes
        # that lie inside it and are left behind by the bounds' parents
        tree = self._value
        lo, hi = start + self._bound - 1, end + self._bound
        result = 0.0
        while hi - lo > 1:
            if lo % 2 == 0:
                result += tree[lo + 1]
            if hi % 2 == 1:
                result += tree[hi - 1]
            lo //= 2
            hi //= 2
        return result

    def get_prefix_sum_idx(self, value: float | np.ndarray) -> int | np.ndarray:
        """The smallest index ``i`` with ``v <= sum(arr[:i + 1])`` for each ``v`` in ``value``.

        Drawing ``v`` uniformly from ``[0, reduce())`` and searching it samples index ``i`` with
        probability ``arr[i] / reduce()``.

        :return: an int for a scalar ``value``, else an int64 array shaped like ``value``.
        :raises InvalidValueError: if some ``v`` is outside ``[0, reduce())`` (or NaN).
        """
        scalar = not isinstance(value, np.ndarray)
        arr = np.asarray(value, dtype=np.float64)
        flat = np.ascontiguousarray(arr.reshape(-1))
        total = self._value[1]
        if flat.size and not (flat.min() >= 0.0 and flat.max() < total):
            raise InvalidValueError(
                f"prefix-sum targets must lie in [0, {total}) (the tree's sum), got values in "
                f"[{flat.min()}, {flat.max()}]",
            )
        out, _ = self._search(flat, 1.0, False)
        return int(out[0]) if scalar else out.reshape(arr.shape)

    def sample(self, uniform: np.ndarray) -> np.ndarray:
        """Leaf indices drawn with probability proportional to their values, one per entry of
        ``uniform`` (1-D draws from ``[0, 1)``). Never returns a zero leaf while the sum is
        positive; the caller must make sure it is.
        """
        return self._search(uniform, self._value[1], True)[0]

    def _sample_with_values(
        self, uniform: np.ndarray, divisor: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`sample`, plus the values of the drawn leaves divided by ``divisor`` (read while
        they are in cache; the division is the one ``values / divisor`` would do)."""
        return self._search(uniform, self._value[1], True, divisor)

    def _search(
        self, query: np.ndarray, total: float, from_uniform: bool, divisor: float = 1.0
    ) -> tuple[np.ndarray, np.ndarray]:
        count = query.shape[0]
        out, values = np.empty(count, np.int64), np.empty(count)
        kernel = compile_kernel(_descend)
        kernel(query, total, from_uniform, self._bound, self._value, out, values, divisor)
        return out, values
