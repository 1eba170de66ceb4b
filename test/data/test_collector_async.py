from collections.abc import Iterator
from functools import partial

import gymnasium as gym
import numpy as np
import pytest

from test.data.collector_fixtures import ConstantPolicy, CountingEnv, CountingRecurrentPolicy
from tianshou.data import Batch, ReplayBuffer, VectorReplayBuffer
from tianshou.data.collector import AsyncCollector, EpisodeRolloutHookMCReturn
from tianshou.env.venvs import DummyVectorEnv, SubprocVectorEnv

DISCRETE = gym.spaces.Discrete(2)
LENGTHS = [3, 4, 5, 6]
SLEEPS = [0.0, 0.002, 0.005, 0.01]


@pytest.fixture
def slow_envs() -> Iterator[SubprocVectorEnv]:
    fns = [
        partial(CountingEnv, length, i, sleep=sleep)
        for i, (length, sleep) in enumerate(zip(LENGTHS, SLEEPS, strict=True))
    ]
    envs = SubprocVectorEnv(fns, wait_num=2, timeout=0.05)
    yield envs
    envs.close()


def check_consistent_episodes(buffer: ReplayBuffer, env_index: int, length: int) -> None:
    """Transitions of one env: consecutive counters, wrapping at episode ends."""
    batch = buffer[:]
    t, t_next = batch.obs[:, 0], batch.obs_next[:, 0]
    np.testing.assert_array_equal(batch.obs[:, 1], env_index)
    np.testing.assert_array_equal(t_next, t + 1)
    np.testing.assert_array_equal(batch.done, t_next == length)
    np.testing.assert_array_equal(t[1:], np.where(batch.done[:-1], 0, t_next[:-1]))
    np.testing.assert_array_equal(batch.rew, t_next + 1)  # constant action 1
    np.testing.assert_array_equal(batch.info.env_id, env_index)


def test_async_collection_keeps_each_envs_transitions_consistent(slow_envs) -> None:
    collector = AsyncCollector(ConstantPolicy(DISCRETE), slow_envs, VectorReplayBuffer(800, 4))
    collector.reset()
    stats = collector.collect(n_step=80)
    assert stats.n_collected_steps >= 80
    assert stats.n_collected_steps == len(collector.buffer)
    sizes = [len(b) for b in collector.buffer.buffers]
    assert sizes[0] > sizes[3]  # the fast env contributes more transitions
    stats = collector.collect(n_episode=6)  # slow envs are still stepping from the last call
    assert stats.n_collected_episodes >= 6
    np.testing.assert_array_equal(np.sort(np.unique(stats.lens)), np.unique(stats.lens))
    assert set(stats.lens.tolist()) <= set(LENGTHS)
    for i, length in enumerate(LENGTHS):
        check_consistent_episodes(collector.buffer.buffers[i], i, length)


def test_async_reset_waits_for_stepping_envs(slow_envs) -> None:
    collector = AsyncCollector(ConstantPolicy(DISCRETE), slow_envs, VectorReplayBuffer(400, 4))
    collector.reset()
    collector.collect(n_step=10)
    assert slow_envs.waiting_id  # some envs are still busy
    collector.reset()
    assert not slow_envs.waiting_id
    assert len(collector.buffer) == 0
    collector.collect(n_step=20)
    for i, length in enumerate(LENGTHS):
        check_consistent_episodes(collector.buffer.buffers[i], i, length)


def test_async_recurrent_state_follows_each_env(slow_envs) -> None:
    collector = AsyncCollector(
        CountingRecurrentPolicy(DISCRETE), slow_envs, VectorReplayBuffer(400, 4)
    )
    collector.reset()
    collector.collect(n_step=40)
    for sub in collector.buffer.buffers:
        batch = sub[:]
        np.testing.assert_array_equal(batch.policy.hidden_state[:, 0], batch.obs[:, 0] + 1)


def test_async_random_collection_and_synchronous_fallback() -> None:
    envs = DummyVectorEnv([partial(CountingEnv, n, i) for i, n in enumerate(LENGTHS)], wait_num=3)
    collector = AsyncCollector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(400, 4))
    collector.reset()
    stats = collector.collect(n_step=40, random=True)
    assert stats.n_collected_steps >= 40
    assert set(np.unique(collector.buffer[:].act)) == {0, 1}
    for i, length in enumerate(LENGTHS):
        batch = collector.buffer.buffers[i][:]
        np.testing.assert_array_equal(batch.rew, batch.obs_next[:, 0] + batch.act)
        assert batch.done.sum() == (batch.obs_next[:, 0] == length).sum()


def test_async_hooks_see_each_returned_step_and_finished_episode() -> None:
    envs = DummyVectorEnv([partial(CountingEnv, n, i) for i, n in enumerate(LENGTHS)], wait_num=2)
    seen_rows: list[int] = []

    def step_hook(action_batch: Batch, rollout_batch: Batch) -> None:
        seen_rows.append(len(rollout_batch))
        rollout_batch["obs_copy"] = rollout_batch.obs[:, 0].copy()

    collector = AsyncCollector(
        ConstantPolicy(DISCRETE),
        envs,
        VectorReplayBuffer(400, 4),
        on_episode_done_hook=EpisodeRolloutHookMCReturn(gamma=1.0),
        on_step_hook=step_hook,  # type: ignore[arg-type]
    )
    collector.reset()
    stats = collector.collect(n_episode=6)
    assert stats.n_collected_episodes >= 6
    assert sum(seen_rows) == stats.n_collected_steps == len(collector.buffer)
    for i, length in enumerate(LENGTHS):
        batch = collector.buffer.buffers[i][:]
        np.testing.assert_array_equal(batch.obs_copy, batch.obs[:, 0])
        if batch.done.any():  # the first stored episode, complete
            first = batch[:length]
            expected = np.cumsum(first.rew[::-1])[::-1]
            np.testing.assert_array_equal(first.mc_return_to_go, expected)
