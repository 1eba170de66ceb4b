"""Shared timing helpers for the benchmark scripts: best-of-N wall clock and JSON-line output."""

import json
import time
from collections.abc import Callable
from typing import Any


def seconds_per_call(
    fn: Callable[[], Any],
    min_time: float = 0.2,
    repeat: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Best-of-``repeat`` mean seconds per call of ``fn``, timed by ``clock`` (wall clock by
    default; ``time.process_time`` counts only this process's CPU time, which stays meaningful
    when other processes crowd the cores).

    The call count per repeat is grown until one repeat lasts at least ``min_time`` seconds, so
    fast operations are not dominated by the clock's resolution. Taking the best repeat filters
    out interference from other processes on a shared machine. One untimed warm-up call comes
    first, so one-off costs (lazy allocation, loading cached numba kernels) do not pin the call
    count at one.
    """
    fn()
    number = 1
    while True:
        start = clock()
        for _ in range(number):
            fn()
        elapsed = clock() - start
        if elapsed >= min_time:
            break
        number *= 2 if elapsed <= 0 else max(2, int(min_time / elapsed) + 1)
    best = elapsed / number
    for _ in range(repeat - 1):
        start = clock()
        for _ in range(number):
            fn()
        best = min(best, (clock() - start) / number)
    return best


def emit(record: dict[str, Any]) -> None:
    """Print one benchmark result as a JSON line (floats rounded for readability)."""
    rounded = {k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}
    print(json.dumps(rounded), flush=True)
