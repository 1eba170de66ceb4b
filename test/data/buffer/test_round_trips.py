"""Every buffer state the library produces saves and loads, under HDF5 and pickle, and passes
the load-time consistency check: property-based, over random sequences of ``add`` calls with
scalar and vector rewards, every buffer class of ``tianshou.data`` (HER ones with goal-based
dict observations and a pending relabelling, prioritized ones with updated priorities, managers
with sub-buffers of unequal sizes), ``stack_num`` and ``ignore_obs_next``; and the published
round trip of a vector buffer with vector rewards."""

import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from test.data.buffer.test_hdf5 import assert_same
from tianshou.data import (
    Batch,
    CachedReplayBuffer,
    HERReplayBuffer,
    HERReplayBufferManager,
    HERVectorReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedReplayBufferManager,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    ReplayBufferManager,
    VectorReplayBuffer,
)

GOAL = np.array([2.0, 1.0], dtype=np.float32)


def goal_distance(achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
    """A scalar goal reward (module-level, so that HER buffers pickle)."""
    return -np.abs(achieved_goal - desired_goal).sum(axis=-1)


def goal_gaps(achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
    """A vector goal reward, one entry per goal dimension."""
    return -np.abs(achieved_goal - desired_goal)


def her_buffer(size: int, rew_width: int, **options: int | bool) -> HERReplayBuffer:
    reward_fn = goal_gaps if rew_width else goal_distance
    return HERReplayBuffer(size, reward_fn, horizon=3, future_k=4.0, **options)


BUILDERS: dict[str, Callable[[int, dict], tuple[ReplayBuffer, int]]] = {
    "plain": lambda rew_width, options: (ReplayBuffer(9, **options), 1),
    "prioritized": lambda rew_width, options: (
        PrioritizedReplayBuffer(9, alpha=0.6, beta=0.4, **options),
        1,
    ),
    "her": lambda rew_width, options: (her_buffer(9, rew_width, **options), 1),
    "manager": lambda rew_width, options: (
        ReplayBufferManager([ReplayBuffer(size, **options) for size in (3, 5, 4)]),
        3,
    ),
    "prioritized_manager": lambda rew_width, options: (
        PrioritizedReplayBufferManager(
            [PrioritizedReplayBuffer(size, alpha=0.5, beta=0.3, **options) for size in (5, 3)]
        ),
        2,
    ),
    "her_manager": lambda rew_width, options: (
        HERReplayBufferManager([her_buffer(size, rew_width, **options) for size in (4, 6)]),
        2,
    ),
    "vector": lambda rew_width, options: (VectorReplayBuffer(12, 3, **options), 3),
    "prioritized_vector": lambda rew_width, options: (
        PrioritizedVectorReplayBuffer(12, 3, alpha=0.6, beta=0.4, **options),
        3,
    ),
    "her_vector": lambda rew_width, options: (
        HERVectorReplayBuffer(
            12,
            3,
            compute_reward_fn=goal_gaps if rew_width else goal_distance,
            horizon=3,
            **options,
        ),
        3,
    ),
    "cached": lambda rew_width, options: (
        CachedReplayBuffer(ReplayBuffer(10, **options), 2, max_episode_length=5),
        2,
    ),
}
GOAL_KINDS = {"her", "her_manager", "her_vector"}


def test_every_buffer_class_is_covered() -> None:
    """A buffer class added to ``tianshou.data`` must be added to :data:`BUILDERS` too."""
    import tianshou.data

    classes = {
        obj
        for obj in vars(tianshou.data).values()
        if isinstance(obj, type) and issubclass(obj, ReplayBuffer)
    }
    built = {type(build(0, {})[0]) for build in BUILDERS.values()}
    assert classes == built


def observations(envs: int, step: int, goals: bool) -> np.ndarray | Batch:
    """The observations of ``envs`` envs at ``step``: arrays, or goal-based dicts."""
    if not goals:
        return np.full((envs, 2), step, dtype=np.float32)
    env = np.arange(envs, dtype=np.float32)
    return Batch(
        observation=np.stack([np.full(envs, step, dtype=np.float32), env], axis=1),
        achieved_goal=np.stack([np.full(envs, step % 3, dtype=np.float32), env % 2], axis=1),
        desired_goal=np.tile(GOAL, (envs, 1)),
    )


def add_steps(
    buf: ReplayBuffer, envs: int, ends: list[list[bool]], rew_width: int, goals: bool = False
) -> None:
    """One ``add`` per entry of ``ends`` (which envs' episodes end there), all envs at once."""
    for i, done in enumerate(ends):
        rew = np.full((envs, rew_width), 0.5 * i) if rew_width else np.full(envs, 0.5 * i)
        buf.add(
            Batch(
                obs=observations(envs, i, goals),
                act=np.arange(envs),
                rew=rew,
                terminated=np.array(done[:envs]),
                truncated=np.zeros(envs, dtype=bool),
                obs_next=observations(envs, i + 1, goals),
            ),
            buffer_ids=np.arange(envs),
        )


def sample(buf: ReplayBuffer, batch_size: int) -> None:
    """Sample as a learner does: HER buffers keep the relabelling pending, prioritized ones
    get new priorities for the sampled rows."""
    if batch_size == 0 or len(buf) == 0:
        return
    rows = buf.sample_indices(batch_size)
    if isinstance(buf, PrioritizedReplayBuffer):
        buf.update_weight(rows, np.linspace(0.1, 2.0, len(rows)))


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(BUILDERS)),
    stack_num=st.sampled_from([1, 2]),
    ignore_obs_next=st.booleans(),
    rew_width=st.sampled_from([0, 2]),
    ends=st.lists(st.lists(st.booleans(), min_size=3, max_size=3), max_size=25),
    batch_size=st.sampled_from([0, 4]),
)
def test_every_state_saves_loads_and_checks_under_both_formats(
    kind: str,
    stack_num: int,
    ignore_obs_next: bool,
    rew_width: int,
    ends: list[list[bool]],
    batch_size: int,
) -> None:
    options = {"stack_num": stack_num, "ignore_obs_next": ignore_obs_next}
    buf, envs = BUILDERS[kind](rew_width, options)
    goals = kind in GOAL_KINDS
    add_steps(buf, envs, ends, rew_width, goals)
    sample(buf, batch_size)
    unpickled = pickle.loads(pickle.dumps(buf))
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "buffer.hdf5")
        buf.save_hdf5(path)
        loaded = type(buf).load_hdf5(path, allow_pickle=goals)
    for copy in (unpickled, loaded):
        assert_same(copy, buf)
        assert len(copy) == len(buf)
    # the same counters and random generators: the copies go on as the original does
    for copy in (buf, unpickled, loaded):
        add_steps(copy, envs, [[True, False, True]], rew_width, goals)
        sample(copy, 4)
    for copy in (unpickled, loaded):
        assert_same(copy, buf)


def test_the_published_round_trip_of_vector_rewards(tmp_path: Path) -> None:
    """The published test: a vector buffer holding rewards of shape (2,) is saved to HDF5 and
    loaded back with the same rewards (it was refused: episode returns of shape (1, 1))."""
    buf = VectorReplayBuffer(10, 2)
    add_steps(buf, 2, [[False, False], [True, False], [False, True]], rew_width=2)
    path = str(tmp_path / "vector_rewards.hdf5")
    buf.save_hdf5(path)
    loaded = VectorReplayBuffer.load_hdf5(path)
    assert loaded.rew.shape == (10, 2)
    assert np.array_equal(loaded.rew, buf.rew) and len(loaded) == len(buf) == 6
