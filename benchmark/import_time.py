"""Import cost of ``tianshou`` on top of its unavoidable dependencies (torch, gymnasium).

Each measurement starts a fresh interpreter, so nothing is cached in memory; the best of several
runs is kept. Target: ``import tianshou`` costs at most 0.5 s more than ``import torch, gymnasium``.
"""

import subprocess
import sys
import time

from benchmark.timing import emit

RUNS = 7
TARGET_EXTRA_SECONDS = 0.5


def best_import_seconds(statement: str) -> float:
    best = float("inf")
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    baseline = best_import_seconds("import torch, gymnasium")
    with_tianshou = best_import_seconds("import torch, gymnasium, tianshou")
    extra = with_tianshou - baseline
    emit(
        {
            "bench": "import_tianshou",
            "baseline_s": baseline,
            "with_tianshou_s": with_tianshou,
            "extra_s": extra,
            "target_extra_s": TARGET_EXTRA_SECONDS,
            "ok": extra <= TARGET_EXTRA_SECONDS,
        }
    )


if __name__ == "__main__":
    main()
