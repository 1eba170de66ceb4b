"""The offline example scripts (examples/offline/) and their shared helper
``tianshou.scripts.offline``.

Each script trains on a tiny Hopper-v5 Minari dataset made here with Minari's DataCollector
(random actions, two episodes of at most 20 steps, in a temporary MINARI_DATASETS_PATH), prints
a D4RL-normalised score, saves its policy and evaluates it again from the saved file; a missing
dataset stops a script with the ``minari download`` command to run.
"""

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from test.algorithm.imitation.test_imitation_base import PendulumExpert
from test.data.test_minari import collect_dataset
from tianshou.data import CollectStats, InfoStats
from tianshou.data.minari import load_minari_buffer

REPO_ROOT = Path(__file__).resolve().parents[2]
DATASET = "mujoco/hopper/tiny-v0"
REF_MIN, REF_MAX = -20.0, 3000.0
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def headless_with_own_datasets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    torch.set_num_threads(1)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))


@pytest.fixture
def hopper_dataset() -> Any:
    env = gym.make("Hopper-v5", max_episode_steps=20)
    dataset, _ = collect_dataset(
        env, DATASET, num_episodes=2, ref_min_score=REF_MIN, ref_max_score=REF_MAX
    )
    return dataset


def script(algo: str) -> ModuleType:
    return importlib.import_module(f"examples.offline.minari_{algo}")


def common() -> ModuleType:
    return importlib.import_module("tianshou.scripts.offline")


TINY = ["--dataset", DATASET, "--epoch", "1", "--update-per-epoch", "3", "--batch-size", "8"]
TINY += ["--hidden-sizes", "8", "--num-test-envs", "2", "--no-progress", "--device", "cpu"]
EXTRA = {"bc": [], "bcq": ["--vae-hidden-sizes", "8"], "cql": [], "td3_bc": []}


def printed_score(out: str, label: str) -> float:
    match = re.search(rf"{label} (-?[\d.]+)", out)
    assert match, f"no '{label}' in the output:\n{out}"
    return float(match.group(1))


@pytest.mark.parametrize("algo", list(EXTRA))
def test_script_trains_reports_a_normalised_score_and_watches(
    algo: str, hopper_dataset: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*TINY, *EXTRA[algo], "--logdir", str(tmp_path / "log")]
    result = script(algo).main(args)
    assert isinstance(result, InfoStats)
    assert result.update_step == 3
    # the best score is the normalised mean return of its test step
    expected = 100 * (result.best_reward - REF_MIN) / (REF_MAX - REF_MIN)
    assert result.best_score == pytest.approx(expected)
    out = capsys.readouterr().out
    assert printed_score(out, "best normalised score") == pytest.approx(expected, abs=0.06)
    saved = tmp_path / "log" / DATASET / algo / "0" / "policy.pth"
    assert saved.exists()
    assert (saved.parent / "obs_rms.npz").exists() == (algo == "td3_bc")

    watched = script(algo).main([*args, "--watch", "--resume-path", str(saved)])
    assert isinstance(watched, CollectStats)
    assert len(watched.returns) == 2
    expected = 100 * (watched.returns.mean() - REF_MIN) / (REF_MAX - REF_MIN)
    out = capsys.readouterr().out
    assert f"loaded {saved}" in out
    assert printed_score(out, "normalised score") == pytest.approx(expected, abs=0.06)


def test_missing_dataset_names_the_download_command() -> None:
    with pytest.raises(SystemExit) as exit_info:
        script("bc").main(["--dataset", "mujoco/hopper/expert-v0"])
    message = str(exit_info.value.code)  # a message, not 0: the exit status is 1
    assert "minari download mujoco/hopper/expert-v0" in message


@pytest.mark.slow
def test_missing_dataset_exit_status_from_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "MINARI_DATASETS_PATH": str(tmp_path / "empty")}
    done = subprocess.run(
        [sys.executable, "-m", "examples.offline.minari_bc"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1
    assert "minari download mujoco/hopper/expert-v0" in done.stderr


@pytest.mark.slow
def test_behaviour_cloning_script_learns_from_an_expert_dataset(tmp_path: Path) -> None:
    """End to end: 20 episodes (4000 steps) of a scripted Pendulum swing-up expert, recorded by
    Minari's DataCollector with its env torques in [-2, 2], cloned by minari_bc.py for 5 epochs
    of 500 updates. The expert returns about -150, a random policy about -1230: normalised 100
    and 0. Seeds 0, 1, 2 reached 100.5, 91.9, 90.8 (the untrained actor: -16)."""
    expert = PendulumExpert()
    collect_dataset(
        gym.make("Pendulum-v1"),
        "test/pendulum/expert-v0",
        lambda obs, rng: expert.compute_action(obs),
        num_episodes=20,
        ref_min_score=-1230.0,
        ref_max_score=-180.0,
    )
    result = script("bc").main(
        ["--dataset", "test/pendulum/expert-v0", "--epoch", "5", "--update-per-epoch", "500",
         "--batch-size", "64", "--hidden-sizes", "64", "64", "--lr", "1e-3", "--backend", "dummy",
         "--no-progress", "--device", "cpu", "--logdir", str(tmp_path)]
    )  # fmt: skip
    assert isinstance(result, InfoStats)
    assert result.best_score >= 75.0


class TestCommon:
    def test_defaults_and_underscore_options(self) -> None:
        args = script("bc").get_args(["--update_per_epoch", "7", "--batch-size", "5"])
        assert args.dataset == "mujoco/hopper/expert-v0"
        assert (args.epoch_num_steps, args.batch_size, args.epoch) == (7, 5, 200)
        assert args.hidden_sizes == [256, 256]
        assert not args.norm_obs
        assert script("td3_bc").get_args([]).norm_obs
        cql_args = script("cql").get_args([])
        assert (cql_args.actor_lr, cql_args.alpha_lr, cql_args.auto_alpha) == (1e-4, 1e-4, True)

    def test_a_task_with_other_spaces_is_refused(self, hopper_dataset: Any) -> None:
        args = script("bc").get_args(["--dataset", DATASET, "--task", "Pendulum-v1"])
        with pytest.raises(SystemExit, match=r"observation_space .* does not match"):
            common().env_factory(args, hopper_dataset)

    def test_the_recovered_env_is_the_datasets(self, hopper_dataset: Any) -> None:
        args = script("bc").get_args(["--dataset", DATASET])
        env = common().env_factory(args, hopper_dataset)()
        assert env.spec.id == "Hopper-v5"
        assert env.spec.max_episode_steps == 20

    def test_training_buffer_in_the_policy_terms(self, hopper_dataset: Any) -> None:
        """Actions go to the policy's raw space, observations are normalised as the test envs
        normalise them."""
        args = script("bc").get_args(["--hidden-sizes", "4", "--device", "cpu"])
        env = gym.make("Hopper-v5")
        env.action_space = gym.spaces.Box(-2.0, 2.0, shape=(3,))  # raw = env action / 2
        algorithm = script("bc").build_bc(args, env)
        buffer = load_minari_buffer(hopper_dataset)
        obs_rms = common().observation_statistics(buffer)
        np.testing.assert_allclose(obs_rms.mean, buffer.obs.mean(axis=0))
        prepared = common().training_buffer(buffer, algorithm, obs_rms)
        np.testing.assert_allclose(prepared.act, buffer.act / 2.0, atol=1e-6)
        np.testing.assert_allclose(prepared.obs, obs_rms.norm(buffer.obs))
        np.testing.assert_allclose(prepared.obs_next, obs_rms.norm(buffer.obs_next))
        for key in ("rew", "terminated", "truncated", "done"):
            np.testing.assert_array_equal(prepared[:][key], buffer[:][key])
