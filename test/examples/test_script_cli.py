"""The example scripts' shared command line (``examples.script_cli``): every spelling of an
option, flexible booleans, help and errors that name each option once, the logger choice."""

import argparse
import re
from pathlib import Path
from types import ModuleType

import pytest

from tianshou.utils.logger.tensorboard import TensorboardLogger

from examples import script_cli as script_cli_module


@pytest.fixture
def script_cli() -> ModuleType:
    return script_cli_module


def parser_with_options(script_cli: ModuleType) -> argparse.ArgumentParser:
    parser = script_cli.ArgumentParser(description="doc")
    parser.add_argument("--epoch-num-steps", type=int, default=1)
    parser.add_argument("--num-train-envs", type=int, default=1)
    parser.add_argument("--update-step-num-repetitions", type=int, default=1)
    parser.add_argument("--auto-alpha", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--value-clip", action=argparse.BooleanOptionalAction, default=False)
    return parser


@pytest.mark.parametrize(
    "argv",
    [
        ["--epoch-num-steps", "7", "--num-train-envs", "3", "--update-step-num-repetitions", "2"],
        ["--epoch_num_steps", "7", "--num_train_envs", "3", "--update_step_num_repetitions", "2"],
        ["--step-per-epoch", "7", "--training-num", "3", "--repeat-per-collect", "2"],
        ["--step_per_epoch", "7", "--num_training_envs", "3", "--repeat_per_collect", "2"],
    ],
)
def test_every_spelling_sets_the_same_option(script_cli: ModuleType, argv: list[str]) -> None:
    args = parser_with_options(script_cli).parse_args(argv)
    assert (args.epoch_num_steps, args.num_train_envs, args.update_step_num_repetitions) == (
        7,
        3,
        2,
    )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], True),
        (["--auto-alpha"], True),
        (["--auto_alpha"], True),
        (["--no-auto-alpha"], False),
        (["--no_auto_alpha"], False),
        (["--no-auto_alpha"], False),
        (["--auto-alpha", "0"], False),  # the published scripts' integer flags
        (["--auto-alpha", "1"], True),
        (["--auto_alpha", "false"], False),
        (["--auto-alpha", "Yes"], True),
    ],
)
def test_boolean_options_take_a_flag_its_negation_or_a_value(
    script_cli: ModuleType, argv: list[str], expected: bool
) -> None:
    assert parser_with_options(script_cli).parse_args(argv).auto_alpha is expected


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--auto-alpha", "maybe"], "argument --auto-alpha: not a boolean: 'maybe'"),
        (["--no-auto-alpha", "1"], "--no-auto-alpha takes no value"),
        (["--training-num", "x"], "argument --num-train-envs: invalid int value: 'x'"),
    ],
)
def test_errors_name_the_option_once(
    script_cli: ModuleType, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parser_with_options(script_cli).parse_args(argv)
    assert message in capsys.readouterr().err


def test_help_lists_each_option_by_its_declared_name(script_cli: ModuleType) -> None:
    text = parser_with_options(script_cli).format_help()
    assert "--epoch-num-steps EPOCH_NUM_STEPS\n" in text
    assert "--auto-alpha [0|1], --no-auto-alpha" in text
    options = text[text.index("options:") : text.index("Every option")]
    assert not re.search(r"--\w*_", options), "no underscored option names"
    assert "training-num" not in options and "step-per-epoch" not in options
    assert "underscores" in text and "--training-num" in text  # the epilog names the aliases


def test_defaults_of_undeclared_options_are_rejected(script_cli: ModuleType) -> None:
    with pytest.raises(ValueError, match="epoch_num_stepz"):
        parser_with_options(script_cli).set_known_defaults(epoch_num_stepz=3)


def test_logger_options_default_to_tensorboard(script_cli: ModuleType, tmp_path: Path) -> None:
    parser = script_cli.ArgumentParser()
    script_cli.add_logger_options(parser, wandb_project="demo.project")
    args = parser.parse_args([])
    assert (args.logger, args.wandb_project, args.resume_id) == (
        "tensorboard",
        "demo.project",
        None,
    )
    logger = script_cli.logger_from_args(args, str(tmp_path / "run"), "run")
    assert isinstance(logger, TensorboardLogger)
    logger.writer.close()
    assert any((tmp_path / "run").iterdir()), "the options are written to the event file"
    with pytest.raises(SystemExit):
        parser.parse_args(["--logger", "csv"])


def test_lenient_parsing_warns_about_each_ignored_option(script_cli: ModuleType) -> None:
    parser = parser_with_options(script_cli)
    with pytest.warns(UserWarning, match="ignoring unrecognized arguments: --epochs 3"):
        args = script_cli.parse_known_options(parser, ["--epoch_num_steps", "5", "--epochs", "3"])
    assert args.epoch_num_steps == 5
