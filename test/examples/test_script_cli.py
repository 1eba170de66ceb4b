"""The example scripts' shared command line (``tianshou.utils.cli``): every spelling of an
option, one vocabulary, flexible booleans, help that shows defaults and names each option once,
errors, the logger choice and ``--torch-threads``."""

import argparse
import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest
import torch

from tianshou.utils import cli as script_cli_module
from tianshou.utils.logger.tensorboard import TensorboardLogger


@pytest.fixture
def script_cli() -> ModuleType:
    return script_cli_module


def parser_with_options(script_cli: ModuleType) -> argparse.ArgumentParser:
    parser = script_cli.ArgumentParser(description="doc")
    parser.add_argument("--epoch-num-steps", type=int, default=1)
    parser.add_argument("--num-training-envs", type=int, default=1)
    parser.add_argument("--update-step-num-repetitions", type=int, default=1)
    parser.add_argument("--auto-alpha", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--value-clip", action=argparse.BooleanOptionalAction, default=False)
    return parser


@pytest.mark.parametrize(
    "argv",
    [
        ["--epoch-num-steps", "7", "--num-train-envs", "3", "--update-step-num-repetitions", "2"],
        [
            "--epoch_num_steps",
            "7",
            "--num_training_envs",
            "3",
            "--update_step_num_repetitions",
            "2",
        ],
        ["--step-per-epoch", "7", "--training-num", "3", "--repeat-per-collect", "2"],
        ["--step_per_epoch", "7", "--num_training_envs", "3", "--repeat_per_collect", "2"],
    ],
)
def test_every_spelling_sets_the_same_option(script_cli: ModuleType, argv: list[str]) -> None:
    args = parser_with_options(script_cli).parse_args(argv)
    assert (args.epoch_num_steps, args.num_training_envs, args.update_step_num_repetitions) == (
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
        (["--training-num", "x"], "argument --num-training-envs: invalid int value: 'x'"),
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
    assert (args.logger_type, args.wandb_project, args.resume_id) == (
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


def test_declaring_an_older_name_is_an_error(script_cli: ModuleType) -> None:
    parser = script_cli.ArgumentParser()
    with pytest.raises(ValueError, match="--num-train-envs is the older name of --num-training"):
        parser.add_argument("--num_train_envs", type=int, default=1)


def test_help_shows_every_default(script_cli: ModuleType) -> None:
    text = " ".join(parser_with_options(script_cli).format_help().split())
    assert "--epoch-num-steps EPOCH_NUM_STEPS default: 1" in text  # an option without help
    assert "--auto-alpha [0|1], --no-auto-alpha default: True" in text


@pytest.mark.parametrize(
    ("argv", "expected", "line"),
    [
        ([], 1, "torch: 1 intra-op thread (--torch-threads)"),
        (["--torch-threads", "2"], 2, "torch: 2 intra-op threads (--torch-threads)"),
        (["--torch_threads", "auto"], None, "(torch's default; --torch-threads auto)"),
        (["--torch-threads", "0"], None, "(torch's default; --torch-threads auto)"),
    ],
)
def test_torch_threads_are_set_for_the_run_and_restored(
    script_cli: ModuleType,
    argv: list[str],
    expected: int | None,
    line: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = script_cli.ArgumentParser()
    script_cli.add_torch_threads_option(parser)
    args = parser.parse_args(argv)
    assert args.torch_threads == expected
    before = torch.get_num_threads()
    with script_cli.torch_threads_from_args(args) as count:
        assert torch.get_num_threads() == count == (expected or before)
    assert torch.get_num_threads() == before
    assert line in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1", "many"])
def test_bad_thread_counts_are_clear_errors(
    script_cli: ModuleType, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = script_cli.ArgumentParser()
    script_cli.add_torch_threads_option(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--torch-threads", value])
    assert "argument --torch-threads" in capsys.readouterr().err


# A command line written for the published 2.x scripts, and the same with the 1.x names.
PUBLISHED_2X = ["--num_training_envs", "2", "--num_test_envs", "3", "--epoch_num_steps", "500"]
PUBLISHED_2X += ["--persistence_base_dir", "log2", "--logger_type", "tensorboard"]
PUBLISHED_1X = ["--training-num", "2", "--test-num", "3", "--step-per-epoch", "500"]
PUBLISHED_1X += ["--logdir", "log2", "--logger", "tensorboard"]
PUBLISHED_VALUES = {
    "num_training_envs": 2,
    "num_test_envs": 3,
    "epoch_num_steps": 500,
    "persistence_base_dir": "log2",
    "logger_type": "tensorboard",
}


@pytest.mark.parametrize(
    "script",
    [
        "examples.mujoco.mujoco_sac",
        "examples.mujoco.mujoco_ppo",
        "examples.atari.atari_dqn",
        "examples.atari.atari_ppo",
        "examples.pomdp.recurrent_ppo",
    ],
)
@pytest.mark.parametrize("argv", [PUBLISHED_2X, PUBLISHED_1X], ids=["2.x", "1.x"])
def test_published_command_lines_work_unchanged(script: str, argv: list[str]) -> None:
    args = importlib.import_module(script).get_args(argv)
    assert {key: getattr(args, key) for key in PUBLISHED_VALUES} == PUBLISHED_VALUES


@pytest.mark.parametrize(
    "script",
    [
        "examples.pettingzoo.tic_tac_toe",
        "examples.pettingzoo.pistonball",
        "examples.pettingzoo.mpe_spread_ppo",
    ],
)
@pytest.mark.parametrize(
    "argv",
    [
        ["--num_training_envs", "2", "--num_test_envs", "3", "--epoch_num_steps", "500"],
        ["--training-num", "2", "--test-num", "3", "--step-per-epoch", "500"],
    ],
    ids=["2.x", "1.x"],
)
def test_multi_agent_scripts_share_the_vocabulary(script: str, argv: list[str]) -> None:
    args = importlib.import_module(script).get_args([*argv, "--logdir", "log2"])
    assert (args.num_training_envs, args.num_test_envs, args.epoch_num_steps) == (2, 3, 500)
    assert args.persistence_base_dir == "log2"


@pytest.mark.parametrize("spelling", ["--epoch_num_steps", "--update-per-epoch"])
def test_offline_scripts_count_updates_per_epoch_in_epoch_num_steps(spelling: str) -> None:
    args = importlib.import_module("examples.offline.minari_cql").get_args(
        [spelling, "500", "--persistence_base_dir", "log2", "--logger_type", "tensorboard"]
    )
    assert (args.epoch_num_steps, args.persistence_base_dir, args.logger_type) == (
        500,
        "log2",
        "tensorboard",
    )


def test_high_level_scripts_take_the_published_spellings() -> None:
    from tianshou.highlevel.cli import build_parser

    main = importlib.import_module("examples.mujoco.mujoco_sac_hl").main
    parser = build_parser(main)
    values = vars(parser.parse_args(PUBLISHED_2X[:-2]))
    assert values == {**values, **dict(list(PUBLISHED_VALUES.items())[:-1])}
    older = vars(parser.parse_args(["--training-num", "2", "--step-per-epoch", "500"]))
    assert (older["num_training_envs"], older["epoch_num_steps"]) == (2, 500)
