"""Every buffer against a deliberately naive reference: Python lists of transitions.

The reference keeps, per (sub-)buffer, a list of slots and the chronological list of the slots in
use, and answers prev/next/unfinished by walking that list, sharing no code or index arithmetic
with the real buffers. Hypothesis drives random add / update / reset / sample sequences over tiny
buffers so wrap-around and episodes ending at slot 0 happen constantly.
"""

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tianshou.data import (
    Batch,
    CachedReplayBuffer,
    ReplayBuffer,
    ReplayBufferManager,
    VectorReplayBuffer,
)

SETTINGS = settings(max_examples=60, deadline=None)


@dataclass
class Transition:
    obs: int
    rew: float
    terminated: bool
    truncated: bool

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class RefBuffer:
    """One circular buffer as a list of slots plus the time order of the used slots."""

    maxsize: int
    slots: list[Transition | None] = field(default_factory=list)
    order: list[int] = field(default_factory=list)
    next_slot: int = 0
    ep_return: float = 0.0
    ep_len: int = 0
    ep_start: int = 0

    def __post_init__(self) -> None:
        self.slots = [None] * self.maxsize

    def _write(self, t: Transition) -> int:
        slot = self.next_slot
        self.slots[slot] = t
        if slot in self.order:
            self.order.remove(slot)
        self.order.append(slot)
        self.next_slot = (slot + 1) % self.maxsize
        return slot

    def add(self, t: Transition) -> tuple[int, float, int, int]:
        slot = self._write(t)
        self.ep_return += t.rew
        self.ep_len += 1
        start = self.ep_start
        if not t.done:
            return slot, 0.0, 0, start
        result = (slot, self.ep_return, self.ep_len, start)
        self.ep_return, self.ep_len, self.ep_start = 0.0, 0, self.next_slot
        return result

    def update(self, other: "RefBuffer") -> list[int]:
        return [self._write(other.slots[s]) for s in list(other.order)]  # type: ignore[arg-type]

    def reset(self, keep_statistics: bool = False) -> None:
        self.order, self.next_slot, self.ep_start = [], 0, 0
        if not keep_statistics:
            self.ep_return, self.ep_len = 0.0, 0

    def prev(self, slot: int) -> int:
        pos = self.order.index(slot)
        if pos == 0:
            return slot
        before = self.order[pos - 1]
        return slot if self.slots[before].done else before  # type: ignore[union-attr]

    def next(self, slot: int) -> int:
        pos = self.order.index(slot)
        if self.slots[slot].done or pos == len(self.order) - 1:  # type: ignore[union-attr]
            return slot
        return self.order[pos + 1]

    def unfinished(self) -> list[int]:
        if not self.order or self.slots[self.order[-1]].done:  # type: ignore[union-attr]
            return []
        return [self.order[-1]]


class RefManager:
    """Sub-buffer references laid out one after the other."""

    def __init__(self, sizes: list[int]) -> None:
        self.subs = [RefBuffer(s) for s in sizes]
        self.offsets = [sum(sizes[:i]) for i in range(len(sizes))]

    def locate(self, row: int) -> tuple[RefBuffer, int, int]:
        for sub, off in zip(self.subs, self.offsets, strict=True):
            if off <= row < off + sub.maxsize:
                return sub, off, row - off
        raise AssertionError(row)

    def rows(self) -> list[int]:
        return [
            off + s for sub, off in zip(self.subs, self.offsets, strict=True) for s in sub.order
        ]

    def prev(self, row: int) -> int:
        sub, off, slot = self.locate(row)
        return off + sub.prev(slot)

    def next(self, row: int) -> int:
        sub, off, slot = self.locate(row)
        return off + sub.next(slot)

    def unfinished(self) -> list[int]:
        return [
            off + s
            for sub, off in zip(self.subs, self.offsets, strict=True)
            for s in sub.unfinished()
        ]

    def obs(self, row: int) -> int:
        sub, _, slot = self.locate(row)
        return sub.slots[slot].obs  # type: ignore[union-attr]


def transitions(draw: Any, n: int, counter: list[int]) -> list[Transition]:
    out = []
    for _ in range(n):
        counter[0] += 1
        flag = draw(st.sampled_from(["none", "none", "terminated", "truncated"]))
        rew = float(draw(st.integers(-3, 3)))
        out.append(Transition(counter[0], rew, flag == "terminated", flag == "truncated"))
    return out


def as_batch(ts: list[Transition]) -> Batch:
    obs = np.array([t.obs for t in ts])
    return Batch(
        obs=obs,
        act=obs,
        rew=np.array([t.rew for t in ts]),
        terminated=np.array([t.terminated for t in ts]),
        truncated=np.array([t.truncated for t in ts]),
        obs_next=obs + 10_000,
        info=Batch(tag=obs * 2),
    )


def check_against(buf: ReplayBuffer, ref: RefManager, stack_num: int) -> None:
    rows = ref.rows()
    assert len(buf) == len(rows)
    assert buf.sample_indices(0).tolist() == rows
    data = buf[:]
    if not rows:
        return
    newest = (lambda x: x) if stack_num == 1 else (lambda x: x[:, -1])
    assert newest(data.obs).tolist() == [ref.obs(r) for r in rows]
    assert newest(data.obs_next).tolist() == [ref.obs(r) + 10_000 for r in rows]
    assert newest(data.info.tag).tolist() == [2 * ref.obs(r) for r in rows]
    assert buf.prev(np.array(rows)).tolist() == [ref.prev(r) for r in rows]
    assert buf.next(np.array(rows)).tolist() == [ref.next(r) for r in rows]
    assert sorted(buf.unfinished_index().tolist()) == sorted(ref.unfinished())
    if stack_num > 1:
        expected = []
        for r in rows:
            chain = [r]
            for _ in range(stack_num - 1):
                chain.insert(0, ref.prev(chain[0]))
            expected.append([ref.obs(c) for c in chain])
        assert data.obs.tolist() == expected
        assert data.info.tag.tolist() == [[2 * obs for obs in stack] for stack in expected]
        assert data.act.tolist() == [ref.obs(r) for r in rows]  # not stacked
    sampled = buf.sample_indices(20)
    assert set(sampled.tolist()) <= set(rows)


def check_add_result(
    result: tuple[np.ndarray, ...], expected: list[tuple[int, float, int, int]]
) -> None:
    rows, ep_rew, ep_len, ep_start = result
    assert rows.tolist() == [e[0] for e in expected]
    assert ep_rew.tolist() == [e[1] for e in expected]
    assert ep_len.tolist() == [e[2] for e in expected]
    assert ep_start.tolist() == [e[3] for e in expected]


@SETTINGS
@given(data=st.data(), size=st.integers(1, 5), stack_num=st.integers(1, 3))
def test_replay_buffer_matches_reference(data: Any, size: int, stack_num: int) -> None:
    buf = ReplayBuffer(size, stack_num=stack_num)
    ref = RefManager([size])
    source, source_ref = ReplayBuffer(3), RefBuffer(3)
    counter = [0]
    for _ in range(data.draw(st.integers(1, 25))):
        op = data.draw(st.sampled_from(["add", "add", "add_stacked", "update", "reset"]))
        if op == "update":
            (t,) = transitions(data.draw, 1, counter)
            source.add(as_batch([t])[0])
            source_ref.add(t)
            got = buf.update(source)
            assert got.tolist() == ref.subs[0].update(source_ref)
        elif op == "reset":
            keep = data.draw(st.booleans())
            buf.reset(keep_statistics=keep)
            ref.subs[0].reset(keep)
        else:
            (t,) = transitions(data.draw, 1, counter)
            batch = as_batch([t])
            result = buf.add(batch[0]) if op == "add" else buf.add(batch, buffer_ids=[0])
            check_add_result(result, [ref.subs[0].add(t)])
        check_against(buf, ref, stack_num)


def run_manager_case(data: Any, buf: ReplayBufferManager, ref: RefManager, stack_num: int) -> None:
    counter = [0]
    k = len(ref.subs)
    for _ in range(data.draw(st.integers(1, 20))):
        if data.draw(st.integers(0, 9)) == 0:
            keep = data.draw(st.booleans())
            buf.reset(keep_statistics=keep)
            for sub in ref.subs:
                sub.reset(keep)
        else:
            ids = data.draw(st.lists(st.integers(0, k - 1), min_size=1, max_size=k + 1))
            ts = transitions(data.draw, len(ids), counter)
            expected = []
            for b, t in zip(ids, ts, strict=True):
                slot, ret, length, start = ref.subs[b].add(t)
                expected.append((slot + ref.offsets[b], ret, length, start + ref.offsets[b]))
            check_add_result(buf.add(as_batch(ts), buffer_ids=ids), expected)
        check_against(buf, ref, stack_num)
        for b, sub in enumerate(buf.buffers):
            assert len(sub) == len(ref.subs[b].order)
            assert sub._ep_len == ref.subs[b].ep_len


@SETTINGS
@given(
    data=st.data(),
    sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    stack_num=st.integers(1, 3),
)
def test_manager_matches_reference(data: Any, sizes: list[int], stack_num: int) -> None:
    buf = ReplayBufferManager([ReplayBuffer(s, stack_num=stack_num) for s in sizes])
    run_manager_case(data, buf, RefManager(sizes), stack_num)


@SETTINGS
@given(data=st.data(), total=st.integers(1, 12), num=st.integers(1, 4))
def test_vector_buffer_matches_reference(data: Any, total: int, num: int) -> None:
    buf = VectorReplayBuffer(total, num, stack_num=2)
    sub = -(-total // num)
    run_manager_case(data, buf, RefManager([sub] * num), 2)


@SETTINGS
@given(data=st.data(), main=st.integers(1, 6), caches=st.integers(1, 3), ep_max=st.integers(1, 4))
def test_cached_buffer_matches_reference(data: Any, main: int, caches: int, ep_max: int) -> None:
    buf = CachedReplayBuffer(ReplayBuffer(main), caches, ep_max)
    ref = RefManager([main] + [ep_max] * caches)
    counter = [0]
    for _ in range(data.draw(st.integers(1, 20))):
        envs = data.draw(
            st.lists(st.integers(0, caches - 1), min_size=1, max_size=caches, unique=True)
        )
        ts = transitions(data.draw, len(envs), counter)
        expected = []
        for env, t in zip(envs, ts, strict=True):
            cache = ref.subs[env + 1]
            slot, ret, length, start = cache.add(t)
            row, start = slot + ref.offsets[env + 1], start + ref.offsets[env + 1]
            if t.done:
                moved = ref.subs[0].update(cache)
                start, row = moved[0], moved[-1]
                cache.reset()
            expected.append((row, ret, length, start))
        check_add_result(buf.add(as_batch(ts), buffer_ids=envs), expected)
        check_against(buf, ref, 1)
