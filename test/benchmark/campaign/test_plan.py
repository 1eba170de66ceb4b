"""The run plan: overrides, the epoch split of a budget, and the script command line, which
must leave every option of the script's published defaults alone."""

import math
from pathlib import Path

import pytest

from benchmark.campaign.plan import (
    RUNNER_OPTIONS,
    RunSpec,
    available_algorithms,
    epoch_split,
    overrides_for,
    parse_overrides,
    script_args,
    script_argv,
    script_log_path,
)


def test_available_algorithms_are_the_low_level_scripts() -> None:
    algorithms = available_algorithms()
    assert {"sac", "td3", "ppo", "ddpg", "a2c", "npg", "trpo", "reinforce"} <= set(algorithms)
    assert not [name for name in algorithms if name.endswith("_hl") or name == "env"]


def test_overrides_apply_to_all_or_one_algorithm_in_any_spelling() -> None:
    parsed = parse_overrides(["num-test-envs=2", "sac:start_timesteps=500", "hidden_sizes=64 64"])
    assert overrides_for("ppo", parsed) == ("--num-test-envs", "2", "--hidden-sizes", "64", "64")
    assert overrides_for("sac", parsed) == (
        "--num-test-envs",
        "2",
        "--hidden-sizes",
        "64",
        "64",
        "--start-timesteps",
        "500",
    )


@pytest.mark.parametrize("item", ["seed=3", "sac:logdir=x", "epoch=4", "no_progress=1"])
def test_overrides_may_not_set_what_the_runner_sets(item: str) -> None:
    with pytest.raises(ValueError, match="the runner sets"):
        parse_overrides([item])


@pytest.mark.parametrize("item", ["batch_size", "=3", "sac:=1"])
def test_malformed_overrides_are_refused(item: str) -> None:
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_overrides([item])


def test_epoch_split_keeps_the_script_epoch_length_when_it_divides_the_budget() -> None:
    defaults = script_args("sac", [])
    budget = defaults.start_timesteps + 4 * defaults.epoch_num_steps
    split = epoch_split(defaults, budget)
    assert (split.warmup_env_steps, split.epochs) == (defaults.start_timesteps, 4)
    assert split.epoch_num_steps == defaults.epoch_num_steps


@pytest.mark.parametrize("budget", [1_000_000, 45_001, 1_000, 1])
def test_epoch_split_spends_the_budget_in_whole_epochs_no_longer_than_the_script_s(
    budget: int,
) -> None:
    defaults = script_args("ppo", [])
    split = epoch_split(defaults, budget)
    assert split.warmup_env_steps == 0  # on-policy scripts have no random warm-up
    assert split.epoch_num_steps <= defaults.epoch_num_steps
    assert split.epochs == math.ceil(budget / defaults.epoch_num_steps)
    assert budget <= split.epochs * split.epoch_num_steps < budget + split.epochs


def test_a_budget_within_the_random_warm_up_is_refused() -> None:
    defaults = script_args("td3", [])
    with pytest.raises(ValueError, match="start_timesteps"):
        epoch_split(defaults, defaults.start_timesteps)


@pytest.mark.parametrize("algorithm", ["sac", "ppo", "td3"])
def test_script_argv_changes_only_what_the_runner_owns(algorithm: str, tmp_path: Path) -> None:
    spec = RunSpec("Walker2d-v5", algorithm, 4, 100_000, ("--num-test-envs", "3"))
    args = script_args(algorithm, script_argv(spec, tmp_path))
    defaults = vars(script_args(algorithm, []))
    changed = {key for key, value in vars(args).items() if defaults[key] != value}
    assert changed <= RUNNER_OPTIONS | {"epoch_num_steps", "num_test_envs"}
    assert (args.task, args.seed, args.num_test_envs) == ("Walker2d-v5", 4, 3)
    assert args.save_checkpoints and args.no_progress
    split = epoch_split(args, spec.env_steps)
    assert (args.epoch, args.epoch_num_steps) == (split.epochs, split.epoch_num_steps)
    assert Path(args.persistence_base_dir) / "Walker2d-v5" / algorithm / "4" == script_log_path(
        spec, tmp_path
    )


def test_script_argv_reports_an_option_the_script_rejects(tmp_path: Path) -> None:
    spec = RunSpec("Hopper-v5", "ppo", 0, 10_000, ("--batch-size", "many"))
    with pytest.raises(ValueError, match=r"mujoco_ppo.py rejects .*--batch-size"):
        script_argv(spec, tmp_path)


def test_run_spec_round_trips_through_json_and_names_its_directory(tmp_path: Path) -> None:
    spec = RunSpec("Ant-v5", "td3", 2, 5000, ("--gamma", "0.9"))
    assert RunSpec.from_json(spec.to_json()) == spec
    assert spec.run_dir(tmp_path) == tmp_path / "runs" / "Ant-v5" / "td3" / "seed2"
