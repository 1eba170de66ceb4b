"""The high-level example scripts (``examples/*/*_hl.py``), their command line and the MuJoCo
env factory they share.

Every script's ``main`` trains for one epoch of a few dozen steps, headless, and writes its
policy and logs into a temporary directory; the MuJoCo observation statistics are persisted and
restored with the policy.
"""

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.data import InfoStats
from tianshou.env import DummyVectorEnv, VectorEnvNormObs
from tianshou.env.obs_norm_file import load_obs_rms
from tianshou.highlevel import cli as hl_cli
from tianshou.highlevel.env import EnvMode, VectorEnvType
from tianshou.highlevel.experiment import Experiment, ExperimentResult
from tianshou.highlevel.mujoco import MujocoEnvFactory
from tianshou.highlevel.persistence import PersistEvent, RestoreEvent
from tianshou.highlevel.world import World

REPO_ROOT = Path(__file__).resolve().parents[2]
MUJOCO_TASK = "Hopper-v5"
ATARI_TASK = "PongNoFrameskip-v4"
ATARI_EPISODE_STEPS = 30
"""Pong episodes last about a thousand agent steps; the Atari tests cut them here."""


@pytest.fixture(autouse=True)
def headless(monkeypatch: pytest.MonkeyPatch) -> None:
    """The scripts run headless here, single-threaded."""
    torch.set_num_threads(1)
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)


def script_main(name: str) -> Any:
    """The ``main`` of the script ``examples.<family>.<name>``."""
    family = name.split("_")[0]
    return importlib.import_module(f"examples.{family}.{name}").main


def run_dirs(base: Path) -> list[Path]:
    """The run directories under ``base``: those a policy was saved into."""
    return sorted(path.parent for path in base.rglob("policy_state_dict.pt"))


def assert_run_persisted(run_dir: Path, obs_norm: bool = False) -> None:
    files = os.listdir(run_dir)
    assert "policy.pt" in files
    assert "experiment.pkl" in files
    assert any(name.startswith("events.out.tfevents") for name in files), files
    assert ("obs_rms.npz" in files) == obs_norm, files


# ---------------------------------------------------------------------------- MuJoCo
MUJOCO_TINY: dict[str, Any] = {
    "task": MUJOCO_TASK,
    "epoch": 1,
    "epoch_num_steps": 32,
    "num_training_envs": 1,
    "num_test_envs": 1,
    "hidden_sizes": (16,),
}
ON_POLICY: dict[str, Any] = {"collection_step_num_env_steps": 16, "batch_size": 16}
OFF_POLICY: dict[str, Any] = {"start_timesteps": 32, "batch_size": 16, "buffer_size": 100}
MUJOCO_SCRIPTS: dict[str, dict[str, Any]] = {
    "reinforce": ON_POLICY,
    "a2c": ON_POLICY,
    "ppo": ON_POLICY,
    "npg": {**ON_POLICY, "optim_critic_iters": 2},
    "trpo": {**ON_POLICY, "optim_critic_iters": 2},
    "ddpg": OFF_POLICY,
    "td3": OFF_POLICY,
    "sac": OFF_POLICY,
    "redq": {
        **OFF_POLICY,
        "ensemble_size": 3,
        "update_step_num_gradient_steps_per_sample": 1.0,
        "actor_delay": 2,
    },
}
OBS_NORM = {"reinforce", "a2c", "ppo", "npg", "trpo"}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("algo", list(MUJOCO_SCRIPTS))
def test_mujoco_script_trains_and_persists(algo: str, tmp_path: Path) -> None:
    main = script_main(f"mujoco_{algo}_hl")
    result = main(persistence_base_dir=str(tmp_path), **MUJOCO_TINY, **MUJOCO_SCRIPTS[algo])
    assert isinstance(result, ExperimentResult)
    assert isinstance(result.trainer_result, InfoStats)
    assert result.trainer_result.train_step >= MUJOCO_TINY["epoch_num_steps"]
    assert result.trainer_result.update_step > 0
    (run_dir,) = run_dirs(tmp_path)
    assert_run_persisted(run_dir, obs_norm=algo in OBS_NORM)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_mujoco_seeded_runs_get_their_own_directories(tmp_path: Path) -> None:
    main = script_main("mujoco_reinforce_hl")
    kwargs = {**MUJOCO_TINY, **ON_POLICY, "epoch_num_steps": 16}
    results = main(persistence_base_dir=str(tmp_path), num_experiments=2, seed=7, **kwargs)
    assert len(results) == 2
    assert all(isinstance(result, InfoStats) for result in results)
    dirs = run_dirs(tmp_path)
    assert [d.name for d in dirs] == ["seed=7", "seed=8"]
    for run_dir in dirs:
        assert_run_persisted(run_dir, obs_norm=True)
    # the seeds are evaluated together with rliable
    assert (dirs[0].parent / "test_rliable_results.json").is_file()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_sac_and_redq_scripts_evaluate_deterministically_as_the_procedural_ones(
    tmp_path: Path,
) -> None:
    for algo in ("sac", "redq"):
        main = script_main(f"mujoco_{algo}_hl")
        kwargs = {**MUJOCO_TINY, **MUJOCO_SCRIPTS[algo], "epoch": 0, "start_timesteps": 0}
        result = main(persistence_base_dir=str(tmp_path / algo), **kwargs)
        assert result.world.algorithm.policy.deterministic_eval


def test_noisy_scripts_set_their_exploration_noise(tmp_path: Path) -> None:
    for algo in ("ddpg", "td3"):
        main = script_main(f"mujoco_{algo}_hl")
        kwargs = {**MUJOCO_TINY, **OFF_POLICY, "epoch": 0, "start_timesteps": 0}
        result = main(persistence_base_dir=str(tmp_path / algo), exploration_noise=0.3, **kwargs)
        noise = result.world.algorithm.policy.exploration_noise
        assert noise is not None and noise._sigma == pytest.approx(0.3)  # Hopper's max action 1


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_mujoco_restored_experiment_uses_the_saved_obs_statistics(tmp_path: Path) -> None:
    """A run restored from its directory normalises observations by the saved statistics."""
    main = script_main("mujoco_ppo_hl")
    main(persistence_base_dir=str(tmp_path), **MUJOCO_TINY, **ON_POLICY)
    (run_dir,) = run_dirs(tmp_path)
    saved = load_obs_rms(str(run_dir / "obs_rms.npz"))
    assert saved.count > 1

    experiment = Experiment.from_directory(str(run_dir))
    experiment.config.train = False
    experiment.config.watch = False
    result = experiment.run(run_name="restored")
    training_envs, test_envs = result.world.envs.training_envs, result.world.envs.test_envs
    assert isinstance(training_envs, VectorEnvNormObs)
    assert isinstance(test_envs, VectorEnvNormObs)
    assert test_envs.get_obs_rms() is training_envs.get_obs_rms()
    np.testing.assert_array_equal(training_envs.get_obs_rms().mean, saved.mean)
    np.testing.assert_array_equal(training_envs.get_obs_rms().var, saved.var)


def gym_mujoco_factory(obs_norm: bool = True) -> Any:
    """A MuJoCo env factory on gymnasium (not EnvPool), stepping envs in this process."""
    return MujocoEnvFactory(
        MUJOCO_TASK,
        obs_norm=obs_norm,
        venv_type=VectorEnvType.DUMMY,
        use_envpool_if_available=False,
    )


def test_mujoco_env_factory_shares_the_training_statistics() -> None:
    envs = gym_mujoco_factory().create_envs(2, 1, create_watch_env=True, seed=3)
    assert isinstance(envs.training_envs, VectorEnvNormObs)
    assert isinstance(envs.training_envs.venv, DummyVectorEnv)
    obs_rms = envs.training_envs.get_obs_rms()
    assert envs.test_envs.get_obs_rms() is obs_rms
    assert envs.watch_env is not None
    assert envs.watch_env.get_obs_rms() is obs_rms
    assert [type(p).__name__ for p in envs.persistence] == ["MujocoEnvObsRmsPersistence"]

    envs.training_envs.reset()
    mean, count = obs_rms.mean.copy(), obs_rms.count
    assert count > 1
    envs.test_envs.reset()  # test envs normalise without updating the statistics
    np.testing.assert_array_equal(obs_rms.mean, mean)
    assert obs_rms.count == count


def test_mujoco_env_factory_without_obs_norm_leaves_envs_alone() -> None:
    envs = gym_mujoco_factory(obs_norm=False).create_envs(1, 1, seed=0)
    assert isinstance(envs.training_envs, DummyVectorEnv)
    assert isinstance(envs.test_envs, DummyVectorEnv)
    assert list(envs.persistence) == []


def test_mujoco_env_factory_rejects_discrete_tasks() -> None:
    factory = MujocoEnvFactory(
        "CartPole-v1", venv_type=VectorEnvType.DUMMY, use_envpool_if_available=False
    )
    with pytest.raises(ValueError, match="continuous"):
        factory.create_envs(1, 1)


def world_of(envs: Any, persist_directory: Path, restore_directory: Path | None) -> World:
    return World(
        envs=envs,
        algorithm=None,  # type: ignore[arg-type]  # the persistence reads envs only
        logger=None,  # type: ignore[arg-type]
        persist_directory=str(persist_directory),
        restore_directory=None if restore_directory is None else str(restore_directory),
    )


def test_obs_rms_persistence_round_trip(tmp_path: Path) -> None:
    envs = gym_mujoco_factory().create_envs(2, 1, seed=0)
    envs.training_envs.reset()
    envs.training_envs.step(np.zeros((2, 3)))
    saved = envs.training_envs.get_obs_rms()
    (persistence,) = envs.persistence
    persistence.persist(PersistEvent.PERSIST_POLICY, world_of(envs, tmp_path, None))
    assert os.listdir(tmp_path) == ["obs_rms.npz"]

    fresh = gym_mujoco_factory().create_envs(1, 1, create_watch_env=True, seed=5)
    persistence.restore(RestoreEvent.RESTORE_POLICY, world_of(fresh, tmp_path / "x", tmp_path))
    restored = fresh.training_envs.get_obs_rms()
    assert restored is fresh.test_envs.get_obs_rms() is fresh.watch_env.get_obs_rms()
    np.testing.assert_array_equal(restored.mean, saved.mean)
    np.testing.assert_array_equal(restored.var, saved.var)
    assert restored.count == saved.count


# ---------------------------------------------------------------------------- Atari
ATARI_TINY: dict[str, Any] = {
    "task": ATARI_TASK,
    "epoch": 1,
    "epoch_num_steps": 100,
    "num_training_envs": 2,
    "num_test_envs": 1,
    "buffer_size": 200,
    "batch_size": 8,
}
OFF_POLICY_ATARI: dict[str, Any] = {"update_step_num_gradient_steps_per_sample": 0.1}
ATARI_SCRIPTS: dict[str, tuple[str, dict[str, Any]]] = {
    "dqn": ("atari_dqn_hl", OFF_POLICY_ATARI),
    "dqn_icm": ("atari_dqn_hl", {**OFF_POLICY_ATARI, "icm_lr_scale": 1.0}),
    "iqn": (
        "atari_iqn_hl",
        {**OFF_POLICY_ATARI, "sample_size": 4, "online_sample_size": 4, "hidden_sizes": (16,)},
    ),
    "sac": ("atari_sac_hl", {**OFF_POLICY_ATARI, "hidden_size": 16}),
    "ppo": ("atari_ppo_hl", {"collection_step_num_env_steps": 50, "hidden_size": 16}),
}


@pytest.fixture
def short_atari_episodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut Atari episodes at :data:`ATARI_EPISODE_STEPS` agent steps, gymnasium or EnvPool."""
    from tianshou.env.atari import atari_wrapper

    monkeypatch.setattr(atari_wrapper, "MAX_EPISODE_STEPS", ATARI_EPISODE_STEPS)
    create_env = atari_wrapper.AtariEnvFactory.create_env

    def short_env(self: Any, mode: EnvMode, seed: int | None = None) -> gym.Env:
        return gym.wrappers.TimeLimit(create_env(self, mode, seed), ATARI_EPISODE_STEPS)

    monkeypatch.setattr(atari_wrapper.AtariEnvFactory, "create_env", short_env)


@pytest.mark.usefixtures("short_atari_episodes")
@pytest.mark.parametrize("variant", list(ATARI_SCRIPTS))
def test_atari_script_trains_and_persists(variant: str, tmp_path: Path) -> None:
    module_name, kwargs = ATARI_SCRIPTS[variant]
    main = script_main(module_name)
    result = main(persistence_base_dir=str(tmp_path), watch=False, **ATARI_TINY, **kwargs)
    assert isinstance(result, ExperimentResult)
    assert isinstance(result.trainer_result, InfoStats)
    assert result.trainer_result.train_step >= ATARI_TINY["epoch_num_steps"]
    assert result.trainer_result.update_step > 0
    # the test before training and the one after the epoch, one short episode each
    assert result.trainer_result.test_step <= 2 * ATARI_EPISODE_STEPS
    (run_dir,) = run_dirs(tmp_path)
    assert_run_persisted(run_dir)


# ---------------------------------------------------------------------------- discrete
DISCRETE_TINY: dict[str, Any] = {
    "epoch": 1,
    "epoch_num_steps": 100,
    "num_training_envs": 2,
    "num_test_envs": 2,
    "buffer_size": 200,
    "batch_size": 16,
    "hidden_sizes": (16,),
}


def test_discrete_dqn_trains_persists_and_watches_headless(tmp_path: Path) -> None:
    main = script_main("discrete_dqn_hl")
    result = main(
        persistence_base_dir=str(tmp_path),
        persistence_enabled=True,
        watch=True,
        watch_num_episodes=2,
        **DISCRETE_TINY,
    )
    assert isinstance(result.trainer_result, InfoStats)
    assert result.trainer_result.train_step >= DISCRETE_TINY["epoch_num_steps"]
    (run_dir,) = run_dirs(tmp_path)
    assert_run_persisted(run_dir)


def test_discrete_dqn_without_persistence_writes_nothing(tmp_path: Path) -> None:
    main = script_main("discrete_dqn_hl")
    result = main(persistence_base_dir=str(tmp_path), watch=False, **DISCRETE_TINY)
    assert isinstance(result.trainer_result, InfoStats)
    assert not any(tmp_path.iterdir())


def run_script(module: str, args: list[str]) -> None:
    """Run the script ``module`` as documented (``python -m`` from the repository root),
    headless; the tests send everything it writes to a temporary directory."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=REPO_ROOT,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_script_runs_from_the_command_line(tmp_path: Path) -> None:
    """Options spelt both ways."""
    args = ["--epoch", "1", "--epoch_num_steps", "50", "--num-training-envs", "1"]
    args += ["--num-test-envs", "1", "--buffer-size", "100", "--hidden-sizes", "8"]
    args += ["--no-watch", "--persistence-enabled", "--persistence-base-dir", str(tmp_path)]
    args += ["--experiment_launcher", "sequential"]
    run_script("examples.discrete.discrete_dqn_hl", args)
    (run_dir,) = run_dirs(tmp_path)
    assert_run_persisted(run_dir)


@pytest.mark.parametrize("launcher", ["joblib", "sequential"])
def test_mujoco_script_runs_its_seeds_with_the_named_launcher(
    launcher: str, tmp_path: Path
) -> None:
    """The published command line: ``--experiment_launcher joblib|sequential``."""
    args = ["--task", MUJOCO_TASK, "--epoch", "1", "--epoch_num_steps", "16"]
    args += ["--num_training_envs", "1", "--num_test_envs", "1", "--hidden_sizes", "8"]
    args += ["--collection_step_num_env_steps", "16", "--batch_size", "16"]
    args += ["--num_experiments", "2", "--experiment_launcher", launcher, "--seed", "3"]
    args += ["--persistence_base_dir", str(tmp_path)]
    run_script("examples.mujoco.mujoco_reinforce_hl", args)
    dirs = run_dirs(tmp_path)
    assert [d.name for d in dirs] == ["seed=3", "seed=4"]
    for run_dir in dirs:
        assert_run_persisted(run_dir, obs_norm=True)
    assert (dirs[0].parent / "test_iqm_sample_efficiency.png").is_file()


# ---------------------------------------------------------------------------- CLI
class Color(Enum):
    red = "r"
    blue = "b"


def cli_target(
    task: str = "Hopper-v5",
    epoch_num_steps: int = 100,
    lr: float = 1e-3,
    lr_decay: bool = True,
    hidden_sizes: Sequence[int] = (64, 64),
    dual_clip: float | None = None,
    method: Literal["clip", "tanh"] = "clip",
    color: Color = Color.red,
) -> dict[str, Any]:
    """A function to call from the command line.

    :param task: the task.
    :param lr_decay: decay the learning
        rate.
    """
    return dict(locals())


def test_cli_keeps_defaults_of_options_not_given() -> None:
    assert hl_cli.run_cli(cli_target, []) == cli_target()


def test_cli_parses_options_by_annotation() -> None:
    argv = ["--task", "Ant-v5", "--epoch-num-steps", "7", "--lr", "0.5", "--no-lr-decay"]
    argv += ["--hidden-sizes", "3", "4", "5", "--dual-clip", "2", "--method", "tanh"]
    argv += ["--color", "BLUE"]
    assert hl_cli.run_cli(cli_target, argv) == {
        "task": "Ant-v5",
        "epoch_num_steps": 7,
        "lr": 0.5,
        "lr_decay": False,
        "hidden_sizes": [3, 4, 5],
        "dual_clip": 2.0,
        "method": "tanh",
        "color": Color.blue,
    }


def test_cli_accepts_underscores_and_none() -> None:
    argv = ["--epoch_num_steps", "9", "--no_lr_decay", "--dual_clip", "None", "--lr-decay"]
    result = hl_cli.run_cli(cli_target, argv)
    assert (result["epoch_num_steps"], result["lr_decay"], result["dual_clip"]) == (9, True, None)


@pytest.mark.parametrize(
    "argv",
    [["--epoch-num-steps", "1.5"], ["--method", "squash"], ["--color", "green"], ["--unknown"]],
)
def test_cli_rejects_invalid_options(argv: list[str], capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as info:
        hl_cli.run_cli(cli_target, argv)
    assert info.value.code == 2
    assert argv[0] in capsys.readouterr().err


def test_cli_help_shows_the_docstring_params(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        hl_cli.run_cli(cli_target, ["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "A function to call from the command line." in out
    assert "decay the learning rate. (default: True)" in out
    assert "--no-lr-decay" in out


def test_cli_needs_defaults() -> None:
    def no_default(task: str) -> None:
        pass

    with pytest.raises(TypeError, match="task"):
        hl_cli.build_parser(no_default)


@pytest.mark.parametrize(
    "module",
    [
        *(f"mujoco_{algo}_hl" for algo in MUJOCO_SCRIPTS),
        *sorted({name for name, _ in ATARI_SCRIPTS.values()}),
        "discrete_dqn_hl",
    ],
)
def test_every_script_has_a_command_line(module: str) -> None:
    main = script_main(module)
    parser = hl_cli.build_parser(main)
    # options not given are left to main's defaults; --torch-threads is run_cli's own
    assert vars(parser.parse_args([])) == {"torch_threads": 1}
    assert parser.parse_args(["--seed", "3"]).seed == 3


def test_run_cli_hands_torch_threads_to_a_main_that_takes_it(
    capsys: pytest.CaptureFixture,
) -> None:
    """The experiments of a high-level script apply TrainingConfig.torch_threads themselves,
    so the command line's value must reach that field, not only the surrounding block."""
    seen: dict[str, Any] = {}

    def main(seed: int = 0, torch_threads: int | None = 1) -> None:
        seen.update(seed=seed, torch_threads=torch_threads, during=torch.get_num_threads())

    before = torch.get_num_threads()
    hl_cli.run_cli(main, ["--torch-threads", "2", "--seed", "5"])
    assert seen == {"seed": 5, "torch_threads": 2, "during": 2}
    assert torch.get_num_threads() == before
    hl_cli.run_cli(main, ["--torch-threads", "auto"])
    assert seen["torch_threads"] is None
    assert "torch: 2 intra-op threads (--torch-threads)" in capsys.readouterr().out


class _ConfigSeen(Exception):
    """Raised by the stand-in training config with the keyword arguments it was given."""


@pytest.mark.parametrize(
    "module",
    [
        *(f"mujoco_{algo}_hl" for algo in MUJOCO_SCRIPTS),
        *sorted({name for name, _ in ATARI_SCRIPTS.values()}),
        "discrete_dqn_hl",
    ],
)
def test_every_script_hands_its_threads_to_the_training_config(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    main = script_main(module)
    namespace = sys.modules[main.__module__]

    def stand_in(**kwargs: Any) -> None:
        raise _ConfigSeen(kwargs)

    for name in ("OnPolicyTrainingConfig", "OffPolicyTrainingConfig"):
        if hasattr(namespace, name):
            monkeypatch.setattr(namespace, name, stand_in)
    with pytest.raises(_ConfigSeen) as seen:
        main(torch_threads=3)
    assert seen.value.args[0]["torch_threads"] == 3


# ---------------------------------------------------------------------------- what a run says
PPO_CLI_TINY = [
    "--epoch", "1", "--epoch-num-steps", "32", "--collection-step-num-env-steps", "16",
    "--batch-size", "16", "--num-training-envs", "1", "--num-test-envs", "2",
    "--hidden-sizes", "16",
]  # fmt: skip


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_run_ends_with_its_summary_and_result_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main = script_main("mujoco_ppo_hl")
    result = hl_cli.run_cli(main, [*PPO_CLI_TINY, "--persistence-base-dir", str(tmp_path)])
    (run_dir,) = run_dirs(tmp_path)
    saved = json.loads((run_dir / "result.json").read_text())
    assert (saved["task"], saved["algorithm"]) == (MUJOCO_TASK, "PPO")
    assert saved["env_steps"] == result.trainer_result.train_step >= 32
    assert saved["best_test_return"] == pytest.approx(result.trainer_result.best_reward)
    assert np.isfinite(saved["final_test_return"])
    assert saved["policy_path"] == str(run_dir / "policy_state_dict.pt")
    # the configuration holds every option, given or default
    assert saved["config"]["epoch_num_steps"] == 32 and saved["config"]["gamma"] == 0.99
    out = capsys.readouterr().out
    assert "Run summary" in out and f"result file        {run_dir / 'result.json'}" in out


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_seeds_end_with_one_table_and_one_result_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main = script_main("mujoco_ppo_hl")
    argv = [*PPO_CLI_TINY, "--persistence-base-dir", str(tmp_path), "--num-experiments", "2"]
    results = hl_cli.run_cli(main, [*argv, "--seed", "3"])
    seed_dirs = run_dirs(tmp_path)
    saved = json.loads((seed_dirs[0].parent / "result.json").read_text())
    assert [run["seed"] for run in saved["runs"]] == [3, 4]
    for run, info, run_dir in zip(saved["runs"], results, seed_dirs, strict=True):
        assert run["best_test_return"] == pytest.approx(info.best_reward)
        assert run["log_dir"] == str(run_dir)
        assert np.isfinite(run["last_test_return"])
    out = capsys.readouterr().out
    assert "Run summary: PPO on Hopper-v5, 2 seeds" in out
    assert "\n     3 " in out and "\n     4 " in out and "\n  mean " in out


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_resume_path_starts_from_a_saved_policy_and_watch_only_watches_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main = script_main("mujoco_ppo_hl")
    hl_cli.run_cli(main, [*PPO_CLI_TINY, "--persistence-base-dir", str(tmp_path / "first")])
    (first,) = run_dirs(tmp_path / "first")
    saved = torch.load(first / "policy_state_dict.pt", weights_only=True)
    capsys.readouterr()
    for resume_path in (first, first / "policy_state_dict.pt"):
        base = tmp_path / f"watch-{resume_path.name}"
        argv = ["--persistence-base-dir", str(base), "--watch", "--resume-path", str(resume_path)]
        watched = hl_cli.run_cli(main, [*PPO_CLI_TINY, *argv])
        assert watched.trainer_result is None, "watching does not train"
        assert "Run summary" not in capsys.readouterr().out
        restored = watched.world.algorithm.state_dict()
        tensors = {key: value for key, value in saved.items() if isinstance(value, torch.Tensor)}
        assert tensors and all(torch.equal(restored[key], value) for key, value in tensors.items())
    # resuming trains on from the saved parameters
    argv = ["--persistence-base-dir", str(tmp_path / "second"), "--resume-path", str(first)]
    resumed = hl_cli.run_cli(main, [*PPO_CLI_TINY, *argv])
    assert resumed.trainer_result is not None
    assert resumed.world.restore_directory == str(first)
    with pytest.raises(FileNotFoundError, match="pass the directory of an earlier run"):
        hl_cli.run_cli(main, [*PPO_CLI_TINY, "--resume-path", str(tmp_path)])


# ---------------------------------------------------------------------------- data-parallel runs
def config_target(seed: int = 1, watch: bool = False, num_experiments: int = 1) -> Any:
    """A script's main that builds its experiments' configuration."""
    return hl_cli.script_experiment_config(
        persistence_base_dir="log", seed=seed, watch=watch, resume_path=None
    )


def test_data_parallel_options_reach_the_experiment_configuration() -> None:
    plain = hl_cli.run_cli(config_target, [], data_parallel=True)
    assert not plain.data_parallel
    argv = ["--distributed", "--distributed-timeout", "5"]
    torchrun = hl_cli.run_cli(config_target, argv, data_parallel=True)
    assert torchrun.data_parallel and torchrun.data_parallel_launcher == "torchrun"
    assert torchrun.data_parallel_timeout_s == 5.0
    argv = ["--launcher", "ray", "--num_workers", "3", "--ray-address", "head:6379"]
    ray = hl_cli.run_cli(config_target, argv, data_parallel=True)
    assert ray.data_parallel and ray.data_parallel_launcher == "ray"  # ray implies distributed
    assert (ray.data_parallel_num_workers, ray.data_parallel_ray_address) == (3, "head:6379")
    assert not config_target().data_parallel  # outside run_cli: one process


@pytest.mark.parametrize(
    ("argv", "data_parallel", "message"),
    [
        (["--distributed"], False, "unrecognized arguments: --distributed"),
        (["--distributed", "--num-experiments", "2"], True, "one seed per job"),
    ],
)
def test_data_parallel_options_are_refused_where_they_cannot_apply(
    argv: list[str], data_parallel: bool, message: str, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit):
        hl_cli.run_cli(config_target, argv, data_parallel=data_parallel)
    assert message in capsys.readouterr().err


def test_watching_is_refused_in_a_data_parallel_run() -> None:
    with pytest.raises(ValueError, match="--watch evaluates in one process"):
        hl_cli.run_cli(config_target, ["--watch", "--distributed"], data_parallel=True)


@pytest.mark.slow
def test_a_high_level_script_trains_on_two_torchrun_ranks(tmp_path: Path) -> None:
    """The documented launch: ``torchrun --nproc-per-node 2 -m <script>_hl --distributed``."""
    args = ["--nproc-per-node", "2", "-m", "examples.mujoco.mujoco_ppo_hl", "--distributed"]
    args += ["--task", "Pendulum-v1", "--epoch", "1", "--epoch-num-steps", "64"]
    args += ["--num-training-envs", "1", "--num-test-envs", "1", "--hidden-sizes", "8"]
    args += ["--collection-step-num-env-steps", "16", "--batch-size", "16"]
    args += ["--persistence-base-dir", str(tmp_path), "--distributed-timeout", "30"]
    run_script("torch.distributed.run", args)
    (run_dir,) = run_dirs(tmp_path)  # rank 0 alone persists
    assert_run_persisted(run_dir, obs_norm=True)
    (result,) = tmp_path.rglob("result.json")
    assert json.loads(result.read_text())["env_steps"] == 64  # both ranks' steps, counted once
