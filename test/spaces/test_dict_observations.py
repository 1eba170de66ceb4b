"""Tests of :mod:`tianshou.spaces.dict_observations`: row operations on flat and dict
observation batches (as BCQ and CQL use them)."""

import numpy as np
import torch

from tianshou.data import Batch
from tianshou.spaces.dict_observations import cat_rows, obs_rows, repeat_rows

DEVICE = torch.device("cpu")


def dict_obs() -> Batch:
    return Batch(
        pos=np.array([[0.0, 1.0], [2.0, 3.0]], dtype=np.float32),
        camera=np.arange(2 * 2 * 2, dtype=np.uint8).reshape(2, 2, 2),
        goal=np.array([1, 0]),
    )


def test_flat_observations_are_float_tensors_repeated_like_repeat_interleave() -> None:
    flat = obs_rows(np.array([[1, 2], [3, 4]]), DEVICE)
    assert isinstance(flat, torch.Tensor) and flat.dtype == torch.float32
    assert repeat_rows(flat, 2).tolist() == [[1, 2], [1, 2], [3, 4], [3, 4]]
    assert cat_rows([flat, flat[:1]]).tolist() == [[1, 2], [3, 4], [1, 2]]


def test_dict_observations_keep_each_entry_dtype_and_repeat_key_by_key() -> None:
    obs = obs_rows(dict_obs(), DEVICE)
    assert isinstance(obs, Batch)
    assert obs.camera.dtype == torch.uint8 and obs.goal.dtype == torch.int64
    repeated = repeat_rows(obs, 3)
    assert isinstance(repeated, Batch) and len(repeated) == 6
    assert repeated.goal.tolist() == [1, 1, 1, 0, 0, 0]
    assert torch.equal(repeated.camera[3], obs.camera[1])
    joined = cat_rows([obs, repeated])
    assert isinstance(joined, Batch) and len(joined) == 8
    assert joined.pos[2:].tolist() == repeated.pos.tolist()
