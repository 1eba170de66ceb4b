"""Tests of the high-level env factories: types, shapes, seeding per vector-env type, EnvPool."""

import logging
import pickle
import subprocess
import sys
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

from tianshou.env import BaseVectorEnv, DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv
from tianshou.highlevel.env import (
    ContinuousEnvironments,
    DiscreteEnvironments,
    EnvFactory,
    EnvFactoryRegistered,
    Environments,
    EnvMode,
    EnvPoolFactory,
    EnvType,
    VectorEnvType,
)

PROCESS_VENV_TYPES = [
    VectorEnvType.SUBPROC,
    VectorEnvType.SUBPROC_SHARED_MEM_DEFAULT_CONTEXT,
    VectorEnvType.SUBPROC_SHARED_MEM_FORK_CONTEXT,
    VectorEnvType.SUBPROC_SHARED_MEM_AUTO,
]


def close_all(envs: Environments) -> None:
    for venv in (envs.training_envs, envs.test_envs, envs.watch_env):
        if venv is not None:
            venv.close()


@pytest.fixture
def created() -> Iterator[list[Environments]]:
    """Collects the Environments a test builds and closes them afterwards."""
    built: list[Environments] = []
    yield built
    for envs in built:
        close_all(envs)


def reset_obs(venv: object) -> np.ndarray:
    obs, _ = venv.reset()  # type: ignore[attr-defined]
    return np.asarray(obs)


def build(
    created: list[Environments], task: str, venv_type: VectorEnvType, **kwargs
) -> Environments:
    seed = kwargs.pop("seed", 0)
    factory = EnvFactoryRegistered(task=task, venv_type=venv_type, **kwargs)
    envs = factory.create_envs(num_training_envs=3, num_test_envs=2, seed=seed)
    created.append(envs)
    return envs


class TestEnvType:
    def test_from_env_reads_the_action_space(self) -> None:
        assert EnvType.from_env(gym.make("CartPole-v1")) == EnvType.DISCRETE
        assert EnvType.from_env(gym.make("Pendulum-v1")).is_continuous()

    def test_from_env_rejects_other_spaces_with_a_hint(self) -> None:
        class MultiBinaryEnv:
            action_space = gym.spaces.MultiBinary(3)

        with pytest.raises(ValueError, match=r"MultiBinary.*Discrete.*Box"):
            EnvType.from_env(MultiBinaryEnv())

    def test_asserts_name_the_requiring_entity_and_the_required_type(self) -> None:
        with pytest.raises(AssertionError, match="MyAlgo requires discrete environments"):
            EnvType.CONTINUOUS.assert_discrete("MyAlgo")
        with pytest.raises(AssertionError, match="MyAlgo requires continuous environments"):
            EnvType.DISCRETE.assert_continuous("MyAlgo")
        EnvType.DISCRETE.assert_discrete("MyAlgo")
        EnvType.CONTINUOUS.assert_continuous("MyAlgo")


class TestEnvironments:
    def test_discrete_task(self, created: list[Environments]) -> None:
        envs = build(created, "CartPole-v1", VectorEnvType.DUMMY)
        assert isinstance(envs, DiscreteEnvironments)
        assert envs.get_type() == EnvType.DISCRETE
        assert envs.get_observation_shape() == (4,)
        assert envs.get_action_shape() == 2
        assert envs.get_action_space() == gym.spaces.Discrete(2)
        assert envs.get_observation_space().shape == (4,)
        assert isinstance(envs.training_envs, DummyVectorEnv)
        assert (len(envs.training_envs), len(envs.test_envs)) == (3, 2)
        assert envs.watch_env is None
        assert envs.info() == {"action_shape": 2, "state_shape": (4,)}
        assert str(envs) == "DiscreteEnvironments[action_shape=2, state_shape=(4,)]"

    def test_continuous_task_reports_max_action(self, created: list[Environments]) -> None:
        envs = build(created, "Pendulum-v1", VectorEnvType.DUMMY)
        assert isinstance(envs, ContinuousEnvironments)
        assert envs.get_action_shape() == (1,)
        assert envs.get_observation_shape() == (3,)
        assert envs.info()["max_action"] == 2.0

    def test_wrong_environments_class_names_the_needed_space(self) -> None:
        env = gym.make("CartPole-v1")
        venv = DummyVectorEnv([lambda: gym.make("CartPole-v1")])
        with pytest.raises(ValueError, match=r"Box action space.*DiscreteEnvironments"):
            ContinuousEnvironments(env, venv, venv)

    @pytest.mark.parametrize("env_cls", [DiscreteEnvironments, Environments])
    def test_from_factory(self, env_cls: type) -> None:
        def factory_fn(mode: EnvMode) -> gym.Env:
            return gym.make("CartPole-v1", max_episode_steps=7 if mode == EnvMode.TEST else 9)

        if env_cls is DiscreteEnvironments:
            envs = DiscreteEnvironments.from_factory(factory_fn, VectorEnvType.DUMMY, 2, 1, True)
        else:
            envs = Environments.from_factory_and_type(
                factory_fn, EnvType.DISCRETE, VectorEnvType.DUMMY, 2, 1, create_watch_env=True
            )
        assert isinstance(envs, DiscreteEnvironments)
        assert envs.test_envs.get_env_attr("spec")[0].max_episode_steps == 7
        assert envs.training_envs.get_env_attr("spec")[0].max_episode_steps == 9
        assert envs.watch_env is not None
        assert len(envs.watch_env) == 1

    def test_set_persistence_replaces_the_handlers(self, created: list[Environments]) -> None:
        envs = build(created, "CartPole-v1", VectorEnvType.DUMMY)
        marker_a, marker_b = object(), object()
        envs.set_persistence(marker_a, marker_b)
        assert list(envs.persistence) == [marker_a, marker_b]


class TestSeeding:
    def test_same_seed_reproduces_and_training_and_test_envs_differ(
        self, created: list[Environments]
    ) -> None:
        first = build(created, "CartPole-v1", VectorEnvType.DUMMY, seed=5)
        second = build(created, "CartPole-v1", VectorEnvType.DUMMY, seed=5)
        other = build(created, "CartPole-v1", VectorEnvType.DUMMY, seed=6)
        training, test = reset_obs(first.training_envs), reset_obs(first.test_envs)
        np.testing.assert_array_equal(training, reset_obs(second.training_envs))
        np.testing.assert_array_equal(test, reset_obs(second.test_envs))
        assert not np.array_equal(training, reset_obs(other.training_envs))
        all_obs = np.concatenate([training, test])
        assert len({row.tobytes() for row in all_obs}) == len(all_obs), "envs share a seed"

    def test_test_envs_start_after_the_training_seeds(self) -> None:
        """Test env j is seeded with seed + num_training_envs + j (the documented offset)."""
        factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
        envs = factory.create_envs(num_training_envs=3, num_test_envs=2, seed=10)
        expected = []
        for seed in (13, 14):
            env = gym.make("CartPole-v1")
            env.reset(seed=seed)  # what seeding does; the next reset continues its stream
            expected.append(env.reset()[0])
        np.testing.assert_array_equal(reset_obs(envs.test_envs), np.stack(expected))

    def test_action_spaces_are_seeded(self, created: list[Environments]) -> None:
        first = build(created, "Pendulum-v1", VectorEnvType.DUMMY, seed=1)
        second = build(created, "Pendulum-v1", VectorEnvType.DUMMY, seed=1)
        spaces_a = first.training_envs.action_space
        spaces_b = second.training_envs.action_space
        samples_a = [space.sample() for space in spaces_a]
        np.testing.assert_array_equal(samples_a, [space.sample() for space in spaces_b])
        assert not np.array_equal(samples_a[0], samples_a[1])

    def test_create_env_with_seed_is_reproducible(self) -> None:
        factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
        obs_a = factory.create_env(EnvMode.TRAINING, seed=3).reset()[0]
        obs_b = factory.create_env(EnvMode.TRAINING, seed=3).reset()[0]
        np.testing.assert_array_equal(obs_a, obs_b)

    @pytest.mark.parametrize("venv_type", PROCESS_VENV_TYPES, ids=lambda t: t.name)
    def test_process_venvs_match_the_in_process_ones(
        self, venv_type: VectorEnvType, created: list[Environments]
    ) -> None:
        reference = build(created, "CartPole-v1", VectorEnvType.DUMMY, seed=2)
        envs = build(created, "CartPole-v1", venv_type, seed=2)
        expected_cls = SubprocVectorEnv if venv_type == VectorEnvType.SUBPROC else ShmemVectorEnv
        assert type(envs.training_envs) is expected_cls
        np.testing.assert_array_equal(
            reset_obs(envs.training_envs), reset_obs(reference.training_envs)
        )
        np.testing.assert_array_equal(reset_obs(envs.test_envs), reset_obs(reference.test_envs))
        actions = np.zeros(3, dtype=int)
        np.testing.assert_array_equal(
            envs.training_envs.step(actions)[0], reference.training_envs.step(actions)[0]
        )

    @pytest.mark.slow  # starting a local Ray instance takes about a minute on 2 cores
    def test_ray_venv_matches_the_in_process_one(self, created: list[Environments]) -> None:
        pytest.importorskip("ray")
        reference = build(created, "CartPole-v1", VectorEnvType.DUMMY, seed=4)
        envs = build(created, "CartPole-v1", VectorEnvType.RAY, seed=4)
        np.testing.assert_array_equal(
            reset_obs(envs.training_envs), reset_obs(reference.training_envs)
        )


class TestEnvFactoryRegistered:
    def test_make_kwargs_reach_gym_make(self) -> None:
        factory = EnvFactoryRegistered(
            task="CartPole-v1", venv_type=VectorEnvType.DUMMY, max_episode_steps=5
        )
        assert factory.create_env(EnvMode.TEST).spec.max_episode_steps == 5

    def test_render_modes_per_mode(self) -> None:
        factory = EnvFactoryRegistered(
            task="CartPole-v1",
            venv_type=VectorEnvType.DUMMY,
            render_mode_test="rgb_array",
            render_mode_watch="rgb_array",
        )
        assert factory.create_env(EnvMode.TRAINING).render_mode is None
        assert factory.create_env(EnvMode.TEST).render_mode == "rgb_array"
        envs = factory.create_envs(1, 1, create_watch_env=True, seed=0)
        assert isinstance(envs.watch_env, DummyVectorEnv)
        assert envs.watch_env.get_env_attr("render_mode") == ["rgb_array"]

    def test_human_rendering_is_turned_off_without_a_display(
        self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        monkeypatch.setattr(sys, "platform", "linux")
        monkeypatch.delenv("DISPLAY", raising=False)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
        with caplog.at_level(logging.WARNING):
            kwargs = factory._create_kwargs(EnvMode.WATCH)
        assert kwargs["render_mode"] is None
        assert "needs a display" in caplog.text
        monkeypatch.setenv("DISPLAY", ":0")
        assert factory._create_kwargs(EnvMode.WATCH)["render_mode"] == "human"

    def test_unknown_task_is_named(self) -> None:
        factory = EnvFactoryRegistered(task="NoSuchTask-v0", venv_type=VectorEnvType.DUMMY)
        with pytest.raises(ValueError, match="unknown task 'NoSuchTask-v0'"):
            factory.create_envs(1, 1)

    def test_training_and_test_seed_are_the_base_seeds_of_their_envs(self) -> None:
        """Env i gets the base seed + i, whatever seed create_envs is given; the seeds do not
        reach gym.make (CartPole would reject them)."""
        factory = EnvFactoryRegistered(
            task="CartPole-v1", venv_type=VectorEnvType.DUMMY, training_seed=0, test_seed=10
        )
        assert factory.make_kwargs == {}
        envs = factory.create_envs(num_training_envs=2, num_test_envs=2, seed=42)

        def first_obs(seeds: tuple[int, ...]) -> np.ndarray:
            expected = []
            for seed in seeds:
                env = gym.make("CartPole-v1")
                env.reset(seed=seed)  # what seeding does; the next reset continues its stream
                expected.append(env.reset()[0])
            return np.stack(expected)

        np.testing.assert_array_equal(reset_obs(envs.training_envs), first_obs((0, 1)))
        np.testing.assert_array_equal(reset_obs(envs.test_envs), first_obs((10, 11)))

    def test_only_the_given_base_seed_is_fixed(self) -> None:
        factory = EnvFactoryRegistered(
            task="CartPole-v1", venv_type=VectorEnvType.DUMMY, test_seed=10
        )
        fixed = reset_obs(factory.create_envs(1, 1, seed=1).test_envs)
        np.testing.assert_array_equal(fixed, reset_obs(factory.create_envs(1, 1, seed=2).test_envs))
        spread = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
        np.testing.assert_array_equal(
            reset_obs(factory.create_envs(1, 1, seed=1).training_envs),
            reset_obs(spread.create_envs(1, 1, seed=1).training_envs),
        )

    def test_bad_seed_options_are_named(self) -> None:
        with pytest.raises(TypeError, match="called training_seed"):
            EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY, train_seed=1)
        with pytest.raises(TypeError, match="test_seed must be an int"):
            EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY, test_seed=1.5)  # type: ignore[arg-type]

    def test_bad_num_envs(self) -> None:
        factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
        with pytest.raises(ValueError, match="num_envs must be at least 1, got 0"):
            factory.create_venv(0, EnvMode.TRAINING)

    def test_factory_pickles_for_spawned_workers(self) -> None:
        factory = EnvFactoryRegistered(
            task="CartPole-v1", venv_type=VectorEnvType.SUBPROC, max_episode_steps=5
        )
        clone = pickle.loads(pickle.dumps(factory))
        assert clone.create_env(EnvMode.TRAINING).spec.max_episode_steps == 5
        assert "task=CartPole-v1" in str(factory)


class TestCustomEnvFactory:
    def test_a_user_factory_overriding_only_create_env_gets_seeded_venvs(self) -> None:
        class ShortCartPole(EnvFactory):
            def create_env(self, mode: EnvMode) -> gym.Env:  # type: ignore[override]
                return gym.make("CartPole-v1", max_episode_steps=3 if mode == EnvMode.TEST else 9)

        factory = ShortCartPole(VectorEnvType.DUMMY)
        first = factory.create_envs(2, 1, create_watch_env=True, seed=1)
        second = factory.create_envs(2, 1, seed=1)
        assert isinstance(first, DiscreteEnvironments)
        assert first.test_envs.get_env_attr("spec")[0].max_episode_steps == 3
        np.testing.assert_array_equal(reset_obs(first.test_envs), reset_obs(second.test_envs))
        assert first.watch_env is not None
        assert not np.array_equal(reset_obs(first.watch_env)[0], reset_obs(first.test_envs)[0])


class TestEnvPool:
    def test_envpool_venvs_are_seeded_and_distinct(self) -> None:
        pytest.importorskip("envpool")

        def make(seed: int) -> Environments:
            factory = EnvFactoryRegistered(
                task="Pendulum-v1",
                venv_type=VectorEnvType.DUMMY,
                envpool_factory=EnvPoolFactory(),
                render_mode_training="rgb_array",  # dropped: EnvPool does not render
            )
            return factory.create_envs(num_training_envs=2, num_test_envs=2, seed=seed)

        first, second, other = make(0), make(0), make(1)
        assert not isinstance(first.training_envs, BaseVectorEnv)
        assert isinstance(first, ContinuousEnvironments)
        training = reset_obs(first.training_envs)
        assert training.shape == (2, 3)
        np.testing.assert_array_equal(training, reset_obs(second.training_envs))
        np.testing.assert_array_equal(reset_obs(first.test_envs), reset_obs(second.test_envs))
        assert not np.array_equal(training, reset_obs(first.test_envs))
        assert not np.array_equal(training, reset_obs(other.training_envs))

    def test_hooks_transform_task_and_kwargs(self) -> None:
        pytest.importorskip("envpool")
        calls: list[tuple[str, EnvMode]] = []

        class Renaming(EnvPoolFactory):
            def _transform_task(self, task: str) -> str:
                return task.replace("Legacy", "")

            def _transform_kwargs(self, kwargs: dict, mode: EnvMode) -> dict:
                calls.append((kwargs["render_mode"], mode))
                return super()._transform_kwargs(kwargs, mode)

        venv = Renaming().create_venv(
            "LegacyCartPole-v1", 2, EnvMode.TEST, seed=0, kwargs={"render_mode": "human"}
        )
        assert reset_obs(venv).shape == (2, 4)
        assert calls == [("human", EnvMode.TEST)]

    def test_unknown_envpool_task_is_named(self) -> None:
        pytest.importorskip("envpool")
        with pytest.raises(ValueError, match="EnvPool does not know task 'Nope-v0'"):
            EnvPoolFactory().create_venv("Nope-v0", 1, EnvMode.TRAINING, 0, {})

    def test_watch_env_comes_from_gymnasium(self) -> None:
        pytest.importorskip("envpool")
        factory = EnvFactoryRegistered(
            task="CartPole-v1",
            venv_type=VectorEnvType.DUMMY,
            envpool_factory=EnvPoolFactory(),
            render_mode_watch="rgb_array",
        )
        watch = factory.create_venv(1, EnvMode.WATCH, seed=0)
        assert isinstance(watch, DummyVectorEnv)


def test_import_tianshou_does_not_import_highlevel_and_highlevel_stays_lazy() -> None:
    probe = (
        "import sys, tianshou\n"
        "assert 'tianshou.highlevel' not in sys.modules\n"
        "import tianshou.highlevel.env, tianshou.highlevel.logger, tianshou.highlevel.trainer\n"
        "import tianshou.highlevel.persistence, tianshou.highlevel.module.critic\n"
        "import tianshou.highlevel.module.special\n"
        "heavy = ('envpool', 'ray', 'tensorboard', 'torch.utils.tensorboard', 'wandb')\n"
        "print(','.join(m for m in heavy if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == ""
