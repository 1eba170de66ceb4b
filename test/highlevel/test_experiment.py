"""Tests of experiments and their builders: every builder trains, runs persist and restore,
seeded collections, directory collisions and headless watching."""

import logging
import os
import pickle
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest
import torch
from torch import nn

from test.distributed.ranks import run_ranks
from test.local_ray import fresh_local_ray
from tianshou.distributed import DataParallel
from tianshou.evaluation.launcher import JoblibExpLauncher, RegisteredExpLauncher
from tianshou.highlevel.config import OffPolicyTrainingConfig, OnPolicyTrainingConfig
from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import (
    A2CExperimentBuilder,
    DDPGExperimentBuilder,
    DiscreteSACExperimentBuilder,
    DQNExperimentBuilder,
    Experiment,
    ExperimentBuilder,
    ExperimentConfig,
    ExperimentResult,
    IQNExperimentBuilder,
    NPGExperimentBuilder,
    OnPolicyExperimentBuilder,
    PPOExperimentBuilder,
    REDQExperimentBuilder,
    ReinforceExperimentBuilder,
    SACExperimentBuilder,
    SeedResults,
    TD3ExperimentBuilder,
    TRPOExperimentBuilder,
)
from tianshou.highlevel.trainer import EpochStopCallback, EpochTrainCallback, TrainingContext
from tianshou.highlevel.world import World

EPOCH_NUM_STEPS = 60

BUILDERS_AND_TASKS = [
    (ReinforceExperimentBuilder, "CartPole-v1"),
    (A2CExperimentBuilder, "Pendulum-v1"),
    (PPOExperimentBuilder, "CartPole-v1"),
    (PPOExperimentBuilder, "Pendulum-v1"),
    (NPGExperimentBuilder, "Pendulum-v1"),
    (TRPOExperimentBuilder, "CartPole-v1"),
    (DQNExperimentBuilder, "CartPole-v1"),
    (IQNExperimentBuilder, "CartPole-v1"),
    (DDPGExperimentBuilder, "Pendulum-v1"),
    (REDQExperimentBuilder, "Pendulum-v1"),
    (SACExperimentBuilder, "Pendulum-v1"),
    (DiscreteSACExperimentBuilder, "CartPole-v1"),
    (TD3ExperimentBuilder, "Pendulum-v1"),
]


def experiment_config(tmp_path: Path, **kwargs: object) -> ExperimentConfig:
    options: dict = {
        "seed": 3,
        "device": "cpu",
        "persistence_base_dir": str(tmp_path),
        "watch_num_episodes": 1,
        **kwargs,
    }
    return ExperimentConfig(**options)


TBuilder = TypeVar("TBuilder", bound=ExperimentBuilder)


def make_builder(
    builder_class: type[TBuilder], task: str, config: ExperimentConfig, **training: Any
) -> TBuilder:
    """A builder with default algorithm parameters and a one-epoch training config
    (``training`` overrides its fields)."""
    on_policy = issubclass(builder_class, OnPolicyExperimentBuilder)
    config_class = OnPolicyTrainingConfig if on_policy else OffPolicyTrainingConfig
    training_config = config_class(
        max_epochs=1,
        epoch_num_steps=EPOCH_NUM_STEPS,
        num_training_envs=2,
        num_test_envs=1,
        buffer_size=500,
        collection_step_num_env_steps=30,
        batch_size=16,
        **training,
    )
    env_factory = EnvFactoryRegistered(task=task, venv_type=VectorEnvType.DUMMY)
    return builder_class(env_factory, config, training_config)


def algorithm_of(world: World) -> Any:
    """The world's algorithm (typed loosely, as tests reach into algorithm-specific modules)."""
    assert world.trainer is not None
    assert world.trainer.algorithm is world.algorithm
    return world.algorithm


def assert_same_state(module: nn.Module | dict, saved: dict) -> None:
    state = module if isinstance(module, dict) else module.state_dict()
    tensors = [key for key, value in saved.items() if isinstance(value, torch.Tensor)]
    assert tensors
    for key in tensors:
        assert torch.equal(state[key], saved[key]), key


@pytest.mark.parametrize(("builder_class", "task"), BUILDERS_AND_TASKS)
def test_each_builder_trains_one_epoch_and_persists(
    builder_class: type[ExperimentBuilder], task: str, tmp_path: Path
) -> None:
    builder = make_builder(builder_class, task, experiment_config(tmp_path))
    result = builder.with_name("exp").build().run()
    assert isinstance(result, ExperimentResult)
    assert result.trainer_result is not None
    assert result.trainer_result.train_step >= EPOCH_NUM_STEPS
    run_dir = tmp_path / "exp"
    assert result.world.persist_directory == str(run_dir)
    for filename in ("experiment.pkl", "policy_state_dict.pt", "experiment.log"):
        assert (run_dir / filename).is_file(), filename
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(run_dir))


def test_restored_experiment_starts_from_the_saved_policy_and_continues(
    tmp_path: Path,
) -> None:
    builder = make_builder(PPOExperimentBuilder, "CartPole-v1", experiment_config(tmp_path))
    builder.with_critic_factory_use_actor().with_name("ppo").build().run()
    run_dir = tmp_path / "ppo"
    saved = torch.load(run_dir / "policy_state_dict.pt", weights_only=True)

    restored = Experiment.from_directory(str(run_dir))
    assert restored.config.policy_restore_directory == str(run_dir)
    restored.config.train = False
    world = restored.run(run_name="restored").world
    algorithm = algorithm_of(world)
    assert_same_state(algorithm, saved)
    # the critic still shares the actor's body after unpickling the experiment
    actor_params = {id(p) for p in algorithm.policy.actor.parameters()}
    assert actor_params & {id(p) for p in algorithm.critic.parameters()}

    continued = Experiment.from_directory(str(run_dir))
    result = continued.run(run_name="continued")
    assert result.trainer_result is not None
    assert result.trainer_result.train_step >= EPOCH_NUM_STEPS
    assert (run_dir / "continued" / "policy_state_dict.pt").is_file()
    actor_weights = algorithm_of(result.world).policy.actor.state_dict()
    assert any(
        not torch.equal(value, saved[f"policy.actor.{key}"]) for key, value in actor_weights.items()
    )


def test_from_directory_without_restoring_the_policy_and_a_missing_file(tmp_path: Path) -> None:
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", experiment_config(tmp_path))
    builder.with_name("dqn").build().run()
    experiment = Experiment.from_directory(str(tmp_path / "dqn"), restore_policy=False)
    assert experiment.config.policy_restore_directory is None
    assert experiment.name == "dqn"
    with pytest.raises(FileNotFoundError, match=r"no experiment.pkl in"):
        Experiment.from_directory(str(tmp_path))


def test_seeded_collection_has_distinct_seeds_names_and_directories(tmp_path: Path) -> None:
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", experiment_config(tmp_path))
    collection = builder.with_name("dqn").build_seeded_collection(2)
    first, second = collection.experiments
    assert (first.config.seed, second.config.seed) == (3, 4)
    assert first.name == os.path.join("dqn", "seed=3")
    assert second.name == os.path.join("dqn", "seed=4")
    assert builder.build().config.seed == 3  # the builder itself is unchanged
    results = collection.run("Sequential")
    assert len(results) == 2
    for experiment in (first, second):
        directory = Experiment.persistence_dir_static(str(tmp_path), "dqn", experiment.config.seed)
        assert directory == os.path.join(tmp_path, experiment.name)
        assert os.path.isfile(os.path.join(directory, "experiment.pkl"))
    experiment_dir = Experiment.persistence_dir_static(str(tmp_path), "dqn")
    assert sorted(os.listdir(experiment_dir)) == ["seed=3", "seed=4"]


def test_build_and_run_collection_evaluates_all_seeds_with_rliable(tmp_path: Path) -> None:
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", experiment_config(tmp_path))
    builder.training_config(
        OffPolicyTrainingConfig(
            max_epochs=2,
            epoch_num_steps=20,
            num_training_envs=1,
            num_test_envs=1,
            buffer_size=100,
            collection_step_num_env_steps=10,
            batch_size=8,
        )
    )
    results = builder.with_name("dqn").build_and_run(num_experiments=2)
    assert isinstance(results, SeedResults)
    assert isinstance(results, list)  # as published for several experiments
    assert not isinstance(results, ExperimentResult)
    assert [r is not None and r.train_step for r in results] == [40, 40]
    assert not hasattr(results, "world")
    experiment_dir = tmp_path / "dqn"
    plots = [name for name in os.listdir(experiment_dir) if name.endswith(".png")]
    assert plots, os.listdir(experiment_dir)


@pytest.mark.parametrize(
    "launcher", ["joblib", "SEQUENTIAL", RegisteredExpLauncher.JOBLIB, JoblibExpLauncher()]
)
def test_build_and_run_runs_a_single_experiment_here_with_any_launcher(
    tmp_path: Path, launcher: Any
) -> None:
    config = experiment_config(tmp_path, watch=False)
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", config).with_name("one")
    result = builder.build_and_run(num_experiments=1, launcher=launcher)
    assert isinstance(result, ExperimentResult)  # as published for one experiment
    assert isinstance(result, SeedResults)  # as for several: a list of training results
    assert result.trainer_result is not None
    assert result == [result.trainer_result]
    assert result.world.persist_directory == str(tmp_path / "one")  # ran here, not launched
    assert os.listdir(tmp_path) == ["one"]


def test_build_and_run_rejects_bad_arguments_before_running(tmp_path: Path) -> None:
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", experiment_config(tmp_path))
    with pytest.raises(ValueError, match=r"unknown launcher 'threads'.*'sequential'"):
        builder.build_and_run(launcher="threads")
    with pytest.raises(ValueError, match="num_experiments must be at least 1"):
        builder.build_and_run(num_experiments=0)
    with pytest.raises(ValueError, match="num_experiments must be at least 1"):
        builder.build_seeded_collection(0)
    assert os.listdir(tmp_path) == []


def test_existing_run_directory_is_refused_unless_allowed(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, watch=False, train=False)
    experiment = make_builder(DQNExperimentBuilder, "CartPole-v1", config).with_name("x").build()
    experiment.run()
    with pytest.raises(FileExistsError, match=r"run directory .*x' exists already"):
        experiment.run()
    experiment.run(run_name="second")
    assert (tmp_path / "x" / "second" / "experiment.pkl").is_file()
    experiment.run(raise_error_on_dirname_collision=False)
    with pytest.raises(FileExistsError):
        experiment.create_experiment_world(override_experiment_name="x")


def test_watch_with_rendering_but_no_display_neither_renders_nor_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    # rendering would sleep 10 s per step: at least 90 s for a CartPole episode
    config = experiment_config(tmp_path, train=False, watch_render=10.0, watch_num_episodes=1)
    experiment = make_builder(PPOExperimentBuilder, "CartPole-v1", config).build()
    start = time.perf_counter()
    with caplog.at_level(logging.WARNING):
        experiment.run()
    assert time.perf_counter() - start < 30
    assert "there is no display" in caplog.text


def test_persistence_disabled_writes_nothing(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, persistence_enabled=False, watch=False)
    result = make_builder(SACExperimentBuilder, "Pendulum-v1", config).build().run()
    assert result.trainer_result is not None
    assert os.listdir(tmp_path) == []


def test_log_file_holds_the_run_log(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = experiment_config(tmp_path, watch=False, train=False)
    with caplog.at_level(logging.INFO):
        make_builder(DQNExperimentBuilder, "CartPole-v1", config).with_name("logged").build().run()
    content = (tmp_path / "logged" / "experiment.log").read_text()
    assert "Running experiment 'logged'" in content
    handler_files = [getattr(h, "baseFilename", "") for h in logging.getLogger().handlers]
    assert not any(name.endswith("experiment.log") for name in handler_files)


def linear_widths(module: nn.Module) -> list[int]:
    return [m.out_features for m in module.modules() if isinstance(m, nn.Linear)]


def test_pickled_experiment_keeps_the_builder_network_settings(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, persistence_enabled=False)
    experiment = (
        make_builder(SACExperimentBuilder, "Pendulum-v1", config)
        .with_actor_factory_default(hidden_sizes=(7,), continuous_unbounded=True)
        .with_critic1_factory_default(hidden_sizes=(5,))
        .with_critic2_factory_default(hidden_sizes=(6, 6))
        .build()
    )
    copied: Experiment = pickle.loads(pickle.dumps(experiment))
    algorithm = algorithm_of(copied.create_experiment_world())
    assert linear_widths(algorithm.policy.actor)[0] == 7
    assert linear_widths(algorithm.critic) == [5, 1]
    assert linear_widths(algorithm.critic2) == [6, 6, 1]


def test_dqn_model_factory_default_sets_the_network(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, persistence_enabled=False)
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", config)
    world = (
        builder.with_model_factory_default(hidden_sizes=(9, 9)).build().create_experiment_world()
    )
    algorithm = algorithm_of(world)
    assert linear_widths(algorithm.policy.model) == [9, 9, 2]


def test_discrete_sac_actor_outputs_logits_and_ppo_actor_probabilities(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, persistence_enabled=False)
    for builder_class, softmax in (
        (DiscreteSACExperimentBuilder, False),
        (PPOExperimentBuilder, True),
    ):
        world = make_builder(builder_class, "CartPole-v1", config).build().create_experiment_world()
        assert algorithm_of(world).policy.actor.softmax_output is softmax


class RecordingTrainCallback(EpochTrainCallback):
    """Records the epochs it is called in (module-level, so that experiments stay picklable)."""

    def __init__(self) -> None:
        self.epochs: list[int] = []

    def callback(self, epoch: int, env_step: int, context: TrainingContext) -> None:
        self.epochs.append(epoch)


class StopAtOnce(EpochStopCallback):
    def should_stop(self, mean_rewards: float, context: TrainingContext) -> bool:
        return True


def test_trainer_callbacks_reach_the_trainer(tmp_path: Path) -> None:
    config = experiment_config(tmp_path, persistence_enabled=False, watch=False)
    builder = make_builder(DQNExperimentBuilder, "CartPole-v1", config)
    builder.training_config(replace(builder._training_config, max_epochs=3))
    experiment = builder.with_epoch_train_callback(RecordingTrainCallback()).build()
    world = experiment.create_experiment_world()
    assert world.trainer is not None
    world.trainer.run()
    callback = experiment.algorithm_factory.trainer_callbacks.epoch_train_callback
    assert isinstance(callback, RecordingTrainCallback)
    assert sorted(set(callback.epochs)) == [1, 2, 3]

    stopping = builder.with_epoch_stop_callback(StopAtOnce()).build().run()
    assert stopping.trainer_result is not None
    assert stopping.trainer_result.train_step == EPOCH_NUM_STEPS  # stopped after 1 of 3 epochs


def test_experiment_config_rejects_invalid_watch_settings() -> None:
    with pytest.raises(ValueError, match="watch_num_episodes must be at least 1"):
        ExperimentConfig(watch_num_episodes=0)
    with pytest.raises(ValueError, match="watch_render is a pause in seconds"):
        ExperimentConfig(watch_render=-1.0)


def test_user_guide_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first high-level example of the published user guide (a DQN on CartPole whose env
    factory fixes the training and test seeds), with a tiny budget; the watched episodes would
    render, which is skipped headless."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.chdir(tmp_path)
    from tianshou.highlevel.params.algorithm_params import DQNParams
    from tianshou.highlevel.trainer import EpochStopCallbackRewardThreshold

    experiment = (
        DQNExperimentBuilder(
            EnvFactoryRegistered(
                task="CartPole-v1",
                venv_type=VectorEnvType.DUMMY,
                training_seed=0,
                test_seed=10,
            ),
            ExperimentConfig(
                persistence_enabled=False,
                watch=True,
                watch_render=1 / 35,
                watch_num_episodes=2,
            ),
            OffPolicyTrainingConfig(
                max_epochs=1,
                epoch_num_steps=100,
                batch_size=16,
                num_training_envs=4,
                num_test_envs=3,
                buffer_size=500,
                collection_step_num_env_steps=10,
                update_step_num_gradient_steps_per_sample=1 / 10,
            ),
        )
        .with_dqn_params(
            DQNParams(
                lr=1e-3,
                gamma=0.9,
                n_step_return_horizon=3,
                target_update_freq=320,
                eps_training=0.3,
                eps_inference=0.0,
            ),
        )
        .with_model_factory_default(hidden_sizes=(16, 16))
        .with_epoch_stop_callback(EpochStopCallbackRewardThreshold(195))
        .build()
    )
    result = experiment.run()
    assert result.trainer_result is not None
    assert result.trainer_result.train_step >= 100
    # test_step_num_episodes=-1: one episode per test env in each test step (before training and
    # after the epoch)
    assert result.trainer_result.test_episode == 2 * 3
    assert os.listdir(tmp_path) == []


class RecordThreads(EpochTrainCallback):
    """Records torch's thread count at each epoch's start (module level: experiments pickle)."""

    seen: ClassVar[list[int]] = []

    def callback(self, epoch: int, env_step: int, context: TrainingContext) -> None:
        RecordThreads.seen.append(torch.get_num_threads())


@pytest.mark.parametrize("threads", [1, None])
def test_the_run_uses_the_configured_torch_threads_and_restores_them(
    tmp_path: Path, threads: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    seen = RecordThreads.seen
    seen.clear()
    before = torch.get_num_threads()
    outside = 2 if before == 1 else before  # a count the run must not keep
    torch.set_num_threads(outside)
    try:
        config = experiment_config(tmp_path)
        builder = make_builder(DQNExperimentBuilder, "CartPole-v1", config, torch_threads=threads)
        builder.with_epoch_train_callback(RecordThreads())
        with caplog.at_level(logging.INFO, logger="tianshou.highlevel.experiment"):
            builder.with_name("threads").build().run()
        assert seen and set(seen) == {outside if threads is None else threads}
        assert torch.get_num_threads() == outside
        expected = "training_config.torch_threads" if threads else "torch default"
        assert any(expected in record.getMessage() for record in caplog.records)
    finally:
        torch.set_num_threads(before)


def test_a_training_config_pickled_without_torch_threads_loads_with_the_default() -> None:
    config = OffPolicyTrainingConfig(num_training_envs=1)
    state = dict(config.__dict__)
    del state["torch_threads"]  # as saved by an earlier version or the published library
    restored = OffPolicyTrainingConfig.__new__(OffPolicyTrainingConfig)
    restored.__setstate__(state)
    assert restored.torch_threads == 1
    assert pickle.loads(pickle.dumps(config)) == config


def _run_ppo_experiment_as_rank(ranks: DataParallel, tmp_path: Path) -> None:
    config = experiment_config(
        tmp_path, data_parallel=True, data_parallel_timeout_s=20.0, watch=False
    )
    builder = make_builder(PPOExperimentBuilder, "CartPole-v1", config)
    result = builder.with_name("data_parallel").build().run()
    assert result.trainer_result is not None
    replica = {
        "state": result.world.algorithm.state_dict(),
        "train_step": result.trainer_result.train_step,
    }
    torch.save(replica, tmp_path / f"rank{ranks.rank}.pt")


@pytest.mark.slow
def test_a_data_parallel_experiment_trains_equal_replicas_and_rank_0_persists(
    tmp_path: Path,
) -> None:
    run_ranks(_run_ppo_experiment_as_rank, 2, tmp_path)
    rank0, rank1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(2))
    assert_same_state(rank1["state"], rank0["state"])
    # one epoch of EPOCH_NUM_STEPS env steps, collected by both ranks 30 + 30 at a time
    assert rank0["train_step"] == rank1["train_step"] == EPOCH_NUM_STEPS
    run_dir = tmp_path / "data_parallel"
    assert (run_dir / "experiment.pkl").is_file()
    assert len([n for n in os.listdir(run_dir) if n.startswith("events.out.tfevents")]) == 1


@pytest.mark.slow
def test_a_data_parallel_experiment_runs_on_ray_train_workers_and_returns_rank_0s_result(
    tmp_path: Path,
) -> None:
    config = experiment_config(
        tmp_path,
        data_parallel=True,
        data_parallel_launcher="ray",
        data_parallel_num_workers=2,
        data_parallel_timeout_s=20.0,
        watch=False,
    )
    builder = make_builder(PPOExperimentBuilder, "CartPole-v1", config)
    with fresh_local_ray(num_cpus=2):
        result = builder.with_name("ray_train").build_and_run()
    assert result.trainer_result is not None
    # one epoch of EPOCH_NUM_STEPS env steps, collected by both workers 30 + 30 at a time
    assert result.trainer_result.train_step == EPOCH_NUM_STEPS
    with pytest.raises(AttributeError, match="Ray Train workers"):
        _ = result.world
    run_dir = tmp_path / "ray_train"
    assert (run_dir / "experiment.pkl").is_file()
    assert len([n for n in os.listdir(run_dir) if n.startswith("events.out.tfevents")]) == 1


def test_the_ray_launcher_is_refused_without_data_parallel(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="set data_parallel=True"):
        experiment_config(tmp_path, data_parallel_launcher="ray")
