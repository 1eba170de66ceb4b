"""What one run of a campaign is, where it writes, and the script command line that realises it.

A run is one ``examples/mujoco/mujoco_<algorithm>.py`` training on one task with one seed. Its
configuration is the script's own defaults (the published MuJoCo configuration); the runner
only sets the task, the seed, where to log, and the epoch split that spends the run's budget of
env steps. Nothing here copies a hyper-parameter: the script's parser is the one source.
"""

import argparse
import contextlib
import importlib
import io
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from tianshou.utils.cli import current_option_name

EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples" / "mujoco"
"""The scripts' directory (the package ``examples.mujoco``)."""

RUNNER_OPTIONS = frozenset(
    {
        "task",
        "seed",
        "epoch",
        "persistence_base_dir",
        "resume_path",
        "resume_from_log",
        "save_checkpoints",
        "watch",
        "render",
        "no_progress",
    }
)
"""Script options the runner sets itself, so a ``--config`` override may not."""

SCRIPT_LOG_DIR = "log"
"""The run directory's subdirectory given to the script as ``--persistence-base-dir``."""


def available_algorithms() -> list[str]:
    """The algorithms that have a MuJoCo script (``mujoco_<algorithm>.py``, not the ``_hl``
    high-level variants)."""
    names = (path.stem.removeprefix("mujoco_") for path in EXAMPLES_DIR.glob("mujoco_*.py"))
    return sorted(name for name in names if name != "env" and not name.endswith("_hl"))


def load_script(algorithm: str) -> ModuleType:
    """The module of ``algorithm``'s script (it has ``get_args(argv)`` and ``main(argv)``),
    ``examples.mujoco.mujoco_<algorithm>``, importable from the repository root."""
    known = available_algorithms()
    if algorithm not in known:
        raise ValueError(f"no MuJoCo script for algorithm {algorithm!r}; known: {known}")
    return importlib.import_module(f"examples.mujoco.mujoco_{algorithm}")


@dataclass(frozen=True)
class RunSpec:
    """One run: ``algorithm``'s script on ``task`` with ``seed``, for ``env_steps`` env steps.

    :param env_steps: the budget of env interactions, the off-policy scripts' uniformly random
        warm-up (``--start-timesteps``) included.
    :param overrides: extra script options (``("--num-test-envs", "2")``) applied before the
        runner's own; part of the run's identity, so a rerun with other overrides is refused
        rather than mixed with finished runs.
    """

    task: str
    algorithm: str
    seed: int
    env_steps: int
    overrides: tuple[str, ...] = ()

    def run_dir(self, out: Path) -> Path:
        """``out/runs/<task>/<algorithm>/seed<k>``: everything the run writes."""
        return out / "runs" / self.task / self.algorithm / f"seed{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.task} {self.algorithm} seed{self.seed}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"overrides": list(self.overrides)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "RunSpec":
        return cls(
            task=data["task"],
            algorithm=data["algorithm"],
            seed=int(data["seed"]),
            env_steps=int(data["env_steps"]),
            overrides=tuple(data.get("overrides", ())),
        )


def parse_overrides(items: Sequence[str]) -> dict[str | None, tuple[str, ...]]:
    """Script options from ``--config`` items ``KEY=VALUE`` (every script) or
    ``ALGORITHM:KEY=VALUE`` (that algorithm's script only); keyed by algorithm (None: all).

    ``KEY`` is an option name with dashes or underscores, current or older (``logdir`` is
    ``persistence_base_dir``); a ``VALUE`` with spaces gives a list
    option several values (``hidden_sizes=64 64``); booleans take ``1``/``0``.
    """
    parsed: dict[str | None, list[str]] = {}
    for item in items:
        head, sep, value = item.partition("=")
        target, _, key = head.rpartition(":")
        key = current_option_name(key.strip()).replace("-", "_") if key.strip() else ""
        if not sep or not key:
            raise ValueError(f"--config {item!r}: expected KEY=VALUE or ALGORITHM:KEY=VALUE")
        if key in RUNNER_OPTIONS:
            raise ValueError(
                f"--config {item!r}: the runner sets {key!r} itself "
                f"(runner-owned options: {sorted(RUNNER_OPTIONS)})"
            )
        option = "--" + key.replace("_", "-")
        parsed.setdefault(target or None, []).extend([option, *value.split()])
    return {target: tuple(argv) for target, argv in parsed.items()}


def overrides_for(algorithm: str, parsed: dict[str | None, tuple[str, ...]]) -> tuple[str, ...]:
    """The options of :func:`parse_overrides` that apply to ``algorithm``'s script."""
    return (*parsed.get(None, ()), *parsed.get(algorithm, ()))


def script_args(algorithm: str, argv: Sequence[str]) -> argparse.Namespace:
    """``algorithm``'s script's parsed options for ``argv``; a :class:`ValueError` with the
    parser's message if the script rejects them."""
    module = load_script(algorithm)
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors):
            return module.get_args(list(argv))
    except SystemExit as exc:
        message = errors.getvalue().strip().splitlines()
        raise ValueError(
            f"mujoco_{algorithm}.py rejects {list(argv)}: {message[-1] if message else exc}"
        ) from None


@dataclass(frozen=True)
class EpochSplit:
    """How a run's budget is spent: ``warmup_env_steps`` uniformly random steps (off-policy
    scripts), then ``epochs`` epochs of ``epoch_num_steps`` trainer env steps."""

    warmup_env_steps: int
    epochs: int
    epoch_num_steps: int


def epoch_split(defaults: argparse.Namespace, env_steps: int) -> EpochSplit:
    """The epoch split spending ``env_steps`` with the script's own epoch length.

    The script's ``epoch_num_steps`` is kept when it divides the trainer's share of the budget,
    and otherwise shrunk just enough for a whole number of epochs; a budget shorter than one
    epoch is one epoch. On-policy trainers still collect whole collections, so their runs may
    exceed the budget by less than one collection per epoch.
    """
    warmup = int(getattr(defaults, "start_timesteps", 0))
    trainer_steps = env_steps - warmup
    if trainer_steps <= 0:
        raise ValueError(
            f"a budget of {env_steps} env steps leaves nothing after the script's "
            f"{warmup} random warm-up steps (--start-timesteps); raise --env-steps or "
            "override it, e.g. --config start_timesteps=1000"
        )
    epochs = math.ceil(trainer_steps / defaults.epoch_num_steps)
    return EpochSplit(warmup, epochs, math.ceil(trainer_steps / epochs))


def script_log_path(spec: RunSpec, run_dir: Path) -> Path:
    """Where the script writes its TensorBoard log, policy and checkpoint: the scripts' own
    layout ``--persistence-base-dir/<task>/<algorithm>/<seed>`` under the run directory."""
    return run_dir / SCRIPT_LOG_DIR / spec.task / spec.algorithm / str(spec.seed)


def script_argv(spec: RunSpec, run_dir: Path) -> list[str]:
    """The script command line of ``spec``: its overrides, then the runner's options (task,
    seed, epoch split, log directory, checkpoints after every epoch, no progress bars)."""
    if spec.env_steps <= 0:
        raise ValueError(f"env_steps must be positive, got {spec.env_steps}")
    split = epoch_split(script_args(spec.algorithm, spec.overrides), spec.env_steps)
    return [
        *spec.overrides,
        "--task",
        spec.task,
        "--seed",
        str(spec.seed),
        "--epoch",
        str(split.epochs),
        "--epoch-num-steps",
        str(split.epoch_num_steps),
        "--persistence-base-dir",
        str(run_dir / SCRIPT_LOG_DIR),
        "--save-checkpoints",
        "--no-progress",
    ]
