"""The command line of the procedural example scripts (``examples/``): one option parser that
accepts the spellings of the published scripts, the logger options, and ``--torch-threads``.

It lives in the installed package, not beside the scripts, so that a script runs the same way
from any folder (``python examples/mujoco/mujoco_sac.py``, ``cd examples/mujoco && python
mujoco_sac.py`` or ``python -m examples.mujoco.mujoco_sac``) without touching the module search
path, and so that scripts of your own can reuse it.

The published scripts spelt their options in several ways over the releases: with dashes
(``--step-per-epoch``, 1.x) or underscores (``--epoch_num_steps``, 2.x), and under older names
for the same thing (``--training-num`` before ``--num_training_envs``). :class:`ArgumentParser`
accepts all of them for one option, so a command line copied from either release runs
unchanged, while ``--help`` lists each option once, by its current name (the 2.x one of
:data:`PUBLISHED_NAMES`), with its default::

    python -m examples.mujoco.mujoco_ppo --training-num 8 --step_per_epoch 30000 --norm-adv 1
    python -m examples.mujoco.mujoco_sac --num_training_envs 8 --epoch_num_steps 5000 \\
        --persistence_base_dir log --logger_type tensorboard

Boolean options declared with ``argparse.BooleanOptionalAction`` accept ``--flag``,
``--no-flag`` and, as the published scripts' integer flags did, ``--flag 0`` or ``--flag 1``.

:func:`logger_from_args` builds the logger that ``--logger-type`` names (TensorBoard, or Weights
& Biases resuming ``--resume-id``); :func:`torch_threads_from_args` applies ``--torch-threads``.
"""

import argparse
import copy
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS, torch_threads

if TYPE_CHECKING:
    from tianshou.utils.logger.logger_base import BaseLogger

PUBLISHED_NAMES: dict[str, tuple[str, ...]] = {
    "num-training-envs": ("num-train-envs", "training-num"),
    "num-test-envs": ("test-num",),
    "epoch-num-steps": ("step-per-epoch", "update-per-epoch"),
    "collection-step-num-env-steps": ("step-per-collect",),
    "update-step-num-repetitions": ("repeat-per-collect",),
    "update-step-num-gradient-steps-per-sample": ("update-per-step",),
    "n-step-return-horizon": ("n-step", "estimation-step"),
    "return-scaling": ("rew-norm",),
    "advantage-normalization": ("norm-adv",),
    "recompute-advantage": ("recompute-adv",),
    "action-bound-method": ("bound-action-method",),
    "persistence-base-dir": ("logdir",),
    "logger-type": ("logger",),
}
"""The scripts' one vocabulary: each option's current name (the published 2.x scripts' name,
dashed, without ``--``) and the other names it was published under, accepted as aliases."""

_CANONICAL_OF_ALIAS = {
    alias: name for name, aliases in PUBLISHED_NAMES.items() for alias in aliases
}


def current_option_name(name: str) -> str:
    """The current name (dashed, without ``--``) of the option spelt ``name`` in any published
    way: with or without ``--``, dashes or underscores, current or older name.

    >>> current_option_name("--training_num")
    'num-training-envs'
    """
    dashed = name.removeprefix("--").replace("_", "-")
    return _CANONICAL_OF_ALIAS.get(dashed, dashed)


def option_spellings(name: str) -> list[str]:
    """Every accepted spelling of the option ``name`` (``--`` and dashes or underscores): the
    name itself, then its aliases of :data:`PUBLISHED_NAMES`, each dashed and underscored.

    >>> option_spellings("num_test_envs")
    ['--num-test-envs', '--num_test_envs', '--test-num', '--test_num']

    :param name: the option's current name, with dashes or underscores, with or without
        ``--``.
    :raises ValueError: if ``name`` is an older name of another option, so that every script
        declares an option by the same, current name.
    """
    dashed = name.removeprefix("--").replace("_", "-")
    if dashed in _CANONICAL_OF_ALIAS:
        raise ValueError(
            f"--{dashed} is the older name of --{_CANONICAL_OF_ALIAS[dashed]}: declare the "
            "option by its current name (the older one stays accepted as an alias)"
        )
    spellings: list[str] = []
    for spelling in (dashed, *PUBLISHED_NAMES.get(dashed, ())):
        spellings += [f"--{spelling}", f"--{spelling.replace('-', '_')}"]
    return list(dict.fromkeys(spellings))


def parse_flag(text: str) -> bool:
    """An explicit boolean option value: ``1/0``, ``true/false``, ``yes/no``, ``on/off``."""
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"not a boolean: {text!r} (use 1/0 or true/false)")


class _BooleanOptionalAction(argparse.Action):
    """``--flag`` (true), ``--no-flag`` (false) or ``--flag VALUE`` with a :func:`parse_flag`
    value; the negative form is also accepted with underscores (``--no_flag``)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        names = list(option_strings)
        for name in option_strings:
            if name.startswith("--"):
                names += [f"--no-{name[2:]}", f"--no_{name[2:]}"]
        kwargs.pop("nargs", None)
        kwargs.setdefault("metavar", "0|1")
        kwargs.setdefault("type", parse_flag)
        super().__init__(list(dict.fromkeys(names)), dest, nargs="?", **kwargs)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        negative = option_string is not None and option_string[2:5] in ("no-", "no_")
        if negative and values is not None:
            parser.error(f"{option_string} takes no value")
        setattr(namespace, self.dest, not negative if values is None else values)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Lists each option by the names it was declared with (plus ``--no-flag`` for booleans)
    and its default; the epilog mentions the other spellings."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        declared = getattr(action, "declared_names", None)
        if declared is None:
            return super()._format_action_invocation(action)
        shown = copy.copy(action)
        shown.option_strings = list(declared)
        text = super()._format_action_invocation(shown)
        if isinstance(action, _BooleanOptionalAction):
            text += ", " + ", ".join(f"--no-{name[2:]}" for name in declared)
        return text


class ArgumentParser(argparse.ArgumentParser):
    """An argument parser that accepts every long option with dashes or underscores, and under
    its older published names (:data:`PUBLISHED_NAMES`); ``--help`` shows every default.

    Options are declared dashed, by their current name (``--epoch-num-steps``; declaring an
    older name is a ValueError); the value's attribute is the underscore form
    (``args.epoch_num_steps``) whichever spelling was typed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault(
            "epilog",
            "Every option can also be spelt with underscores (--epoch_num_steps), and the "
            "published scripts' older names work too (--training-num, --step-per-epoch, "
            "--logdir).",
        )
        super().__init__(*args, **kwargs)

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        names = list(name_or_flags)
        for flag in name_or_flags:
            if flag.startswith("--"):
                names += option_spellings(flag)
        if kwargs.get("action") is argparse.BooleanOptionalAction:
            kwargs["action"] = _BooleanOptionalAction
        if kwargs.get("help") is None and kwargs.get("action") != "help":
            kwargs["help"] = "default: %(default)s"  # an option without help shows its default
        action = super().add_argument(*dict.fromkeys(names), **kwargs)
        action.declared_names = name_or_flags  # type: ignore[attr-defined]
        return action

    def error(self, message: str) -> NoReturn:
        """Exit with ``message``, naming an option by its first name, not all its spellings."""
        super().error(re.sub(r"argument (--[\w-]+)(?:/--[\w-]+)+", r"argument \1", message))

    def set_known_defaults(self, **defaults: Any) -> None:
        """Like ``set_defaults``, but only for declared options, so that a misspelt name fails."""
        unknown = defaults.keys() - {action.dest for action in self._actions}
        if unknown:
            raise ValueError(f"no options {sorted(unknown)} to set defaults for; add them first")
        self.set_defaults(**defaults)


def parse_known_options(
    parser: argparse.ArgumentParser, argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """Parse ``argv`` as the published multi-agent scripts do, ignoring options that ``parser``
    does not know (so the scripts also run under pytest's command line), but warn about each
    ignored one, so that a misspelt option does not vanish silently."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        warnings.warn(
            f"{parser.prog}: ignoring unrecognized arguments: {' '.join(unknown)}", stacklevel=2
        )
    return args


def add_logger_options(parser: argparse.ArgumentParser, wandb_project: str) -> None:
    """Add ``--logger-type``, ``--wandb-project`` and ``--resume-id`` (read by
    :func:`logger_from_args`); ``wandb_project`` is the default project."""
    parser.add_argument("--logger-type", default="tensorboard", choices=["tensorboard", "wandb"])
    parser.add_argument("--wandb-project", default=wandb_project)
    parser.add_argument("--resume-id", default=None, help="the W&B run to resume logging into")


def logger_from_args(args: argparse.Namespace, log_path: str, run_name: str) -> "BaseLogger":
    """The logger ``--logger-type`` names, writing TensorBoard events (and the options) to
    ``log_path``; a W&B logger also syncs them to ``--wandb-project`` as ``run_name``."""
    from torch.utils.tensorboard import SummaryWriter

    from tianshou.utils.logger.tensorboard import TensorboardLogger
    from tianshou.utils.logger.wandb import WandbLogger

    writer = SummaryWriter(log_path)
    writer.add_text("args", str(vars(args)))
    if args.logger_type == "wandb":
        logger = WandbLogger(
            project=args.wandb_project,
            name=run_name,
            run_id=args.resume_id,
            config=args,
        )
        logger.load(writer)
        return logger
    return TensorboardLogger(writer)


def parse_torch_threads(text: str) -> int | None:
    """A ``--torch-threads`` value: a count of at least 1, or ``0``/``auto`` (None: leave
    torch's own setting, one thread per core)."""
    if text.lower() in ("0", "auto"):
        return None
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a thread count: {text!r} (use a whole number, or 0/auto for torch's default)"
        ) from None
    if count < 0:
        raise argparse.ArgumentTypeError(f"a thread count cannot be negative, got {count}")
    return count


def add_torch_threads_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--torch-threads N``, applied by :func:`torch_threads_from_args`; the default is
    :data:`~tianshou.utils.torch_utils.DEFAULT_TORCH_THREADS`."""
    parser.add_argument(
        "--torch-threads",
        type=parse_torch_threads,
        default=DEFAULT_TORCH_THREADS,
        metavar="N",
        help="torch's intra-op threads while the script runs (0 or auto: torch's default, one "
        "per core); RL networks are small, and torch's default can make a run many times "
        "slower when another process keeps a core busy (default: %(default)s)",
    )


def describe_torch_threads(count: int, requested: int | None) -> str:
    """The line a script prints about its thread choice, e.g.
    ``torch: 1 intra-op thread (--torch-threads)``.

    >>> describe_torch_threads(4, None)
    "torch: 4 intra-op threads (torch's default; --torch-threads auto)"
    """
    threads = f"{count} intra-op thread{'' if count == 1 else 's'}"
    if requested is None:
        return f"torch: {threads} (torch's default; --torch-threads auto)"
    return f"torch: {threads} (--torch-threads)"


@contextmanager
def torch_threads_from_args(args: argparse.Namespace) -> Iterator[int]:
    """Run the body with torch's intra-op thread count set by ``--torch-threads``, printing the
    choice once; the previous count is restored afterwards. Yields the count in force.

    :param args: parsed options with ``torch_threads`` (see :func:`add_torch_threads_option`).
    """
    with torch_threads(args.torch_threads) as count:
        print(describe_torch_threads(count, args.torch_threads), flush=True)
        yield count
