"""Tests for VectorReplayBuffer (tianshou/data/buffer/vecbuf.py)."""

import numpy as np
import pytest

from tianshou.data import Batch, ReplayBuffer, VectorReplayBuffer


def steps(values: list[int], terminated: list[int], **extra: object) -> Batch:
    n = len(values)
    return Batch(
        obs=values, act=values, rew=values, terminated=terminated, truncated=[0] * n, **extra
    )


@pytest.mark.parametrize(("total", "num", "sub"), [(5, 4, 2), (8, 4, 2), (9, 2, 5), (0, 3, 0)])
def test_sub_buffer_size_is_ceiling(total: int, num: int, sub: int) -> None:
    buf = VectorReplayBuffer(total, num)
    assert buf.buffer_num == num and buf.maxsize == sub * num
    assert all(b.maxsize == sub and type(b) is ReplayBuffer for b in buf.buffers)


def test_invalid_arguments() -> None:
    for num in (0, -1):
        with pytest.raises(ValueError, match="buffer_num"):
            VectorReplayBuffer(10, num)
    with pytest.raises(ValueError, match="total_size"):
        VectorReplayBuffer(-4, 2)


def test_kwargs_reach_every_sub_buffer() -> None:
    buf = VectorReplayBuffer(6, 2, stack_num=3, ignore_obs_next=True, random_seed=7)
    assert buf.stack_num == 3 and not buf._save_obs_next
    assert all(b.options == buf.options for b in buf.buffers)
    assert buf.options["random_seed"] == 7


def test_episodes_per_environment() -> None:
    buf = VectorReplayBuffer(5, 4)  # four sub-buffers of two rows
    buf.add(steps([1, 2, 3], [0, 0, 1], info={}), buffer_ids=[0, 1, 2])
    batch, indices = buf.sample(0)
    assert np.array_equal(indices, [0, 2, 4])
    assert np.array_equal(buf.prev(indices), indices)
    assert np.array_equal(buf.next(indices), indices)
    buf.add(steps([4], [1]), buffer_ids=[3])
    _, indices = buf.sample(0)
    assert np.array_equal(indices, [0, 2, 4, 6])
    buf.add(steps([5, 6, 7], [0, 0, 1]), buffer_ids=[0, 1, 2])
    _, indices = buf.sample(0)
    assert np.array_equal(indices, [0, 1, 2, 3, 4, 5, 6])
    assert np.array_equal(buf.prev(indices), [0, 0, 2, 2, 4, 5, 6])
    assert np.array_equal(buf.next(indices), [1, 1, 3, 3, 4, 5, 6])
    assert np.array_equal(buf.unfinished_index(), [1, 3])
    buf.add(steps([8, 9, 10], [1, 1, 1]), buffer_ids=[0, 1, 2])
    assert np.array_equal(buf.obs, [8, 5, 9, 6, 10, 7, 4, 0])
    batch, indices = buf.sample(0)
    assert np.array_equal(indices, [1, 0, 3, 2, 5, 4, 6])
    assert np.array_equal(batch.obs, [5, 8, 6, 9, 7, 10, 4])
    assert np.array_equal(buf.prev(indices), [1, 1, 3, 3, 5, 4, 6])
    assert np.array_equal(buf.next(indices), [0, 0, 2, 2, 5, 4, 6])
    assert len(buf.unfinished_index()) == 0


def test_frame_stack_and_obs_next_across_environments() -> None:
    buf = VectorReplayBuffer(8, 2, stack_num=2, ignore_obs_next=True)
    for t in range(3):
        buf.add(steps([10 + t, 20 + t], [0, int(t == 1)]), buffer_ids=[0, 1])
    data = buf[:]
    assert np.array_equal(data.obs, [[10, 10], [10, 11], [11, 12], [20, 20], [20, 21], [22, 22]])
    assert np.array_equal(
        data.obs_next,
        [[10, 11], [11, 12], [11, 12], [20, 21], [20, 21], [22, 22]],
    )


def test_hopper_shaped_steps_round_trip() -> None:
    rng = np.random.default_rng(0)
    buf = VectorReplayBuffer(64, 8)
    history = []
    for _ in range(20):
        batch = Batch(
            obs=rng.standard_normal((8, 11)).astype(np.float32),
            act=rng.standard_normal((8, 3)).astype(np.float32),
            rew=rng.standard_normal(8),
            terminated=rng.random(8) < 0.2,
            truncated=np.zeros(8, bool),
            obs_next=rng.standard_normal((8, 11)).astype(np.float32),
            info=Batch(env_id=np.arange(8)),
        )
        rows, *_ = buf.add(batch, buffer_ids=np.arange(8))
        history.append((rows, batch))
    for rows, batch in history[-8:]:  # the last 8 steps of every env are still stored
        stored = buf[rows]
        assert np.array_equal(stored.obs, batch.obs) and np.array_equal(stored.act, batch.act)
        assert np.array_equal(stored.info.env_id, np.arange(8))
        assert stored.obs.dtype == np.float32
    data, indices = buf.sample(256)
    assert np.array_equal(data.info.env_id, indices // 8)
    assert np.array_equal(data.obs, buf.obs[indices])
