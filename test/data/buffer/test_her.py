"""Tests for HERReplayBuffer (tianshou/data/buffer/her.py) and its manager/vector forms.

The goal environment is a walker on a line: its position ``p`` is the observation and the
achieved goal, the desired goal is fixed per episode, and the reward is sparse (0 on the goal,
-1 elsewhere). Positions are unique across episodes, so a goal value tells where it came from.
"""

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tianshou.data import (
    Batch,
    HERReplayBuffer,
    HERReplayBufferManager,
    HERVectorReplayBuffer,
    ReplayBuffer,
)


def reward_fn(achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
    return np.where(np.all(achieved_goal == desired_goal, axis=-1), 0.0, -1.0)


def goal_obs(position: float, goal: float) -> dict[str, np.ndarray]:
    return {
        "observation": np.array([position, 0.5]),
        "achieved_goal": np.array([position]),
        "desired_goal": np.array([goal]),
    }


def episode(start: int, length: int, goal: float, finished: bool = True) -> list[Batch]:
    """Steps of one episode walking from ``start``; the last one terminates if ``finished``."""
    steps = []
    for t in range(length):
        obs_next = goal_obs(start + t + 1, goal)
        steps.append(
            Batch(
                obs=goal_obs(start + t, goal),
                act=1,
                rew=reward_fn(obs_next["achieved_goal"], obs_next["desired_goal"]),
                terminated=finished and t == length - 1,
                truncated=False,
                obs_next=obs_next,
                info={},
            ),
        )
    return steps


def make(size: int = 20, horizon: int = 30, future_p: float = 1.0, **kw: Any) -> HERReplayBuffer:
    buf = HERReplayBuffer(size, compute_reward_fn=reward_fn, horizon=horizon, **kw)
    buf.future_p = future_p
    return buf


def add_all(buf: ReplayBuffer, steps: list[Batch]) -> None:
    for s in steps:
        buf.add(s)


def snapshot(buf: ReplayBuffer) -> tuple[np.ndarray, ...]:
    meta = buf._meta
    return (
        meta.obs.desired_goal.copy(),
        meta.obs_next.desired_goal.copy() if "obs_next" in meta.__dict__ else np.zeros(0),
        meta.rew.copy(),
        meta.terminated.copy(),
        meta.obs.achieved_goal.copy(),
    )


def assert_same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> None:
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x, y)


def test_horizon_one_relabels_each_sample_with_its_own_outcome() -> None:
    buf = make(horizon=1)
    add_all(buf, episode(0, 8, goal=100))
    original = snapshot(buf)
    indices = buf.sample_indices(5)
    rows = np.unique(indices)
    goal, goal_next, rew, terminated, _ = snapshot(buf)
    # the goal becomes what the step achieved, so every sampled step is a success
    assert np.array_equal(goal[rows, 0], rows + 1.0) and np.array_equal(
        goal_next[rows, 0], rows + 1
    )
    assert np.all(rew[rows] == 0.0)
    untouched = np.setdiff1d(np.arange(20), rows)
    assert np.array_equal(goal[untouched], original[0][untouched])
    assert np.array_equal(rew[untouched], original[2][untouched])
    assert np.array_equal(terminated, original[3])
    batch = buf[indices]
    assert np.array_equal(batch.obs.desired_goal[:, 0], indices + 1.0) and np.all(batch.rew == 0)
    buf._restore_cache()
    assert_same(snapshot(buf), original)


@pytest.mark.parametrize(("future_k", "relabelled"), [(4.0, 6), (8.0, 7), (1.0, 0), (1.5, 2)])
def test_share_of_relabelled_groups_follows_future_k(future_k: float, relabelled: int) -> None:
    buf = HERReplayBuffer(20, reward_fn, horizon=1, future_k=future_k)
    assert buf.future_p == pytest.approx(1 - 1 / future_k)
    add_all(buf, episode(0, 8, goal=100))
    buf.sample_indices(0)  # all 8 rows, each its own group with horizon 1
    assert np.sum(buf.obs.desired_goal[:8, 0] != 100) == relabelled


def test_hand_built_trajectory_relabelling() -> None:
    buf = make(horizon=3)
    add_all(buf, episode(0, 6, goal=100))
    original = snapshot(buf)
    for _ in range(20):
        buf._restore_cache()
        buf.rewrite_transitions(np.array([1]))
        goal, goal_next, rew, _, _ = snapshot(buf)
        new = goal[1, 0]
        assert new in (2.0, 3.0, 4.0)  # achieved after step 1, 2 or 3 (the horizon)
        assert np.all(goal[1:4, 0] == new) and np.all(goal_next[1:4, 0] == new)
        assert np.array_equal(rew[1:4], np.where(np.arange(2, 5) == new, 0.0, -1.0))
        for row in (0, 4, 5):
            assert goal[row, 0] == 100 and rew[row] == original[2][row]
    buf._restore_cache()
    assert_same(snapshot(buf), original)


def test_groups_split_by_trajectory_end() -> None:
    buf = make(horizon=3)
    add_all(buf, episode(0, 6, goal=100))
    seen_first, seen_second = set(), set()
    for _ in range(40):
        buf._restore_cache()
        buf.rewrite_transitions(np.array([4, 1]))  # ends at rows 3 and 5: two groups
        goal = buf.obs.desired_goal[:, 0]
        assert np.all(goal[1:4] == goal[1]) and np.all(goal[4:6] == goal[4])
        assert goal[0] == 100
        seen_first.add(goal[1])
        seen_second.add(goal[4])
    assert seen_first == {2.0, 3.0, 4.0} and seen_second == {5.0, 6.0}


def test_samples_sharing_a_trajectory_end_use_the_last_ones_future() -> None:
    buf = make(horizon=10)
    add_all(buf, episode(0, 6, goal=100))
    seen = set()
    for _ in range(60):
        buf._restore_cache()
        buf.rewrite_transitions(np.array([2, 1]))  # both reach the episode end at row 5
        goal = buf.obs.desired_goal[:, 0]
        assert goal[0] == 100 and np.all(goal[1:6] == goal[1])
        seen.add(goal[1])
    assert seen == {3.0, 4.0, 5.0, 6.0}  # achieved at or after row 2, the later sample


def test_wrapped_episode_takes_goals_from_itself() -> None:
    buf = make(size=7, horizon=10)
    add_all(buf, episode(0, 4, goal=100))  # rows 0..3, rows 0 and 1 get overwritten
    add_all(buf, episode(50, 5, goal=200))  # rows 4, 5, 6, 0, 1
    assert buf._insertion_idx == 2
    original = snapshot(buf)
    seen = set()
    for _ in range(40):
        buf._restore_cache()
        buf.rewrite_transitions(np.array([5, 0]))
        goal = buf.obs.desired_goal[:, 0]
        assert np.all(goal[[5, 6, 0, 1]] == goal[0])
        assert goal[4] == 200 and np.all(goal[[2, 3]] == 100)
        seen.add(goal[0])
    assert seen == {54.0, 55.0}  # achieved at rows 0 and 1, after the later (wrapped) sample
    buf._restore_cache()
    assert_same(snapshot(buf), original)


def test_sample_all_keeps_every_episode_consistent() -> None:
    buf = make(size=15, horizon=30)
    add_all(buf, episode(0, 10, goal=100))
    add_all(buf, episode(50, 9, goal=200))  # wraps over the first episode's rows 0..3
    batch, indices = buf.sample(0)
    assert len(indices) == 15
    goal = buf.obs.desired_goal[:, 0]
    second = np.array([10, 11, 12, 13, 14, 0, 1, 2, 3])
    assert np.all(goal[4:10] == goal[4]) and np.all(goal[second] == goal[10])
    assert 5 <= goal[4] <= 10 and 51 <= goal[10] <= 59
    ag_next = buf.obs_next.achieved_goal[:, 0]
    assert np.array_equal(buf.rew, np.where(ag_next == goal, 0.0, -1.0))
    assert np.array_equal(batch.obs.desired_goal[:, 0], goal[indices])


def test_relabelled_data_is_consistent_along_next() -> None:
    buf = make(size=100, horizon=30)
    add_all(buf, episode(0, 25, goal=100))
    for _ in range(5):
        _, indices = buf.sample(4)
        rows = indices.copy()
        for _ in range(30):
            batch = buf[rows]
            goal = batch.obs.desired_goal[:, 0]
            assert np.all(goal == goal[0]) and np.all(batch.obs_next.desired_goal[:, 0] == goal)
            assert np.array_equal(
                batch.rew, np.where(batch.obs_next.achieved_goal[:, 0] == goal, 0.0, -1.0)
            )
            assert goal[0] >= indices.max() + 1
            rows = buf.next(rows)


def test_unfinished_episode_stops_at_last_written_row() -> None:
    buf = make(horizon=30)
    add_all(buf, episode(0, 5, goal=100, finished=False))
    seen = set()
    for _ in range(40):
        buf.sample_indices(1)
        seen.update(buf.obs.desired_goal[:5, 0].tolist())
    assert seen - {100.0} <= {1.0, 2.0, 3.0, 4.0, 5.0} and buf.obs.desired_goal[5, 0] == 0


def test_ignore_obs_next_recomputes_reward_with_new_goal() -> None:
    buf = make(horizon=1, ignore_obs_next=True)
    add_all(buf, episode(0, 6, goal=100))
    assert "obs_next" not in buf._meta.__dict__
    buf.rewrite_transitions(np.array([1, 3]))
    goal = buf.obs.desired_goal[:, 0]
    assert goal[1] == 2 and goal[3] == 4  # the achieved goal of the next stored observation
    assert buf.rew[1] == 0.0 and buf.rew[3] == 0.0 and buf.rew[2] == -1.0
    buf._restore_cache()
    assert np.all(buf.obs.desired_goal[:6, 0] == 100) and np.all(buf.rew[:6] == -1.0)


@pytest.mark.parametrize("action", ["add", "update", "reset", "set_batch", "pickle", "hdf5"])
def test_originals_restored_before_writes_and_saves(action: str, tmp_path: Path) -> None:
    buf = make(horizon=30)
    add_all(buf, episode(0, 6, goal=100))
    original = snapshot(buf)
    buf.sample_indices(3)
    assert not np.array_equal(buf.obs.desired_goal, original[0])
    if action == "add":
        buf.add(episode(50, 1, goal=200)[0])
        assert np.array_equal(buf.obs.desired_goal[:6], original[0][:6])
        assert np.array_equal(buf.rew[:6], original[2][:6])
        return
    if action == "update":
        other = ReplayBuffer(5)
        add_all(other, episode(70, 2, goal=300))
        buf.update(other)
        assert np.array_equal(buf.obs.desired_goal[:6], original[0][:6])
        return
    if action == "reset":
        buf.reset()
    elif action == "set_batch":
        buf.set_batch(buf._meta)
    elif action == "pickle":
        copy = pickle.loads(pickle.dumps(buf))
        assert_same(snapshot(copy), original)
        assert copy.future_p == 1.0 and copy.horizon == 30
    else:
        buf.save_hdf5(str(tmp_path / "her.hdf5"))
        copy = HERReplayBuffer.load_hdf5(str(tmp_path / "her.hdf5"), allow_pickle=True)
        assert_same(snapshot(copy), original)
    assert_same(snapshot(buf), original)


def test_full_read_does_not_relabel() -> None:
    buf = make(horizon=30)
    add_all(buf, episode(0, 6, goal=100))
    before = buf[:]
    assert np.all(before.obs.desired_goal == 100) and np.all(buf.obs.desired_goal[:6] == 100)
    buf.sample_indices(2)
    current = snapshot(buf)
    after = buf[:]
    assert_same(snapshot(buf), current)  # reading everything leaves the relabelling as it is
    assert np.array_equal(after.obs.desired_goal, current[0][:6])


def test_construction_errors() -> None:
    with pytest.raises(ValueError, match="horizon"):
        HERReplayBuffer(10, reward_fn, horizon=0)
    with pytest.raises(ValueError, match="future_k"):
        HERReplayBuffer(10, reward_fn, horizon=5, future_k=0.5)
    with pytest.raises(TypeError, match="callable"):
        HERReplayBuffer(10, None, horizon=5)  # type: ignore[arg-type]
    buf = HERReplayBuffer(10, reward_fn, horizon=5)
    buf.add(Batch(obs=np.ones(3), act=0, rew=0.0, terminated=False, truncated=False))
    with pytest.raises(ValueError, match="desired_goal"):
        buf.sample(2)
    empty = HERReplayBuffer(10, reward_fn, horizon=5)
    assert empty.sample_indices(3).size == 0


def vector(**kw: Any) -> HERVectorReplayBuffer:
    buf = HERVectorReplayBuffer(30, 3, compute_reward_fn=reward_fn, horizon=30, **kw)
    for sub in buf.buffers:
        sub.future_p = 1.0
    return buf


def fill_vector(buf: HERVectorReplayBuffer) -> None:
    """Sub-buffer b holds episodes starting at positions 100*b (length 4+b) then 100*b + 50."""
    episodes = [
        episode(100 * b, 4 + b, goal=1000 + b) + episode(100 * b + 50, 8, goal=2000 + b)
        for b in range(3)
    ]
    for t in range(max(len(e) for e in episodes)):
        ids = [b for b in range(3) if t < len(episodes[b])]
        buf.add(Batch.stack([episodes[b][t] for b in ids]), buffer_ids=ids)


def test_vector_relabels_within_each_sub_buffer_episode() -> None:
    buf = vector()
    fill_vector(buf)
    assert len(buf) == 30  # the sub-buffers are full and have wrapped
    original = snapshot(buf)
    for _ in range(10):
        _, indices = buf.sample(6)
        for index in indices:
            rows = [index]
            for _ in range(12):
                rows.append(int(buf.next(rows[-1])))
            sub = index // 10
            goal = buf.obs.desired_goal[rows, 0]
            assert np.all(goal == goal[0])
            achieved = buf.obs_next.achieved_goal[rows, 0]
            assert np.array_equal(buf.rew[rows], np.where(achieved == goal, 0.0, -1.0))
            assert goal[0] >= buf.obs.achieved_goal[index, 0] + 1
            assert 100 * sub <= goal[0] < 100 * sub + 100  # never another sub-buffer's goal
    buf._restore_cache()
    assert_same(snapshot(buf), original)


def test_vector_restores_before_add_and_pickle() -> None:
    buf = vector()
    fill_vector(buf)
    original = snapshot(buf)
    buf.sample(10)
    assert not np.array_equal(buf.obs.desired_goal, original[0])
    copy = pickle.loads(pickle.dumps(buf))
    assert_same(snapshot(copy), original)
    assert_same(snapshot(buf), original)
    buf.sample(10)
    step = episode(500, 1, goal=3000)[0]
    rows = buf.add(Batch.stack([step]), buffer_ids=[1])[0]
    expected = [a.copy() for a in original]
    for array, value in zip(expected, (3000, 3000, -1.0, True, 500), strict=True):
        array[rows] = value
    assert_same(snapshot(buf), tuple(expected))
    assert np.array_equal(buf[:].obs.desired_goal, expected[0][buf._chronological()])


def test_vector_construction_errors() -> None:
    with pytest.raises(TypeError, match="HERReplayBuffer"):
        HERReplayBufferManager([ReplayBuffer(3), ReplayBuffer(3)])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="buffer_num"):
        HERVectorReplayBuffer(10, 0, compute_reward_fn=reward_fn, horizon=3)


def test_published_state_with_pending_relabelling_is_undone_on_load() -> None:
    buf = make(horizon=30)
    add_all(buf, episode(0, 6, goal=100))
    original = snapshot(buf)
    state = buf.__getstate__()
    rows = np.array([[1, 2], [2, 3]])
    state["_original_meta"] = buf._meta[rows]  # the published cache: whole original rows
    state["_altered_indices"] = rows
    state["_meta"] = copy_meta = Batch(buf._meta, copy=True)
    copy_meta.obs.desired_goal[rows] = 7.0  # the relabelled data it pickled
    loaded = HERReplayBuffer.__new__(HERReplayBuffer)
    loaded.__setstate__(state)
    assert_same(snapshot(loaded), original)
    assert loaded._altered_indices.size == 0
    loaded.sample_indices(2)
    loaded._restore_cache()
    assert_same(snapshot(loaded), original)


def test_published_shifted_start_scenario() -> None:
    buf = make(size=15, horizon=30)
    buf._insertion_idx = 5  # start writing mid-storage: the second episode wraps around
    add_all(buf, episode(0, 5, goal=100))  # rows 5..9
    add_all(buf, episode(0, 10, goal=100))  # rows 10..14, 0..4
    buf.sample(0)
    first, second = buf[5].obs.desired_goal, buf[0].obs.desired_goal
    assert np.all(buf[:5].obs.desired_goal == second)
    assert np.all(buf[5:10].obs.desired_goal == first)
    assert np.all(buf[10:].obs.desired_goal == second)
    # every step is sampled, so each episode's goal is what its last step achieved
    assert first.tolist() == [5.0] and second.tolist() == [10.0]
