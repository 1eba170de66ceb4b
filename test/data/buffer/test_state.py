"""The buffer state's consistency check, run by every loader (unpickling as well as HDF5)."""

import copy
import pickle

import numpy as np
import pytest

from tianshou.data import (
    Batch,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    ReplayBufferManager,
    VectorReplayBuffer,
)
from tianshou.data.buffer import _kernels as K
from tianshou.data.buffer._state import MalformedBufferError


def filled(buf: ReplayBuffer, steps: int = 5) -> ReplayBuffer:
    for i in range(steps):
        buf.add(
            Batch(obs=i, act=i, rew=float(i), terminated=i == 2, truncated=False, obs_next=i + 1)
        )
    return buf


def test_pickle_round_trip_passes_the_check() -> None:
    buf = filled(ReplayBuffer(4))
    clone = pickle.loads(pickle.dumps(buf))
    assert len(clone) == len(buf) == 4
    np.testing.assert_array_equal(clone[:].obs, buf[:].obs)


@pytest.mark.parametrize(
    ("row", "value", "message"),
    [(K.INS, 9, "insertion index 9"), (K.SIZE, 5, "size 5"), (K.EP_LEN, -1, "episode length")],
)
def test_unpickling_refuses_counters_out_of_range(row: int, value: int, message: str) -> None:
    buf = filled(ReplayBuffer(4))
    buf._istate[row, 0] = value
    data = pickle.dumps(buf)
    with pytest.raises(MalformedBufferError, match=message):
        pickle.loads(data)
    with pytest.raises(MalformedBufferError, match=message):
        copy.deepcopy(buf)


def test_unpickling_refuses_storage_of_the_wrong_length() -> None:
    buf = filled(ReplayBuffer(4))
    state = buf.__getstate__()
    state["_meta"] = Batch(obs=np.zeros(3), done=np.zeros(3, dtype=bool))
    clone = ReplayBuffer.__new__(ReplayBuffer)
    with pytest.raises(MalformedBufferError, match="'obs' has 3 rows, expected maxsize 4"):
        clone.__setstate__(state)


def test_manager_check_covers_its_subbuffers() -> None:
    buf = VectorReplayBuffer(8, 2)
    state = buf.__getstate__()
    state["buffers"][1].options = {**state["buffers"][1].options, "stack_num": 3}
    clone = VectorReplayBuffer.__new__(VectorReplayBuffer)
    with pytest.raises(MalformedBufferError, match=r"sub-buffer 1 .* manager's options"):
        clone.__setstate__(state)


def test_prioritized_check_covers_its_tree() -> None:
    buf = PrioritizedReplayBuffer(4, alpha=0.5, beta=0.5)
    state = buf.__getstate__()
    state["_alpha"] = -1.0
    clone = PrioritizedReplayBuffer.__new__(PrioritizedReplayBuffer)
    with pytest.raises(ValueError, match="alpha"):
        clone.__setstate__(state)


def test_state_markers_tell_buffer_kinds_apart() -> None:
    assert ReplayBuffer._state_markers() == frozenset()
    assert ReplayBufferManager._state_markers() == {"buffers"}
    assert PrioritizedReplayBuffer._state_markers() == {"weight"}
    assert PrioritizedVectorReplayBuffer._state_markers() == {"buffers", "weight"}
