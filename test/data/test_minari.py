"""Minari data sets <-> replay buffers (tianshou/data/minari.py).

Data sets are made the way users make them, with Minari's own ``DataCollector`` around a
gymnasium env, under a temporary ``MINARI_DATASETS_PATH``; nothing is downloaded. Every loaded
transition is compared with what the env returned while the collector recorded it.
"""

import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import minari
import numpy as np
import pytest
import torch
from gymnasium import spaces
from minari.data_collector.episode_buffer import EpisodeBuffer

from tianshou.algorithm.imitation.imitation_base import ImitationPolicy, OfflineImitationLearning
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.data.minari import (
    load_minari_buffer,
    load_minari_dataset,
    minari_normalized_score,
    save_minari_dataset,
)
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OfflineTrainerParams
from tianshou.utils.net.common import Net

# Minari's metadata warnings (no author, no code permalink, ...) are not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def minari_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every data set of a test lives in its own temporary folder."""
    root = tmp_path / "datasets"
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(root))
    return root


# ---------------------------------------------------------------------------- making data sets
def _tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """jax.tree_util.tree_map for the trees Minari's EpisodeBuffer builds (dicts, tuples and
    leaves; a leaf of the first tree may face a whole list in the others)."""
    if isinstance(tree, dict):
        return {key: _tree_map(fn, value, *(r[key] for r in rest)) for key, value in tree.items()}
    if isinstance(tree, tuple):
        return tuple(_tree_map(fn, v, *(r[i] for r in rest)) for i, v in enumerate(tree))
    return fn(tree, *rest)


def _jax_free_tree_util() -> dict[str, types.ModuleType]:
    """Minari's DataCollector appends steps with ``jax.tree_util.tree_map`` (its "create"
    extra), which is no dependency of ours: a stand-in of that one function."""
    tree_util = types.ModuleType("jax.tree_util")
    tree_util.tree_map = _tree_map  # type: ignore[attr-defined]
    jax = types.ModuleType("jax")
    jax.tree_util = tree_util  # type: ignore[attr-defined]
    return {"jax": jax, "jax.tree_util": tree_util}


@dataclass
class Recorded:
    """The transitions the env returned while the DataCollector recorded them."""

    obs: list[Any]
    act: list[Any]
    rew: list[float]
    terminated: list[bool]
    truncated: list[bool]
    obs_next: list[Any]


Policy = Callable[[Any, np.random.Generator], Any]


def collect_dataset(
    env: gym.Env,
    dataset_id: str,
    policy: Policy | None = None,
    num_episodes: int = 3,
    seed: int = 0,
    cut_last_after: int | None = None,
    **create_kwargs: Any,
) -> tuple["minari.MinariDataset", Recorded]:
    """Record ``num_episodes`` episodes of ``policy`` (default: uniformly random actions) with
    Minari's DataCollector and create the data set ``dataset_id`` from them.

    :param cut_last_after: end the last episode by a reset after this many steps, before the
        env ends it (the DataCollector then writes it truncated).
    """
    rng = np.random.default_rng(seed)
    env.action_space.seed(seed)
    act_fn = policy or (lambda obs, rng: env.action_space.sample())
    recorded = Recorded([], [], [], [], [], [])
    with pytest.MonkeyPatch.context() as patch:
        for name, module in _jax_free_tree_util().items():
            patch.setitem(sys.modules, name, module)
        collector = minari.DataCollector(env)
        for episode in range(num_episodes):
            obs, _ = collector.reset(seed=seed + episode)
            limit = cut_last_after if episode == num_episodes - 1 else None
            for step in range(10**6):
                act = act_fn(obs, rng)
                obs_next, rew, terminated, truncated, _ = collector.step(act)
                cut = limit is not None and step + 1 == limit
                for key, value in zip(
                    ("obs", "act", "rew", "terminated", "truncated", "obs_next"),
                    (obs, act, rew, terminated, truncated or cut, obs_next),
                    strict=True,
                ):
                    getattr(recorded, key).append(value)
                obs = obs_next
                if terminated or truncated or cut:
                    break
        dataset = collector.create_dataset(dataset_id, **create_kwargs)
        collector.close()
    return dataset, recorded


def assert_same_leaves(actual: Any, expected: Any, where: str) -> None:
    """Equal arrays, or equal nested Batches/dicts of them."""
    if isinstance(expected, dict | Batch):
        assert sorted(actual.keys()) == sorted(expected.keys()), where
        for key in sorted(expected.keys()):
            assert_same_leaves(actual[key], expected[key], f"{where}.{key}")
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=where)


def stacked(values: list[Any]) -> Any:
    """A list of samples (arrays, or dicts of them) as one stacked array (or dict)."""
    if isinstance(values[0], dict):
        return {key: stacked([v[key] for v in values]) for key in values[0]}
    return np.stack([np.asarray(v) for v in values])


def assert_buffer_holds(buffer: ReplayBuffer, recorded: Recorded) -> None:
    """``buffer`` holds exactly the recorded transitions, in order."""
    assert len(buffer) == len(recorded.rew)
    data = buffer[:]
    for key in ("obs", "act", "rew", "terminated", "truncated", "obs_next"):
        assert_same_leaves(data[key], stacked(getattr(recorded, key)), key)
    np.testing.assert_array_equal(data.done, data.terminated | data.truncated)


# ---------------------------------------------------------------------------- a Dict env
class DictGoalEnv(gym.Env):
    """Move a point in the plane to a goal corner; observations are a nested Dict."""

    observation_space = spaces.Dict(
        {
            "position": spaces.Box(-10.0, 10.0, shape=(2,), dtype=np.float32),
            "target": spaces.Dict({"corner": spaces.Discrete(4)}),
        }
    )
    action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    CORNERS = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self._pos = self.np_random.uniform(-0.5, 0.5, size=2).astype(np.float32)
        self._corner = int(self.np_random.integers(4))
        return self._obs(), {}

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict]:
        self._pos = np.clip(self._pos + 0.5 * np.asarray(action, np.float32), -10, 10)
        distance = float(np.linalg.norm(self._pos - self.CORNERS[self._corner]))
        return self._obs(), -distance, distance < 0.3, False, {}

    def _obs(self) -> dict[str, Any]:
        return {"position": self._pos.copy(), "target": {"corner": self._corner}}


def dict_env() -> gym.Env:
    return gym.wrappers.TimeLimit(DictGoalEnv(), max_episode_steps=8)


def cartpole_expert(obs: np.ndarray, rng: np.random.Generator) -> int:
    """Push toward the side the pole falls to (keeps CartPole up for 500 steps)."""
    return int(3 * obs[2] + obs[3] > 0)


# ---------------------------------------------------------------------------- loading
class TestLoad:
    def test_discrete_cartpole_transitions(self) -> None:
        dataset, recorded = collect_dataset(gym.make("CartPole-v1"), "test/cartpole/random-v0")
        buffer = load_minari_buffer("test/cartpole/random-v0")
        assert_buffer_holds(buffer, recorded)
        assert buffer.act.dtype.kind == "i"
        assert sum(recorded.terminated) == 3  # random CartPole episodes fall over
        # the buffer's episode navigation stops at episode ends
        ends = np.flatnonzero(buffer.done)
        np.testing.assert_array_equal(buffer.next(ends), ends)
        np.testing.assert_array_equal(buffer.prev(ends[:-1] + 1), ends[:-1] + 1)
        assert dataset.total_steps == len(buffer)

    def test_continuous_pendulum_with_truncations_and_a_cut_episode(self) -> None:
        env = gym.make("Pendulum-v1", max_episode_steps=6)
        _, recorded = collect_dataset(env, "test/pendulum-v0", num_episodes=3, cut_last_after=4)
        buffer = load_minari_buffer(minari.load_dataset("test/pendulum-v0"))
        assert_buffer_holds(buffer, recorded)
        assert len(buffer) == 6 + 6 + 4
        np.testing.assert_array_equal(np.flatnonzero(buffer.truncated), [5, 11, 15])
        assert not buffer.terminated.any()
        assert buffer.act.shape == (16, 1)

    def test_nested_dict_observations(self) -> None:
        _, recorded = collect_dataset(dict_env(), "test/dictgoal-v0", num_episodes=4, seed=3)
        buffer = load_minari_buffer("test/dictgoal-v0")
        assert_buffer_holds(buffer, recorded)
        assert isinstance(buffer.obs, Batch)
        assert isinstance(buffer.obs_next.target, Batch)
        assert buffer[:].obs.position.shape == (len(buffer), 2)

    def test_a_subset_of_episodes_in_the_given_order(self) -> None:
        env = gym.make("Pendulum-v1", max_episode_steps=3)
        _, recorded = collect_dataset(env, "test/pendulum-v0", num_episodes=4)
        buffer = load_minari_buffer("test/pendulum-v0", episode_indices=[3, 1])
        expected = np.concatenate([recorded.rew[9:12], recorded.rew[3:6]])
        np.testing.assert_array_equal(buffer.rew, expected)
        np.testing.assert_array_equal(buffer.obs_next[2], recorded.obs_next[11])

    def test_an_episode_without_an_end_flag_is_truncated(self) -> None:
        obs_space = spaces.Box(-1.0, 1.0, shape=(1,))
        episodes = [
            EpisodeBuffer(
                observations=np.arange(4, dtype=np.float32).reshape(4, 1) + 10 * i,
                actions=np.zeros((3, 1), dtype=np.float32),
                rewards=np.ones(3),
                terminations=np.zeros(3, dtype=bool),
                truncations=np.zeros(3, dtype=bool),
            )
            for i in range(2)
        ]
        minari.create_dataset_from_buffers(
            "test/cut-v0", episodes, observation_space=obs_space, action_space=obs_space
        )
        buffer = load_minari_buffer("test/cut-v0")
        np.testing.assert_array_equal(buffer.truncated, [0, 0, 1, 0, 0, 1])
        np.testing.assert_array_equal(buffer.obs_next[:, 0], [1, 2, 3, 11, 12, 13])
        assert buffer.next(2) == 2

    def test_an_end_flag_before_the_last_step_is_an_error(self) -> None:
        space = spaces.Box(-1.0, 1.0, shape=(1,))
        episode = EpisodeBuffer(
            observations=np.zeros((4, 1), dtype=np.float32),
            actions=np.zeros((3, 1), dtype=np.float32),
            rewards=np.ones(3),
            terminations=np.array([False, True, False]),
            truncations=np.array([False, False, True]),
        )
        minari.create_dataset_from_buffers(
            "test/early-v0", [episode], observation_space=space, action_space=space
        )
        with pytest.raises(ValueError, match=r"ends .* at step 1, before its last step 2"):
            load_minari_buffer("test/early-v0")

    def test_episode_arrays_of_the_wrong_length_are_named(self) -> None:
        space = spaces.Box(-1.0, 1.0, shape=(1,))
        episode = EpisodeBuffer(
            observations=np.zeros((3, 1), dtype=np.float32),  # 3 rewards need 4 observations
            actions=np.zeros((3, 1), dtype=np.float32),
            rewards=np.ones(3),
            terminations=np.array([False, False, True]),
            truncations=np.zeros(3, dtype=bool),
        )
        minari.create_dataset_from_buffers(
            "test/short-v0", [episode], observation_space=space, action_space=space
        )
        with pytest.raises(ValueError, match=r"episode 0 .* needs 4 observations; found \[3\]"):
            load_minari_buffer("test/short-v0")

    def test_a_missing_dataset_names_the_download_command(self) -> None:
        with pytest.raises(FileNotFoundError, match="minari download mujoco/hopper/expert-v0"):
            load_minari_buffer("mujoco/hopper/expert-v0")
        with pytest.raises(FileNotFoundError, match="MINARI_DATASETS_PATH"):
            load_minari_dataset("mujoco/hopper/expert-v0")

    def test_bad_episode_indices(self) -> None:
        collect_dataset(gym.make("CartPole-v1"), "test/cartpole-v0", num_episodes=2)
        with pytest.raises(ValueError, match=r"episodes \[5\] are not in the dataset"):
            load_minari_buffer("test/cartpole-v0", episode_indices=[0, 5])
        with pytest.raises(ValueError, match="no episodes to load"):
            load_minari_buffer("test/cartpole-v0", episode_indices=[])
        with pytest.raises(ValueError, match="sequence of integers"):
            load_minari_buffer("test/cartpole-v0", episode_indices=[0.5])  # type: ignore[list-item]

    def test_unsupported_spaces_are_named(self) -> None:
        obs_space = spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3)))
        act_space = spaces.Discrete(2)
        episode = EpisodeBuffer(
            observations=(np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)),
            actions=np.zeros(1, dtype=np.int64),
            rewards=np.ones(1),
            terminations=np.array([True]),
            truncations=np.array([False]),
        )
        minari.create_dataset_from_buffers(
            "test/tuple-v0", [episode], observation_space=obs_space, action_space=act_space
        )
        with pytest.raises(ValueError, match="Tuple spaces are not supported"):
            load_minari_buffer("test/tuple-v0")


# ---------------------------------------------------------------------------- saving
def random_cartpole_buffer(num_envs: int, num_steps: int, size: int) -> VectorReplayBuffer:
    """``num_steps`` random CartPole steps of ``num_envs`` envs, collected by a Collector."""
    policy = ImitationPolicy(
        actor=Net(state_shape=4, action_shape=2), action_space=spaces.Discrete(2)
    )
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(num_envs)])
    envs.seed(0)
    buffer = VectorReplayBuffer(size, num_envs)
    Collector(policy, envs, buffer).collect(
        n_step=num_steps, random=True, reset_before_collect=True
    )
    return buffer


class TestSave:
    def test_round_trip_of_a_loaded_dataset(self) -> None:
        _, recorded = collect_dataset(dict_env(), "test/dictgoal-v0", num_episodes=3)
        buffer = load_minari_buffer("test/dictgoal-v0")
        saved = save_minari_dataset(buffer, "test/dictgoal-copy-v0", dict_env())
        assert saved.total_episodes == 3
        again = load_minari_buffer("test/dictgoal-copy-v0")
        assert_buffer_holds(again, recorded)

    def test_vector_buffer_episodes_per_env_and_unfinished_ones_truncated(self) -> None:
        buffer = random_cartpole_buffer(num_envs=2, num_steps=90, size=200)
        dataset = save_minari_dataset(buffer, "test/cartpole-collected-v0", "CartPole-v1")
        loaded = load_minari_buffer(dataset)
        assert len(loaded) == len(buffer) == 90
        expected = buffer[:]  # sub-buffer 0, then sub-buffer 1, each oldest first
        for key in ("obs", "act", "rew", "terminated", "obs_next"):
            np.testing.assert_array_equal(loaded[:][key], expected[key], err_msg=key)
        # each env's last episode was still running: it is written truncated
        env_ends = np.array([len(buffer.buffers[0]), len(buffer)]) - 1
        assert not expected.done[env_ends].any()
        np.testing.assert_array_equal(
            np.flatnonzero(loaded.truncated), env_ends[~expected.terminated[env_ends]]
        )
        episodes = list(dataset.iterate_episodes())
        assert sum(len(e) for e in episodes) == 90
        assert episodes[-1].truncations[-1]
        assert dataset.recover_environment().spec.id == "CartPole-v1"

    def test_a_wrapped_circular_buffer_starts_with_its_oldest_row(self) -> None:
        buffer = ReplayBuffer(5)
        for step in range(8):  # two episodes of four steps, the first one half overwritten
            buffer.add(
                Batch(
                    obs=np.array([step], dtype=np.float32),
                    act=np.array([0.0], dtype=np.float32),
                    rew=float(step),
                    terminated=step % 4 == 3,
                    truncated=False,
                    obs_next=np.array([step + 1], dtype=np.float32),
                    info={},
                )
            )
        env = gym.make("MountainCarContinuous-v0")
        env.observation_space = spaces.Box(-10.0, 10.0, shape=(1,))
        dataset = save_minari_dataset(buffer, "test/wrapped-v0", env)
        episodes = list(dataset.iterate_episodes())
        np.testing.assert_array_equal(episodes[0].observations[:, 0], [3, 4])
        np.testing.assert_array_equal(episodes[1].observations[:, 0], [4, 5, 6, 7, 8])
        np.testing.assert_array_equal(episodes[1].rewards, [4, 5, 6, 7])

    def test_refuses_what_it_cannot_write(self) -> None:
        with pytest.raises(ValueError, match="empty buffer"):
            save_minari_dataset(ReplayBuffer(4), "test/x-v0", "CartPole-v1")
        buffer = random_cartpole_buffer(num_envs=1, num_steps=10, size=20)
        with pytest.raises(ValueError, match=r"shape \(4,\), but its space .* shape \(3,\)"):
            save_minari_dataset(buffer, "test/x-v0", "Pendulum-v1")
        no_next = ReplayBuffer(4, ignore_obs_next=True)
        no_next.add(Batch(obs=np.zeros(4), act=0, rew=0.0, terminated=True, truncated=False))
        with pytest.raises(ValueError, match="needs the buffer's obs_next"):
            save_minari_dataset(no_next, "test/x-v0", "CartPole-v1")

    def test_refuses_steps_that_do_not_follow_each_other(self) -> None:
        buffer = ReplayBuffer(4)
        for obs, obs_next in [(0.0, 1.0), (5.0, 6.0)]:  # the first step's obs_next is not 5
            buffer.add(
                Batch(
                    obs=np.full(4, obs),
                    act=0,
                    rew=1.0,
                    terminated=False,
                    truncated=False,
                    obs_next=np.full(4, obs_next),
                )
            )
        with pytest.raises(ValueError, match="row 0's obs_next differs from row 1's obs"):
            save_minari_dataset(buffer, "test/x-v0", "CartPole-v1")


# ---------------------------------------------------------------------------- scores
class TestNormalizedScore:
    def test_hand_computed_scores(self) -> None:
        collect_dataset(
            gym.make("CartPole-v1"),
            "test/cartpole-v0",
            num_episodes=1,
            ref_min_score=10.0,
            ref_max_score=110.0,
        )
        np.testing.assert_allclose(
            minari_normalized_score("test/cartpole-v0", [10.0, 60.0, 135.0]), [0.0, 50.0, 125.0]
        )
        assert float(minari_normalized_score("test/cartpole-v0", 35.0)) == pytest.approx(25.0)

    def test_without_reference_scores(self) -> None:
        dataset, _ = collect_dataset(gym.make("CartPole-v1"), "test/cartpole-v0", num_episodes=1)
        with pytest.raises(ValueError, match="has no reference scores"):
            minari_normalized_score(dataset, 100.0)


# ---------------------------------------------------------------------------- training
@pytest.fixture
def one_thread() -> Iterator[None]:
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def clone_from_dataset(
    dataset_id: str, max_epochs: int, stop_at: float | None
) -> tuple[OfflineImitationLearning, Any]:
    """Behaviour cloning on a Minari data set, as a user would write it: load the data, recover
    the env, train; with ``stop_at``, test after every epoch of 50 updates and stop at it."""
    torch.manual_seed(0)
    buffer = load_minari_buffer(dataset_id)
    env = load_minari_dataset(dataset_id).recover_environment()
    policy = ImitationPolicy(
        actor=Net(state_shape=4, action_shape=2, hidden_sizes=[32]),
        action_space=env.action_space,
    )
    algorithm = OfflineImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=3e-3))
    test_collector = None
    if stop_at is not None:
        test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(5)])
        test_envs.seed(1)
        test_collector = Collector(algorithm, test_envs)
    result = algorithm.run_training(
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=test_collector,
            max_epochs=max_epochs,
            epoch_num_steps=50,
            batch_size=64,
            test_step_num_episodes=5,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )
    return algorithm, result


def agreement(algorithm: OfflineImitationLearning, buffer: ReplayBuffer) -> float:
    """The fraction of the data set's actions the policy takes too."""
    data = buffer[:]
    with torch.no_grad():
        act = algorithm.policy(Batch(obs=data.obs, info=Batch())).act.numpy()
    return float(np.mean(act == data.act))


@pytest.mark.usefixtures("one_thread")
def test_train_a_few_updates_on_a_loaded_dataset() -> None:
    collect_dataset(gym.make("CartPole-v1"), "test/cartpole/expert-v0", cartpole_expert, 1)
    buffer = load_minari_buffer("test/cartpole/expert-v0")
    untrained, _ = clone_from_dataset("test/cartpole/expert-v0", max_epochs=0, stop_at=None)
    algorithm, result = clone_from_dataset("test/cartpole/expert-v0", max_epochs=1, stop_at=None)
    assert result.update_step == 50
    assert result.train_step == 50 * 64
    # same initial network (same seed); 50 updates move it toward the expert (0.50 -> 0.75)
    assert agreement(algorithm, buffer) >= agreement(untrained, buffer) + 0.15


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_behaviour_cloning_from_a_minari_dataset_reaches_the_expert() -> None:
    collect_dataset(gym.make("CartPole-v1"), "test/cartpole/expert-v0", cartpole_expert, 2)
    _, result = clone_from_dataset("test/cartpole/expert-v0", max_epochs=20, stop_at=475.0)
    assert result.best_reward >= 475.0
    assert result.update_step <= 1000
