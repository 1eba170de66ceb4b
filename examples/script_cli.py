"""The command line of the procedural example scripts (Atari, MuJoCo, offline, multi-agent).

Users run these scripts with the options of the published Tianshou scripts, which have been
spelt in several ways over its releases: with dashes (``--step-per-epoch``, 1.x) or underscores
(``--epoch_num_steps``, 2.x), and under older names for the same thing (``--training-num``
before ``--num_train_envs``). :class:`ArgumentParser` accepts all of them for one option, so a
command line copied from either release runs unchanged, while ``--help`` lists each option once,
by its dashed current name::

    python -m examples.mujoco.mujoco_ppo --training-num 8 --step_per_epoch 30000 --norm-adv 1

Boolean options declared with ``argparse.BooleanOptionalAction`` accept ``--flag``,
``--no-flag`` and, as the published scripts' integer flags did, ``--flag 0`` or ``--flag 1``.

:func:`logger_from_args` builds the logger that ``--logger`` names (TensorBoard, or Weights &
Biases resuming ``--resume-id``).
"""

import argparse
import copy
import re
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from torch.utils.tensorboard import SummaryWriter

from tianshou.utils.logger.logger_base import BaseLogger
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.logger.wandb import WandbLogger

PUBLISHED_NAMES: dict[str, tuple[str, ...]] = {
    "num-train-envs": ("training-num", "num-training-envs"),
    "num-test-envs": ("test-num",),
    "epoch-num-steps": ("step-per-epoch",),
    "collection-step-num-env-steps": ("step-per-collect",),
    "update-step-num-repetitions": ("repeat-per-collect",),
    "n-step": ("estimation-step", "n-step-return-horizon"),
    "return-scaling": ("rew-norm",),
    "advantage-normalization": ("norm-adv",),
    "recompute-advantage": ("recompute-adv",),
    "action-bound-method": ("bound-action-method",),
}
"""Other published names of the scripts' options (dashed, without ``--``), accepted as
aliases of the current name that keys them."""


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


class _DeclaredNamesHelpFormatter(argparse.HelpFormatter):
    """Lists each option by the names it was declared with (plus ``--no-flag`` for booleans);
    the epilog mentions the other spellings."""

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
    its older published names (:data:`PUBLISHED_NAMES`).

    Options are declared dashed (``--epoch-num-steps``); the value's attribute is the underscore
    form (``args.epoch_num_steps``) whichever spelling was typed.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _DeclaredNamesHelpFormatter)
        kwargs.setdefault(
            "epilog",
            "Every option can also be spelt with underscores (--epoch_num_steps), and the "
            "published scripts' older names work too (--training-num, --step-per-epoch).",
        )
        super().__init__(*args, **kwargs)

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        names = list(name_or_flags)
        for flag in name_or_flags:
            if flag.startswith("--"):
                dashed = flag[2:].replace("_", "-")
                for name in (dashed, *PUBLISHED_NAMES.get(dashed, ())):
                    names += [f"--{name}", f"--{name.replace('-', '_')}"]
        if kwargs.get("action") is argparse.BooleanOptionalAction:
            kwargs["action"] = _BooleanOptionalAction
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
    """Add ``--logger``, ``--wandb-project`` and ``--resume-id`` (read by
    :func:`logger_from_args`); ``wandb_project`` is the default project."""
    parser.add_argument("--logger", default="tensorboard", choices=["tensorboard", "wandb"])
    parser.add_argument("--wandb-project", default=wandb_project)
    parser.add_argument("--resume-id", default=None, help="the W&B run to resume logging into")


def logger_from_args(args: argparse.Namespace, log_path: str, run_name: str) -> BaseLogger:
    """The logger ``--logger`` names, writing TensorBoard events (and the options) to
    ``log_path``; a W&B logger also syncs them to ``--wandb-project`` as ``run_name``."""
    writer = SummaryWriter(log_path)
    writer.add_text("args", str(vars(args)))
    if args.logger == "wandb":
        logger = WandbLogger(
            project=args.wandb_project,
            name=run_name,
            run_id=args.resume_id,
            config=args,
        )
        logger.load(writer)
        return logger
    return TensorboardLogger(writer)
