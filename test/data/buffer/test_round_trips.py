"""Every buffer state the library produces saves and loads, under HDF5 and pickle, and passes
the load-time consistency check: property-based, over random sequences of ``add`` calls with
scalar and vector rewards, every buffer class but HER (whose reward function needs pickling),
``stack_num`` and ``ignore_obs_next``; and the published round trip of a vector buffer with
vector rewards."""

import pickle
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from test.data.buffer.test_hdf5 import assert_same
from tianshou.data import (
    Batch,
    CachedReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)

KINDS = ("plain", "prioritized", "vector", "prioritized_vector", "cached")


def make(kind: str, stack_num: int, ignore_obs_next: bool) -> tuple[ReplayBuffer, int]:
    """An empty buffer of ``kind`` and how many envs add to it at once."""
    options = {"stack_num": stack_num, "ignore_obs_next": ignore_obs_next}
    if kind == "plain":
        return ReplayBuffer(9, **options), 1
    if kind == "prioritized":
        return PrioritizedReplayBuffer(9, alpha=0.6, beta=0.4, **options), 1
    if kind == "vector":
        return VectorReplayBuffer(12, 3, **options), 3
    if kind == "prioritized_vector":
        return PrioritizedVectorReplayBuffer(12, 3, alpha=0.6, beta=0.4, **options), 3
    return CachedReplayBuffer(ReplayBuffer(10, **options), 2, max_episode_length=5), 2


def add_steps(buf: ReplayBuffer, envs: int, ends: list[list[bool]], rew_width: int) -> None:
    """One ``add`` per entry of ``ends`` (which envs' episodes end there), all envs at once."""
    for i, done in enumerate(ends):
        rew = np.full((envs, rew_width), 0.5 * i) if rew_width else np.full(envs, 0.5 * i)
        obs = np.full((envs, 2), i, dtype=np.float32)
        buf.add(
            Batch(
                obs=obs,
                act=np.arange(envs),
                rew=rew,
                terminated=np.array(done[:envs]),
                truncated=np.zeros(envs, dtype=bool),
                obs_next=obs + 1,
            ),
            buffer_ids=np.arange(envs),
        )


@settings(max_examples=40, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    stack_num=st.sampled_from([1, 2]),
    ignore_obs_next=st.booleans(),
    rew_width=st.sampled_from([0, 2]),
    ends=st.lists(st.lists(st.booleans(), min_size=3, max_size=3), max_size=25),
)
def test_every_state_saves_loads_and_checks_under_both_formats(
    kind: str, stack_num: int, ignore_obs_next: bool, rew_width: int, ends: list[list[bool]]
) -> None:
    buf, envs = make(kind, stack_num, ignore_obs_next)
    add_steps(buf, envs, ends, rew_width)
    assert_same(pickle.loads(pickle.dumps(buf)), buf)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "buffer.hdf5")
        buf.save_hdf5(path)
        loaded = type(buf).load_hdf5(path)
    assert_same(loaded, buf)
    assert len(loaded) == len(buf)


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
