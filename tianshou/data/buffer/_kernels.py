"""Loop kernels behind the buffers' hot bookkeeping, compiled by numba on first use.

Each kernel is a plain Python function written in the subset numba compiles; :func:`jit` turns it
into a cached machine-code version the first time a buffer needs it, so ``import tianshou`` never
pays for importing numba or compiling. A sub-buffer layout is described by per-sub-buffer arrays:
``offsets`` (first global row), ``maxsizes`` and the int64 state matrix ``istate`` whose rows are
indexed by the ``INS``/``SIZE``/``LAST``/``EP_LEN``/``EP_START`` constants below (all row values
are local to their sub-buffer).
"""

from collections.abc import Callable
from typing import Any

import numpy as np

INS, SIZE, LAST, EP_LEN, EP_START = range(5)
N_STATE_ROWS = 5

_compiled: dict[str, Callable[..., Any]] = {}


_HELPERS = ("_locate", "_next_row")


def jit(name: str) -> Callable[..., Any]:
    """Return the numba-compiled version of the kernel called ``name`` (compiling it once).

    Helpers called from kernels are compiled first and replace their module-level Python
    version, since numba resolves a kernel's callees from the module's globals.
    """
    fn = _compiled.get(name)
    if fn is None:
        import numba

        for helper in _HELPERS:
            if helper not in _compiled:
                _compiled[helper] = globals()[helper] = numba.njit(cache=True)(globals()[helper])
        fn = numba.njit(cache=True, nogil=True)(globals()[name])
        _compiled[name] = fn
    return fn


def add_bookkeeping(
    ids: np.ndarray,
    rew: np.ndarray,
    done: np.ndarray,
    istate: np.ndarray,
    ep_ret: np.ndarray,
    offsets: np.ndarray,
    maxsizes: np.ndarray,
    out_int: np.ndarray,
    out_ret: np.ndarray,
) -> int:
    """Reserve one row per transition and update the episode accumulators, in order.

    ``rew`` is ``(n, r)`` (a scalar reward is ``r == 1``) and ``ep_ret`` is ``(k, r)``. Transitions
    are processed sequentially, so a sub-buffer named twice in ``ids`` gets two consecutive rows.
    Fills ``out_int`` (``(3, n)``: global row, episode length, global episode start) and
    ``out_ret`` (``(n, r)`` episode returns); return and length are 0 unless the step ends an
    episode. Returns ``-(j + 1)`` if ``ids[j]`` is out of range or names a sub-buffer of size 0
    (nothing is modified then); otherwise the step of the rows if they form an increasing
    arithmetic progression (so they can be written through a strided slice), else 0.
    """
    n = ids.shape[0]
    k = offsets.shape[0]
    for j in range(n):
        if ids[j] < 0 or ids[j] >= k or maxsizes[ids[j]] == 0:
            return -(j + 1)
    width = rew.shape[1]
    for j in range(n):
        b = ids[j]
        ptr = istate[INS, b]
        out_int[0, j] = ptr + offsets[b]
        istate[LAST, b] = ptr
        istate[INS, b] = (ptr + 1) % maxsizes[b]
        if istate[SIZE, b] < maxsizes[b]:
            istate[SIZE, b] += 1
        for c in range(width):
            ep_ret[b, c] += rew[j, c]
            out_ret[j, c] = 0.0
        istate[EP_LEN, b] += 1
        out_int[1, j] = 0
        out_int[2, j] = istate[EP_START, b] + offsets[b]
        if done[j]:
            for c in range(width):
                out_ret[j, c] = ep_ret[b, c]
                ep_ret[b, c] = 0.0
            out_int[1, j] = istate[EP_LEN, b]
            istate[EP_LEN, b] = 0
            istate[EP_START, b] = istate[INS, b]
    step = out_int[0, 1] - out_int[0, 0] if n > 1 else 1
    for j in range(1, n):
        if step <= 0 or out_int[0, j] - out_int[0, j - 1] != step:
            return 0
    return step


def _locate(i: int, offsets: np.ndarray) -> int:
    """Index of the sub-buffer holding global row ``i`` (offsets are sorted and start at 0)."""
    lo, hi = 0, offsets.shape[0] - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= i:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prev_index(
    index: np.ndarray,
    offsets: np.ndarray,
    total: int,
    done: np.ndarray,
    istate: np.ndarray,
) -> np.ndarray:
    """Row of the step before each ``index`` in the same episode, or the index itself at a start.

    ``index`` is first wrapped into ``[0, total)``; inside a sub-buffer positions are taken modulo
    its current length, and the newest row (``LAST``) never precedes the oldest one.
    """
    out = np.empty_like(index)
    for j in range(index.shape[0]):
        i = index[j] % total
        b = _locate(i, offsets)
        start = offsets[b]
        length = max(1, istate[SIZE, b])
        p = (i - start - 1) % length
        if done[p + start] or p == istate[LAST, b]:
            p = (p + 1) % length
        out[j] = p + start
    return out


def next_index(
    index: np.ndarray,
    offsets: np.ndarray,
    total: int,
    done: np.ndarray,
    istate: np.ndarray,
) -> np.ndarray:
    """Row of the step after each ``index`` in the same episode, or the index itself at an end."""
    out = np.empty_like(index)
    for j in range(index.shape[0]):
        out[j] = _next_row(index[j], offsets, total, done, istate)
    return out


def _next_row(
    index: int, offsets: np.ndarray, total: int, done: np.ndarray, istate: np.ndarray
) -> int:
    """``next_index`` of one row: wrapped into ``[0, total)``, then one step on unless it ends an
    episode or is its sub-buffer's newest row."""
    i = index % total
    b = _locate(i, offsets)
    start = offsets[b]
    length = max(1, istate[SIZE, b])
    p = (i - start) % length
    if not (done[p + start] or p == istate[LAST, b]):
        p = (p + 1) % length
    return p + start


def nstep_sums(
    index: np.ndarray,
    offsets: np.ndarray,
    total: int,
    done: np.ndarray,
    istate: np.ndarray,
    rew: np.ndarray,
    gamma: float,
    n_step: int,
    reward_sum: np.ndarray,
    discount: np.ndarray,
    last: np.ndarray,
) -> None:
    """Follow each ``index`` for up to ``n_step`` rows of its episode (as ``next_index`` does,
    stopping where it stays put), filling ``reward_sum`` with the float64 sum of
    ``gamma ** k * rew`` of the rows visited, ``discount`` with ``gamma ** k`` for the ``k``
    rewards summed and ``last`` with the last row visited."""
    for j in range(index.shape[0]):
        row = index[j]
        acc = np.float64(rew[row])
        power = np.float64(gamma)
        reached = power
        for _ in range(n_step - 1):
            following = _next_row(row, offsets, total, done, istate)
            if following == row:
                break
            acc += power * np.float64(rew[following])
            power = power * gamma
            reached = power
            row = following
        reward_sum[j] = acc
        discount[j] = reached
        last[j] = row


def uniform_to_rows(uniform: np.ndarray, offsets: np.ndarray, istate: np.ndarray) -> np.ndarray:
    """Map uniform draws in ``[0, 1)`` to stored rows, uniformly over all stored transitions
    (positions are counted sub-buffer after sub-buffer)."""
    k = offsets.shape[0]
    total = 0
    for b in range(k):
        total += istate[SIZE, b]
    out = np.empty(uniform.shape[0], np.int64)
    for j in range(uniform.shape[0]):
        d = min(int(uniform[j] * total), total - 1)
        b = 0
        while b < k - 1 and d >= istate[SIZE, b]:
            d -= istate[SIZE, b]
            b += 1
        out[j] = offsets[b] + d
    return out


def chronological_rows(offsets: np.ndarray, istate: np.ndarray) -> np.ndarray:
    """Every stored row, sub-buffer after sub-buffer, each from its oldest to its newest row."""
    k = offsets.shape[0]
    total = 0
    for b in range(k):
        total += istate[SIZE, b]
    out = np.empty(total, np.int64)
    pos = 0
    for b in range(k):
        size = istate[SIZE, b]
        ins = istate[INS, b]
        for i in range(ins, size):
            out[pos] = offsets[b] + i
            pos += 1
        for i in range(min(ins, size)):
            out[pos] = offsets[b] + i
            pos += 1
    return out
