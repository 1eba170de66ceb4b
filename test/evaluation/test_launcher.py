"""Launchers: results in launch order, files written by each experiment, failures reported by name
after the other experiments completed."""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from test.local_ray import fresh_local_ray
from tianshou.data import InfoStats
from tianshou.data.stats import TimingStats
from tianshou.evaluation.launcher import (
    ExperimentsFailedError,
    ExpLauncher,
    JoblibConfig,
    JoblibExpLauncher,
    RayExpLauncher,
    RegisteredExpLauncher,
    SequentialExpLauncher,
    _run_on_ray_worker,
    default_experiment_execution,
    resolve_launcher,
)
from tianshou.evaluation.ray_tasks import unpack_dir


@dataclass
class FakeConfig:
    persistence_base_dir: str


@dataclass
class FakeResult:
    trainer_result: InfoStats | None


@dataclass
class FakeExperiment:
    """Sums ``range(n)``, writes the sum and the worker's pid into its persistence directory and
    returns the sum as ``train_step``; raises instead if ``fail``."""

    name: str
    config: FakeConfig
    n: int
    fail: bool = False

    def run(self, raise_error_on_dirname_collision: bool = True) -> FakeResult:
        directory = Path(self.config.persistence_base_dir, self.name)
        if directory.exists() and raise_error_on_dirname_collision:
            raise FileExistsError(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if self.fail:
            raise ValueError(f"deliberate failure of {self.name}")
        total = sum(range(self.n))
        (directory / "result.txt").write_text(f"{total} {os.getpid()}")
        stats = InfoStats(
            update_step=1,
            best_score=float(total),
            best_reward=float(total),
            best_reward_std=0.0,
            train_step=total,
            train_episode=1,
            test_step=0,
            test_episode=0,
            timing=TimingStats(),
        )
        return FakeResult(trainer_result=stats)


class BrokenInTransit(FakeExperiment):
    """An experiment that cannot be unpickled, so its worker fails before running it."""

    def __setstate__(self, state: dict[str, Any]) -> None:
        raise RuntimeError("this experiment cannot be unpickled")


def make_experiments(
    base_dir: Path, ns: list[int], fail: str | None = None
) -> list[FakeExperiment]:
    config = FakeConfig(str(base_dir))
    return [FakeExperiment(f"exp{n}", config, n, fail=f"exp{n}" == fail) for n in ns]


def written(base_dir: Path, name: str) -> tuple[int, int]:
    total, pid = (base_dir / name / "result.txt").read_text().split()
    return int(total), int(pid)


def train_steps(results: list[InfoStats | None]) -> list[int | None]:
    return [None if r is None else r.train_step for r in results]


LAUNCHERS = [
    SequentialExpLauncher(),
    JoblibExpLauncher(JoblibConfig(n_jobs=2, verbose=0)),
]


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=lambda launcher: launcher.get_name())
def test_results_in_launch_order_and_files_written(launcher: ExpLauncher, tmp_path: Path) -> None:
    ns = [30, 10, 20]
    results = launcher.launch(make_experiments(tmp_path, ns))
    expected = [sum(range(n)) for n in ns]
    assert train_steps(results) == expected
    assert [written(tmp_path, f"exp{n}")[0] for n in ns] == expected


def test_sequential_runs_in_this_process_and_joblib_in_others(tmp_path: Path) -> None:
    SequentialExpLauncher().launch(make_experiments(tmp_path / "seq", [1]))
    JoblibExpLauncher(JoblibConfig(n_jobs=2, verbose=0)).launch(
        make_experiments(tmp_path / "job", [1])
    )
    assert written(tmp_path / "seq", "exp1")[1] == os.getpid()
    assert written(tmp_path / "job", "exp1")[1] != os.getpid()


@pytest.mark.parametrize("launcher", LAUNCHERS, ids=lambda launcher: launcher.get_name())
def test_failure_is_raised_after_the_others_ran(launcher: ExpLauncher, tmp_path: Path) -> None:
    experiments = make_experiments(tmp_path, [3, 4, 5], fail="exp4")
    with pytest.raises(ExperimentsFailedError) as info:
        launcher.launch(experiments)
    message = str(info.value)
    assert "1 of 3 experiments failed: exp4" in message
    assert "deliberate failure of exp4" in message
    assert list(info.value.failures) == ["exp4"]
    assert train_steps(info.value.results) == [3, None, 10]
    assert written(tmp_path, "exp5")[0] == 10


def test_default_execution_tolerates_existing_directory(tmp_path: Path) -> None:
    (experiment,) = make_experiments(tmp_path, [4])
    (tmp_path / "exp4").mkdir()
    result = default_experiment_execution(experiment)
    assert result is not None
    assert result.train_step == 6


def test_custom_experiment_runner(tmp_path: Path) -> None:
    def runner(exp: Any) -> InfoStats | None:
        return None if exp.n > 2 else default_experiment_execution(exp)

    results = SequentialExpLauncher(experiment_runner=runner).launch(
        make_experiments(tmp_path, [1, 5])
    )
    assert train_steps(results) == [0, None]
    assert not (tmp_path / "exp5").exists()


def test_registered_launchers() -> None:
    kinds = {kind: kind.create_launcher() for kind in RegisteredExpLauncher}
    assert isinstance(kinds[RegisteredExpLauncher.SEQUENTIAL], SequentialExpLauncher)
    assert isinstance(kinds[RegisteredExpLauncher.JOBLIB], JoblibExpLauncher)
    assert isinstance(kinds[RegisteredExpLauncher.RAY], RayExpLauncher)
    assert [kind.value for kind in RegisteredExpLauncher] == ["JOBLIB", "SEQUENTIAL", "RAY"]
    assert JoblibConfig() == JoblibConfig(n_jobs=-1, backend="loky", verbose=10)


@pytest.mark.parametrize(
    ("name", "launcher_type"),
    [
        ("sequential", SequentialExpLauncher),
        ("JOBLIB", JoblibExpLauncher),
        ("Ray", RayExpLauncher),
        (RegisteredExpLauncher.JOBLIB, JoblibExpLauncher),
    ],
)
def test_resolve_launcher_by_kind_or_name_in_any_case(name: Any, launcher_type: type) -> None:
    assert type(resolve_launcher(name)) is launcher_type


def test_resolve_launcher_keeps_a_launcher_and_names_the_choices() -> None:
    launcher = JoblibExpLauncher(JoblibConfig(n_jobs=2))
    assert resolve_launcher(launcher) is launcher
    with pytest.raises(ValueError, match=r"'dask'.*'joblib', 'sequential', 'ray'"):
        resolve_launcher("dask")
    with pytest.raises(TypeError, match="launcher must be"):
        resolve_launcher(3)  # type: ignore[arg-type]


@pytest.fixture
def local_ray() -> Iterator[Any]:
    with fresh_local_ray(num_cpus=2) as ray:
        yield ray


def test_ray_launcher(local_ray: Any, tmp_path: Path) -> None:
    ns = [40, 20]
    launcher = RayExpLauncher(gather_persistence_dirs=True)
    results = launcher.launch(make_experiments(tmp_path, ns))
    assert train_steps(results) == [sum(range(n)) for n in ns]
    for n in ns:
        total, pid = written(tmp_path, f"exp{n}")
        assert total == sum(range(n))
        assert pid != os.getpid()
    with pytest.raises(ExperimentsFailedError, match="deliberate failure of exp2"):
        launcher.launch(make_experiments(tmp_path / "failing", [1, 2], fail="exp2"))
    assert written(tmp_path / "failing", "exp1")[0] == 0
    assert local_ray.is_initialized(), "the launcher must not shut down a Ray it did not start"
    broken = BrokenInTransit("broken", FakeConfig(str(tmp_path / "transit")), 3)
    with pytest.raises(ExperimentsFailedError, match="experiments failed: broken") as info:
        launcher.launch([broken, *make_experiments(tmp_path / "transit", [2])])
    assert train_steps(info.value.results) == [None, 1]

    # a task on another node returns its directory as an archive for the driver to unpack
    (experiment,) = make_experiments(tmp_path / "remote", [5])
    task = local_ray.remote(_run_on_ray_worker)
    outcome, archive = local_ray.get(
        task.remote(default_experiment_execution, experiment, "another-node")
    )
    assert outcome.result.train_step == 10
    unpack_dir(archive, str(tmp_path / "gathered"))
    assert (tmp_path / "gathered" / "result.txt").read_text().startswith("10 ")


def tiny_dqn_builder(tmp_path: Path) -> Any:
    """A DQN CartPole experiment builder small enough to run twice in a few seconds."""
    from tianshou.highlevel.config import OffPolicyTrainingConfig
    from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
    from tianshou.highlevel.experiment import DQNExperimentBuilder, ExperimentConfig

    return DQNExperimentBuilder(
        EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY),
        ExperimentConfig(persistence_base_dir=str(tmp_path), watch=False, device="cpu"),
        OffPolicyTrainingConfig(
            max_epochs=1,
            epoch_num_steps=100,
            num_training_envs=1,
            num_test_envs=1,
            buffer_size=1000,
            collection_step_num_env_steps=10,
            batch_size=16,
        ),
    ).with_model_factory_default(hidden_sizes=(16,))


def test_real_dqn_seeds_give_the_same_results_with_both_launchers(tmp_path: Path) -> None:
    from tianshou.evaluation.rliable_evaluation import MultiRunExperimentResult

    builder = tiny_dqn_builder(tmp_path)
    launchers = {
        "sequential": SequentialExpLauncher(),
        "joblib": JoblibExpLauncher(JoblibConfig(n_jobs=2, verbose=0)),
    }
    results = {
        name: builder.with_name(name).build_seeded_collection(2).run(launcher)
        for name, launcher in launchers.items()
    }
    for name in launchers:
        assert [r is not None and r.train_step for r in results[name]] == [100, 100]
        assert sorted(p.name for p in (tmp_path / name).iterdir()) == ["seed=42", "seed=43"]
    best = {name: [r.best_reward for r in res if r is not None] for name, res in results.items()}
    assert best["sequential"] == best["joblib"], "same seed, same result, in any process"
    assert best["sequential"][0] != best["sequential"][1], "the two seeds differ"
    sequence = MultiRunExperimentResult.load_from_disk(str(tmp_path / "joblib"))
    assert [entry.env_step for entry in sequence.to_evaluation_sequence()] == [0, 100]


def test_real_dqn_seeds_through_ray_match_the_sequential_runs_and_are_evaluated(
    local_ray: Any, tmp_path: Path
) -> None:
    builder = tiny_dqn_builder(tmp_path)
    sequential = builder.with_name("sequential").build_and_run(2, SequentialExpLauncher())
    on_ray = builder.with_name("ray").build_and_run(2, RayExpLauncher())
    assert [r.best_reward for r in on_ray] == [r.best_reward for r in sequential]
    assert sorted(p.name for p in (tmp_path / "ray").iterdir() if p.is_dir()) == [
        "seed=42",
        "seed=43",
    ]
    plots = sorted(p.name for p in (tmp_path / "ray").iterdir() if p.suffix == ".png")
    assert plots == ["test_iqm_sample_efficiency.png", "test_performance_profile.png"]
