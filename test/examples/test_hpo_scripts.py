"""The search scripts of ``examples/hpo`` on tiny budgets, and loading their best configuration
into a ``*_hl.py`` script's command line (``--config-file`` of ``tianshou.highlevel.cli``)."""

import importlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path

import pytest
import torch

from tianshou.highlevel.cli import run_cli
from tianshou.highlevel.hpo.best_config import BestConfiguration


@pytest.fixture(autouse=True)
def single_threaded() -> None:
    torch.set_num_threads(1)


def run_script(module: str, argv: list[str]) -> object:
    return run_cli(importlib.import_module(f"examples.hpo.{module}").main, argv)


def test_ppo_cartpole_search_prints_the_top_trials_and_writes_report_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    run_script(
        "ppo_cartpole_hpo",
        [
            *("--n-trials", "2", "--seeds", "2", "--out", str(out)),
            *("--storage", str(tmp_path / "study.db"), "--n-jobs", "1", "--timeout", "120"),
            *("--top-k", "2", "--reevaluation-seeds", "2", "--pruner", "none"),
            *("--epoch", "1", "--epoch-num-steps", "100", "--num-training-envs", "1"),
        ],
    )
    printed = capsys.readouterr().out
    assert "IQM [95% CI] on search seeds" in printed and "Re-evaluation on fresh seeds" in printed
    report = json.loads((out / "study.json").read_text())
    assert report["num_trials"] == 2 and report["algorithm"] == "PPO"
    assert len(report["reevaluation"]["configurations"]) == 2
    for name in ("optimization_history.png", "param_importances.png", "reevaluation.png"):
        assert (out / name).stat().st_size > 0
    assert BestConfiguration.load(str(out / "best_config.json")).algorithm == "PPO"


def test_sac_pendulum_search_runs_its_conditional_space(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_script(
        "sac_pendulum_hpo",
        [
            *("--n-trials", "1", "--seeds", "1", "--out", str(out), "--top-k", "0"),
            *("--epoch", "1", "--epoch-num-steps", "50", "--num-test-envs", "1"),
        ],
    )
    values = result.best.hyperparameters  # type: ignore[attr-defined]
    assert ("alpha_lr" in values) == values["auto_alpha"]
    # the search silences the library's messages only while it runs
    assert logging.getLogger("tianshou").level == logging.NOTSET
    assert json.loads((out / "study.json").read_text())["best"]["chosen_by"] == "search"


def script_main(lr: float = 1e-3, hidden_sizes: Sequence[int] = (8,), epoch: int = 1) -> dict:
    """A stand-in for a ``*_hl.py`` script's ``main``."""
    return {"lr": lr, "hidden_sizes": tuple(hidden_sizes), "epoch": epoch}


def test_config_file_gives_defaults_that_options_override(tmp_path: Path) -> None:
    path = str(tmp_path / "best_config.json")
    BestConfiguration("PPO", {"lr": 5e-4, "hidden_sizes": (32, 32)}, 0, "search").save(path)
    assert run_cli(script_main, ["--config-file", path]) == {
        "lr": 5e-4,
        "hidden_sizes": (32, 32),
        "epoch": 1,
    }
    assert run_cli(script_main, ["--config-file", path, "--lr", "0.1"])["lr"] == 0.1
    assert run_cli(script_main, [])["lr"] == 1e-3
    BestConfiguration("PPO", {"gae_lambda": 0.9}, 0, "search").save(path)
    with pytest.raises(SystemExit):
        run_cli(script_main, ["--config-file", path])
