"""Import cost of ``tianshou`` on top of its unavoidable dependencies (torch, gymnasium).

Each measurement starts a fresh interpreter, so nothing is cached in memory; the best of several
runs is kept. Target: ``import tianshou`` costs at most 0.5 s more than ``import torch, gymnasium``.

    python -m benchmark.import_time [--runs 7]
"""

import argparse
import subprocess
import sys
import time
from collections.abc import Sequence

from benchmark.common import emit

RUNS = 7
TARGET_EXTRA_SECONDS = 0.5


def best_import_seconds(statement: str, runs: int = RUNS) -> float:
    """The fastest of ``runs`` fresh interpreters running ``statement``, in wall seconds."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="fresh interpreters per statement")
    args = parser.parse_args(argv)
    baseline = best_import_seconds("import torch, gymnasium", args.runs)
    with_tianshou = best_import_seconds("import torch, gymnasium, tianshou", args.runs)
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
