"""The command line of the high-level example scripts (``*_hl.py``).

Each of those scripts is a function ``main(task=..., epoch=..., ...)`` whose keyword defaults
are the benchmark hyper-parameters, and ends with::

    if __name__ == "__main__":
        run_cli(main)

:func:`run_cli` turns every parameter of ``main`` into an option, spelt with dashes or with
underscores (``--epoch-num-steps 1000`` or ``--epoch_num_steps 1000``), parsed by the
parameter's type annotation (an enum's members by name, in any case:
``--experiment_launcher joblib``); options not given keep ``main``'s defaults. ``--help`` lists
them with the ``:param name:`` lines of ``main``'s docstring.

    python -m examples.mujoco.mujoco_ppo_hl --task Walker2d-v5 --hidden-sizes 32 32 --no-lr-decay

``--config-file FILE`` takes the values of a configuration saved by a hyper-parameter search
(``best_config.json``, see ``docs/hpo.md``) as the defaults of ``main``'s parameters of the
same names; options given on the command line still win.

    python -m examples.mujoco.mujoco_ppo_hl --config-file log/hpo/ppo/best_config.json
"""

import argparse
import enum
import inspect
import logging
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from examples.script_cli import parse_flag

CONFIG_FILE_DEST = "config_file"
"""Where the parser puts ``--config-file`` (not a parameter of ``main``)."""


@dataclass(frozen=True)
class _OptionSpec:
    """How an option's text becomes the value of a parameter annotated with some type."""

    convert: Callable[[str], Any]
    nargs: str | None = None
    metavar: str | None = None


def _parse_none_or(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    """``convert``, except that ``None`` (any case) gives None, for ``X | None`` parameters."""

    def parse(text: str) -> Any:
        return None if text.lower() == "none" else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")  # argparse names it in errors
    return parse


def _enum_parser(enum_type: type[enum.Enum]) -> Callable[[str], enum.Enum]:
    """Members by name, in any case (``--experiment-launcher joblib`` gives ``JOBLIB``)."""
    by_folded_name = {name.casefold(): member for name, member in enum_type.__members__.items()}

    def parse(text: str) -> enum.Enum:
        member = enum_type.__members__.get(text, by_folded_name.get(text.casefold()))
        if member is None:
            names = ", ".join(enum_type.__members__)
            raise argparse.ArgumentTypeError(f"{text!r} is none of {names} (any case)")
        return member

    parse.__name__ = enum_type.__name__
    return parse


def _literal_parser(values: Sequence[Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        for value in values:
            if str(value) == text:
                return value
        raise argparse.ArgumentTypeError(f"{text!r} is none of {[str(v) for v in values]}")

    return parse


def _scalar_spec(annotation: Any) -> _OptionSpec:
    """The option of a parameter of a single value (possibly optional)."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        others = [arg for arg in args if arg is not type(None)]
        if len(others) != 1:
            raise TypeError(f"run_cli cannot parse values of type {annotation}")
        inner = _scalar_spec(others[0])
        return _OptionSpec(_parse_none_or(inner.convert), metavar=inner.metavar)
    if typing.get_origin(annotation) is typing.Literal:
        return _OptionSpec(_literal_parser(args), metavar="{" + ",".join(map(str, args)) + "}")
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        names = ",".join(annotation.__members__)
        return _OptionSpec(_enum_parser(annotation), metavar="{" + names + "}")
    if annotation is bool:
        return _OptionSpec(parse_flag)
    if annotation in (int, float, str):
        return _OptionSpec(annotation)
    raise TypeError(f"run_cli cannot parse values of type {annotation}")


def _option_spec(annotation: Any) -> _OptionSpec:
    """The option of a parameter: sequences (``Sequence[int]``, ``tuple[int, ...]``,
    ``list[float]``) take several values, everything else one."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, Sequence, typing.Sequence):
        item_type = typing.get_args(annotation)[0] if typing.get_args(annotation) else str
        return _OptionSpec(_scalar_spec(item_type).convert, nargs="*")
    return _scalar_spec(annotation)


def _param_docs(fn: Callable[..., Any]) -> dict[str, str]:
    """The ``:param name: text`` entries of ``fn``'s docstring (text joined onto one line)."""
    doc = inspect.getdoc(fn) or ""
    docs = {}
    for match in re.finditer(r":param (\w+):(.*?)(?=\n\s*:|\Z)", doc, flags=re.DOTALL):
        docs[match.group(1)] = " ".join(match.group(2).split())
    return docs


def _option_names(name: str) -> list[str]:
    dashed = "--" + name.replace("_", "-")
    underscored = "--" + name
    return [dashed] if dashed == underscored else [dashed, underscored]


def build_parser(main: Callable[..., Any]) -> argparse.ArgumentParser:
    """The parser of ``main``'s keyword parameters (see the module docstring).

    Options not given are absent from the parsed namespace, so that ``main`` applies its own
    defaults. Boolean parameters are switched with ``--flag`` / ``--no-flag`` (``--no_flag``).

    :param main: the function whose parameters become options; all need defaults.
    """
    description = (inspect.getdoc(main) or "").split("\n\n")[0]
    parser = argparse.ArgumentParser(description=description, argument_default=argparse.SUPPRESS)
    hints = typing.get_type_hints(main)
    docs = _param_docs(main)
    for name, param in inspect.signature(main).parameters.items():
        if param.default is inspect.Parameter.empty:
            raise TypeError(f"run_cli needs a default for every parameter of main; {name} has none")
        help_text = f"{docs.get(name, '')} (default: {param.default})".strip()
        annotation = hints.get(name, type(param.default))
        if annotation is bool:
            parser.add_argument(
                *_option_names(name), dest=name, action="store_true", help=help_text
            )
            parser.add_argument(
                *_option_names("no_" + name), dest=name, action="store_false", help=f"not --{name}"
            )
            continue
        spec = _option_spec(annotation)
        parser.add_argument(
            *_option_names(name),
            dest=name,
            type=spec.convert,
            nargs=spec.nargs,
            metavar=spec.metavar,
            help=help_text,
        )
    parser.add_argument(
        "--config-file",
        "--config_file",
        dest=CONFIG_FILE_DEST,
        metavar="FILE",
        help="a best_config.json of a hyper-parameter search: its values as defaults",
    )
    return parser


def _values_of_config_file(
    parser: argparse.ArgumentParser, main: Callable[..., Any], path: str
) -> dict[str, Any]:
    """The hyper-parameters saved in ``path``; names ``main`` has no parameter for are an
    error."""
    from tianshou.highlevel.hpo.best_config import load_best_params

    values = load_best_params(path)
    unknown = sorted(set(values) - set(inspect.signature(main).parameters))
    if unknown:
        parser.error(f"{path} sets {unknown}, which this script has no options for")
    return values


def run_cli(main: Callable[..., Any], argv: Sequence[str] | None = None) -> Any:
    """Call ``main`` with the keyword arguments given on the command line, and return its result.

    Also sends log messages of level INFO and above to stderr, so that the experiment's progress
    (e.g. where it saves the policy) is visible.

    :param main: the script's entry point (see the module docstring).
    :param argv: the arguments; None reads ``sys.argv[1:]``.
    """
    parser = build_parser(main)
    kwargs = vars(parser.parse_args(argv))
    config_file = kwargs.pop(CONFIG_FILE_DEST, None)
    if config_file is not None:
        kwargs = _values_of_config_file(parser, main, config_file) | kwargs
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return main(**kwargs)
