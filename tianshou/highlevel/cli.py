"""The command line of the high-level example scripts (``*_hl.py``): a function's keyword
parameters become its options.

It lives in the installed package, not beside the scripts, so that a script runs the same way
from any folder (``python examples/mujoco/mujoco_sac_hl.py``, from ``examples/mujoco``, or as
``python -m examples.mujoco.mujoco_sac_hl``), and so that scripts of your own can reuse it.

Each of those scripts is a function ``main(task=..., epoch=..., ...)`` whose keyword defaults
are the benchmark hyper-parameters, and ends with::

    if __name__ == "__main__":
        run_cli(main)

:func:`run_cli` turns every parameter of ``main`` into an option, spelt with dashes or with
underscores (``--epoch-num-steps 1000`` or ``--epoch_num_steps 1000``) and under the older
published names of :data:`~tianshou.utils.cli.PUBLISHED_NAMES` (``--step-per-epoch``), parsed by
the parameter's type annotation (an enum's members by name, in any case:
``--experiment_launcher joblib``); options not given keep ``main``'s defaults. ``--help`` lists
them with the ``:param name:`` lines of ``main``'s docstring.

    python -m examples.mujoco.mujoco_ppo_hl --task Walker2d-v5 --hidden-sizes 32 32 --no-lr-decay

``--config-file FILE`` takes the values of a configuration saved by a hyper-parameter search
(``best_config.json``, see ``docs/hpo.md``) as the defaults of ``main``'s parameters of the
same names; options given on the command line still win.

    python -m examples.mujoco.mujoco_ppo_hl --config-file log/hpo/ppo/best_config.json

When ``main`` returns what ``build_and_run`` returned, :func:`run_cli` prints the run's summary
and writes its result file (:func:`~tianshou.scripts.summary.report_seed_results`).
:func:`script_experiment_config` gives the scripts one meaning of ``--resume-path`` and
``--watch``.

``run_cli(main, data_parallel=True)`` adds the options of a data-parallel run (``--distributed``,
``--launcher ray``, ...; see :func:`~tianshou.distributed.options.add_data_parallel_options`),
which :func:`script_experiment_config` puts into the experiment's configuration, so a script
trains on several ranks as the procedural scripts do:

    torchrun --nproc-per-node 2 -m examples.mujoco.mujoco_ppo_hl --distributed
    python -m examples.mujoco.mujoco_ppo_hl --launcher ray --num-workers 2

``--torch-threads N`` sets torch's intra-op thread count while ``main`` runs (see
:func:`~tianshou.utils.cli.add_torch_threads_option`); a ``main`` with a ``torch_threads``
parameter also receives the value, to hand it to its experiments' training configuration
(``TrainingConfig.torch_threads``), which would otherwise apply its own default while they run.
"""

import argparse
import enum
import inspect
import logging
import os
import re
import sys
import types
import typing
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from tianshou.distributed.options import (
    OPTION_DESTS,
    DataParallelOptions,
    add_data_parallel_options,
)
from tianshou.highlevel.experiment import ExperimentConfig
from tianshou.highlevel.experiment_result import SeedResults
from tianshou.highlevel.persistence import PolicyPersistence
from tianshou.scripts.summary import report_seed_results
from tianshou.utils.cli import (
    ArgumentParser,
    add_torch_threads_option,
    parse_flag,
    torch_threads_from_args,
)

log = logging.getLogger(__name__)

CONFIG_FILE_DEST = "config_file"
"""Where the parser puts ``--config-file`` (not a parameter of ``main``)."""

TORCH_THREADS_DEST = "torch_threads"
"""Where the parser puts ``--torch-threads`` (passed on to a ``main`` that has this parameter)."""

_requested_data_parallel: ContextVar[DataParallelOptions | None] = ContextVar(
    "requested_data_parallel", default=None
)
"""The data-parallel options of the script that :func:`run_cli` runs (read by
:func:`script_experiment_config`); a single process outside :func:`run_cli`."""


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


def build_parser(main: Callable[..., Any], data_parallel: bool = False) -> argparse.ArgumentParser:
    """The parser of ``main``'s keyword parameters (see the module docstring).

    Options not given are absent from the parsed namespace, so that ``main`` applies its own
    defaults. Boolean parameters are switched with ``--flag`` / ``--no-flag`` (``--no_flag``).
    Each option is also accepted by its older published names
    (:data:`~tianshou.utils.cli.PUBLISHED_NAMES`); a parameter named by an older name is a
    ValueError, so that all scripts share one vocabulary.

    :param main: the function whose parameters become options; all need defaults.
    :param data_parallel: also add the options of a data-parallel run.
    """
    description = (inspect.getdoc(main) or "").split("\n\n")[0]
    parameters = {
        name: param
        for name, param in inspect.signature(main).parameters.items()
        if name != TORCH_THREADS_DEST  # its option is the shared one below
    }
    parser = ArgumentParser(description=description, argument_default=argparse.SUPPRESS)
    hints = typing.get_type_hints(main)
    docs = _param_docs(main)
    for name, param in parameters.items():
        if param.default is inspect.Parameter.empty:
            raise TypeError(f"run_cli needs a default for every parameter of main; {name} has none")
        option = "--" + name.replace("_", "-")
        help_text = f"{docs.get(name, '')} (default: {param.default})".strip()
        annotation = hints.get(name, type(param.default))
        if annotation is bool:
            parser.add_argument(option, dest=name, action="store_true", help=help_text)
            parser.add_argument(
                "--no-" + option[2:], dest=name, action="store_false", help=f"not {option}"
            )
            continue
        spec = _option_spec(annotation)
        parser.add_argument(
            option,
            dest=name,
            type=spec.convert,
            nargs=spec.nargs,
            metavar=spec.metavar,
            help=help_text,
        )
    add_torch_threads_option(parser)
    if data_parallel:
        add_data_parallel_options(parser, _how_started(main))
    parser.add_argument(
        "--config-file",
        dest=CONFIG_FILE_DEST,
        metavar="FILE",
        help="a best_config.json of a hyper-parameter search: its values as defaults",
    )
    return parser


def _how_started(main: Callable[..., Any]) -> str:
    """How ``main``'s script is started, for help texts (``-m examples.mujoco.mujoco_ppo_hl``)."""
    module = main.__module__
    if module == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else "<script>"
    return f"-m {module}"


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


def restore_directory_of(resume_path: str | None) -> str | None:
    """The run directory to restore a policy from, for a script's ``--resume-path``.

    :param resume_path: an earlier run's directory, or its saved policy parameters
        (``policy_state_dict.pt``); None gives None.
    :raises FileNotFoundError: if no saved policy parameters are there.
    """
    if resume_path is None:
        return None
    directory = resume_path if os.path.isdir(resume_path) else os.path.dirname(resume_path)
    saved = os.path.join(directory, PolicyPersistence.Mode.POLICY_STATE_DICT.get_filename())
    if not os.path.isfile(saved):
        raise FileNotFoundError(
            f"--resume-path {resume_path!r}: no {saved}; pass the directory of an earlier run "
            f"(it holds the saved policy_state_dict.pt) or that file"
        )
    return directory


def script_experiment_config(
    *, persistence_base_dir: str, seed: int, watch: bool, resume_path: str | None
) -> ExperimentConfig:
    """The experiment configuration of a high-level script's options, with the procedural
    scripts' meaning of ``--resume-path`` and ``--watch``, and the data-parallel options of
    :func:`run_cli` (``run_cli(main, data_parallel=True)``).

    :param persistence_base_dir: where the run directory goes.
    :param seed: the run's seed.
    :param watch: only watch the policy of ``resume_path`` for a few episodes (no training).
    :param resume_path: an earlier run's directory, or its saved policy parameters
        (``policy_state_dict.pt``), to start from; None starts from fresh networks.
    """
    if watch and resume_path is None:
        log.warning("--watch without --resume-path: watching an untrained policy")
    parallel = _requested_data_parallel.get() or DataParallelOptions()
    if watch and parallel.enabled:
        raise ValueError("--watch evaluates in one process: drop --distributed / --launcher ray")
    return ExperimentConfig(
        persistence_base_dir=persistence_base_dir,
        seed=seed,
        train=not watch,
        watch=watch,
        policy_restore_directory=restore_directory_of(resume_path),
        data_parallel=parallel.enabled,
        data_parallel_timeout_s=parallel.timeout_s,
        data_parallel_launcher=parallel.launcher,
        data_parallel_num_workers=parallel.num_workers,
        data_parallel_ray_address=parallel.ray_address,
    )


def _full_config(main: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``main``'s defaults updated by the given keyword arguments: the run's configuration."""
    defaults = {name: param.default for name, param in inspect.signature(main).parameters.items()}
    return defaults | kwargs


def run_cli(
    main: Callable[..., Any], argv: Sequence[str] | None = None, data_parallel: bool = False
) -> Any:
    """Call ``main`` with the keyword arguments given on the command line, and return its result.

    ``main`` runs with torch's intra-op thread count of ``--torch-threads`` (printed once, and
    restored afterwards). Also sends log messages of level INFO and above to stderr, so that the
    experiment's progress (e.g. where it saves the policy) is visible. When ``main`` returns
    what ``build_and_run`` returned, the runs' summary is printed and their result file written
    (see :func:`~tianshou.scripts.summary.report_seed_results`), with the options (defaults
    included) as the configuration.

    :param main: the script's entry point (see the module docstring).
    :param argv: the arguments; None reads ``sys.argv[1:]``.
    :param data_parallel: accept the options of a data-parallel run; ``main`` must build its
        experiments' configuration with :func:`script_experiment_config`, which applies them.
    """
    parser = build_parser(main, data_parallel)
    kwargs = vars(parser.parse_args(argv))
    requested = DataParallelOptions()
    if data_parallel:
        parsed = argparse.Namespace(**{dest: kwargs.pop(dest) for dest in OPTION_DESTS})
        requested = DataParallelOptions.from_args(parsed)
    if requested.enabled and kwargs.get("num_experiments", 1) > 1:
        parser.error("a data-parallel job trains one run: drop --num-experiments, one seed per job")
    config_file = kwargs.pop(CONFIG_FILE_DEST, None)
    threads = argparse.Namespace(torch_threads=kwargs.pop(TORCH_THREADS_DEST))
    if config_file is not None:
        kwargs = _values_of_config_file(parser, main, config_file) | kwargs
    if TORCH_THREADS_DEST in inspect.signature(main).parameters:
        kwargs[TORCH_THREADS_DEST] = threads.torch_threads
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    requested_token = _requested_data_parallel.set(requested)
    try:
        with torch_threads_from_args(threads):
            result = main(**kwargs)
            if isinstance(result, SeedResults):
                config = _full_config(main, kwargs)
                report_seed_results(result, task=str(config.get("task", "")), config=config)
    finally:
        _requested_data_parallel.reset(requested_token)
    return result
