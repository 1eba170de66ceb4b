"""Proof that the CI gates bite: deliberate mutations of the library, each of which a gate must
refuse with a message naming what changed, and which must pass again once reverted.

Each mutation is applied to a fresh ``git worktree`` of ``HEAD`` (the checkout itself is never
touched), the gate that should catch it runs there with this environment's Python (the
worktree's packages come first on the module path), then the same gate runs on the unmutated
worktree:

- the collector made 20% slower (a busy wait of a quarter of each ``collect`` call's time):
  ``perf_guard`` must report ``collect_hopper_1env`` below its floor;
- PPO's update made 20% slower the same way: ``perf_guard`` must report ``ppo_update``;
- PPO's clip range changed from 0.2 to 0.3: the golden trajectories must name a PPO run;
- the update counters dropped from checkpoints: the resume tests must name the TD3 runs.

    python -m benchmark.mutations            # all four, about 5 minutes
    python -m benchmark.mutations --only ppo_clip_range

Prints one JSON line per mutation: whether the gate failed with the mutation and named it, and
whether it passed without.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmark.common import emit

REPO_ROOT = Path(__file__).resolve().parents[1]

SLOWER = """

import time as _mutation_time


def _slower(method):  # mutation: every call takes a quarter longer (20% less throughput)
    def slower(*args, **kwargs):
        start = _mutation_time.perf_counter()
        result = method(*args, **kwargs)
        end = _mutation_time.perf_counter() + 0.25 * (_mutation_time.perf_counter() - start)
        while _mutation_time.perf_counter() < end:
            pass
        return result

    return slower


{target} = _slower({target})
"""


@dataclass(frozen=True)
class Mutation:
    """A change to one file, the gate that must catch it, and the text its failure must show."""

    name: str
    path: str
    old: str | None
    new: str
    gate: tuple[str, ...]
    expected: str

    def apply(self, root: Path) -> None:
        target = root / self.path
        text = target.read_text()
        if self.old is None:  # appended at the end of the module
            target.write_text(text + self.new)
            return
        if self.old not in text:
            raise RuntimeError(f"{self.name}: {self.path} no longer contains {self.old!r}")
        target.write_text(text.replace(self.old, self.new, 1))


PERF_GUARD = ("-m", "benchmark.perf_guard", "--only")
MUTATIONS = (
    Mutation(
        "collector_20pct_slower",
        "tianshou/data/collector.py",
        None,
        SLOWER.format(target="Collector.collect"),
        (*PERF_GUARD, "collect_hopper_1env", "collect_hopper_8env"),
        "BELOW: collect_hopper_1env",
    ),
    Mutation(
        "ppo_update_20pct_slower",
        "tianshou/algorithm/modelfree/ppo.py",
        None,
        SLOWER.format(target="PPO._update_with_batch"),
        (*PERF_GUARD, "ppo_update"),
        "BELOW: ppo_update",
    ),
    Mutation(
        "ppo_clip_range",
        "tianshou/algorithm/modelfree/ppo.py",
        "eps_clip: float = 0.2,",
        "eps_clip: float = 0.3,",
        ("-m", "pytest", "-q", "-p", "no:cacheprovider", "test/golden", "-k", "PPO"),
        "learns differently from its golden trajectory",
    ),
    Mutation(
        "checkpoint_drops_counters",
        "tianshou/algorithm/_checkpoint_extras.py",
        "for name in module._checkpointed_counters:",
        "for name in ():",
        ("-m", "pytest", "-q", "-p", "no:cacheprovider", "test/trainer/test_resume_families.py"),
        "td3-delayed-actor-targets",
    ),
)


def run_gate(root: Path, gate: Sequence[str]) -> tuple[int, str]:
    result = subprocess.run(
        [sys.executable, *gate], cwd=root, capture_output=True, text=True, check=False
    )
    return result.returncode, result.stdout + result.stderr


def check(mutation: Mutation) -> dict[str, object]:
    """Run ``mutation``'s gate with and without it, each in a fresh worktree of HEAD."""
    outcome: dict[str, object] = {"bench": "mutation", "mutation": mutation.name}
    for mutated in (True, False):
        folder = Path(tempfile.mkdtemp(prefix=f"mutation-{mutation.name}-"))
        worktree = folder / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(worktree), "HEAD"],
            cwd=REPO_ROOT, capture_output=True, check=True,
        )  # fmt: skip
        try:
            if mutated:
                mutation.apply(worktree)
            code, output = run_gate(worktree, mutation.gate)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(worktree)],
                cwd=REPO_ROOT, capture_output=True, check=False,
            )  # fmt: skip
            shutil.rmtree(folder, ignore_errors=True)
        if mutated:
            outcome["caught"] = code != 0 and mutation.expected in output
            # the last line naming it: pytest's summary line, or the gate's verdict
            named = [line.strip() for line in output.splitlines() if mutation.expected in line]
            outcome["message"] = named[-1][:200] if named else ""
        else:
            outcome["passes_when_reverted"] = code == 0
    outcome["ok"] = bool(outcome["caught"] and outcome["passes_when_reverted"])
    return outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmark.mutations")
    parser.add_argument("--only", nargs="+", choices=[m.name for m in MUTATIONS])
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    results = [check(mutation) for mutation in chosen]
    for result in results:
        emit(result)
    return 0 if all(result["ok"] for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
