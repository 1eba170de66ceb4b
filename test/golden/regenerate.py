"""Rewrite golden trajectories on purpose, printing what changed (see ``trajectories.py``).

    python -m test.golden.regenerate PPO SAC
    python -m test.golden.regenerate --all

Name each regeneration and its reason in CHANGELOG.md: a golden file changes only when what an
algorithm learns was meant to change.
"""

import argparse
from collections.abc import Sequence

from test.golden.trajectories import RUNS, differences, load, record, save


def regenerate(name: str) -> list[str]:
    """Record run ``name`` afresh, write its file and return how it differs from the old one."""
    fresh = record(name)
    old = load(name)
    changes = ["new golden file"] if old is None else differences(old, fresh)
    save(fresh)
    return changes


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m test.golden.regenerate")
    parser.add_argument("names", nargs="*", help=f"runs to rewrite, of: {', '.join(RUNS)}")
    parser.add_argument("--all", action="store_true", help="rewrite every run's file")
    args = parser.parse_args(argv)
    names = list(RUNS) if args.all else args.names
    unknown = sorted(set(names) - RUNS.keys())
    if unknown or not names:
        parser.error(f"name runs of {', '.join(RUNS)} (or --all); unknown: {unknown}")
    for name in names:
        changes = regenerate(name)
        print(f"{name}: {'unchanged' if not changes else f'{len(changes)} change(s)'}")
        for line in changes[:20]:
            print(f"  {line}")
        if len(changes) > 20:
            print(f"  ... and {len(changes) - 20} more")


if __name__ == "__main__":
    main()
