"""Every example of the Buffer section of the 2.x concepts page, with the values it shows."""

import pickle
from pathlib import Path

import numpy as np
import pytest

from tianshou.data import Batch, ReplayBuffer


@pytest.fixture
def buf() -> ReplayBuffer:
    buf = ReplayBuffer(size=20)
    for i in range(3):
        buf.add(Batch(obs=i, act=i, rew=i, terminated=0, truncated=0, obs_next=i + 1, info={}))
    return buf


@pytest.fixture
def buf2() -> ReplayBuffer:
    buf2 = ReplayBuffer(size=10)
    for i in range(15):
        terminated = i % 4 == 0
        buf2.add(
            Batch(
                obs=i, act=i, rew=i, terminated=terminated, truncated=False, obs_next=i + 1, info={}
            ),
        )
    return buf2


def test_basic_storage(buf: ReplayBuffer) -> None:
    assert np.array_equal(buf.obs, [0, 1, 2] + [0] * 17)
    assert len(buf.obs) == 20
    assert len(buf) == 3


def test_circular_overwrite(buf2: ReplayBuffer) -> None:
    assert len(buf2) == 10
    assert np.array_equal(buf2.obs, [10, 11, 12, 13, 14, 5, 6, 7, 8, 9])


def test_update_keeps_chronological_order(buf: ReplayBuffer, buf2: ReplayBuffer) -> None:
    buf.update(buf2)
    expected = [0, 1, 2, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 0, 0, 0, 0, 0, 0]
    assert np.array_equal(buf.obs, expected)
    indices = buf.sample_indices(0)
    assert np.array_equal(indices, np.arange(13))
    assert np.array_equal(buf.prev(indices), [0, 0, 1, 2, 3, 4, 5, 7, 7, 8, 9, 11, 11])
    assert np.array_equal(buf.next(indices), [1, 2, 3, 4, 5, 6, 6, 8, 9, 10, 10, 12, 12])
    batch_data, indices = buf.sample(batch_size=4)
    assert np.array_equal(batch_data.obs == buf[indices].obs, [True] * 4)
    assert len(buf) == 13


def test_pickle_and_hdf5_round_trip(buf: ReplayBuffer, tmp_path: Path) -> None:
    pkl, hdf5 = tmp_path / "buf.pkl", tmp_path / "buf.hdf5"
    with pkl.open("wb") as f:
        pickle.dump(buf, f)
    buf.save_hdf5(str(hdf5))
    with pkl.open("rb") as f:
        loaded = pickle.load(f)
    assert len(loaded) == 3
    assert np.array_equal(loaded.obs, buf.obs)
    from_file = ReplayBuffer.load_hdf5(str(hdf5))
    assert len(from_file) == 3
    assert np.array_equal(from_file.obs_next, buf.obs_next)
    assert repr(from_file) == repr(buf)


@pytest.fixture
def stacked() -> tuple[ReplayBuffer, list[str]]:
    buf = ReplayBuffer(size=9, stack_num=4, ignore_obs_next=True)
    printed = []
    for i in range(16):
        terminated = i % 5 == 0
        _, ep_rew, ep_len, _ = buf.add(
            Batch(
                obs={"id": i},
                act=i,
                rew=i,
                terminated=terminated,
                truncated=False,
                obs_next={"id": i + 1},
            ),
        )
        printed.append(f"{i} {ep_len} {ep_rew}")
    return buf, printed


def test_episode_statistics_printout(stacked: tuple[ReplayBuffer, list[str]]) -> None:
    _, printed = stacked
    expected = ["0 [1] [0.]"]
    expected += [f"{i} [0] [0.]" for i in range(1, 5)]
    expected += ["5 [5] [15.]"] + [f"{i} [0] [0.]" for i in range(6, 10)]
    expected += ["10 [5] [40.]"] + [f"{i} [0] [0.]" for i in range(11, 15)]
    expected += ["15 [5] [65.]"]
    assert printed == expected


def test_repr_shows_storage_without_obs_next(stacked: tuple[ReplayBuffer, list[str]]) -> None:
    buf, _ = stacked
    text = repr(buf)
    assert text.startswith("ReplayBuffer(\n    obs: Batch(\n")
    assert "id: array([ 9, 10, 11, 12, 13, 14, 15,  7,  8])" in text
    assert "act: array([ 9, 10, 11, 12, 13, 14, 15,  7,  8])" in text
    assert "rew: array([ 9., 10., 11., 12., 13., 14., 15.,  7.,  8.])" in text
    assert "obs_next" not in text
    assert np.array_equal(buf.done, [False, True, False, False, False, False, True, False, False])
    assert str(buf) == text


def test_frame_stack(stacked: tuple[ReplayBuffer, list[str]]) -> None:
    buf, _ = stacked
    index = np.arange(len(buf))
    expected = [
        [7, 7, 8, 9],
        [7, 8, 9, 10],
        [11, 11, 11, 11],
        [11, 11, 11, 12],
        [11, 11, 12, 13],
        [11, 12, 13, 14],
        [12, 13, 14, 15],
        [7, 7, 7, 7],
        [7, 7, 7, 8],
    ]
    assert np.array_equal(buf.get(index, "obs").id, expected)
    assert abs(buf.get(index, "obs")["id"] - buf[index].obs.id).sum().sum() == 0


def test_obs_next_rebuilt_in_time_order(stacked: tuple[ReplayBuffer, list[str]]) -> None:
    buf, _ = stacked
    expected = [
        [7, 7, 7, 8],
        [7, 7, 8, 9],
        [7, 8, 9, 10],
        [7, 8, 9, 10],
        [11, 11, 11, 12],
        [11, 11, 12, 13],
        [11, 12, 13, 14],
        [12, 13, 14, 15],
        [12, 13, 14, 15],
    ]
    assert np.array_equal(buf[:].obs_next.id, expected)
    full_index = np.array([7, 8, 0, 1, 2, 3, 4, 5, 6])
    assert np.allclose(buf[:].obs_next.id, buf[full_index].obs_next.id)
