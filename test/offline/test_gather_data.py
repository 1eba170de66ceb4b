"""Tests of the expert buffers (test/offline/gather_*_data.py) and of their on-disk cache.

The buffer tests use the shared cached files through ``load_expert_buffer``: the first test that
needs one gathers it (training the expert, once per checkout), the others load it. The cache's
locking and regeneration are tested with a tiny fake gather function in a temporary directory.
"""

import argparse
import multiprocessing
import os
import time
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from test.offline import gather_cartpole_data, gather_pendulum_data
from test.offline._expert_cache import (
    check_expert_buffer,
    check_mean_return,
    collect_until_expert,
    episode_returns,
    load_or_gather,
    save_atomically,
)
from tianshou.data import Batch, ReplayBuffer, VectorReplayBuffer

PENDULUM_MIN_RETURN = -200.0
"""A random policy returns about -1200 on Pendulum-v1, a good swing-up policy about -150."""
CARTPOLE_MIN_RETURN = 400.0
"""Out of the maximum 500; a random policy returns about 22."""
GATHER_MODULES = [gather_pendulum_data, gather_cartpole_data]


def stored(buffer: VectorReplayBuffer) -> Batch:
    """All stored transitions, each sub-buffer's in chronological order."""
    return buffer[buffer.sample_indices(0)]


def assert_episodes_are_consistent(buffer: VectorReplayBuffer) -> None:
    """``done`` is ``terminated or truncated``; within each sub-buffer (one collecting env,
    never wrapped around), each ``obs_next`` is the next row's ``obs`` unless the row ends an
    episode, after which the next row starts from a reset observation."""
    data = stored(buffer)
    np.testing.assert_array_equal(data.done, np.logical_or(data.terminated, data.truncated))
    per_env = len(buffer) // buffer.buffer_num
    assert per_env * buffer.buffer_num == len(buffer)  # the envs were stepped together
    obs = data.obs.reshape(buffer.buffer_num, per_env, -1)
    obs_next = data.obs_next.reshape(buffer.buffer_num, per_env, -1)
    done = data.done.reshape(buffer.buffer_num, per_env)[:, :-1]
    same = np.all(obs[:, 1:] == obs_next[:, :-1], axis=-1)
    np.testing.assert_array_equal(same, ~done)


class TestPendulumBuffer:
    def test_shapes_dtypes_and_ranges(self) -> None:
        buffer = gather_pendulum_data.load_expert_buffer()
        data = stored(buffer)
        assert len(buffer) == 20000 and isinstance(buffer, VectorReplayBuffer)
        assert data.obs.shape == data.obs_next.shape == (20000, 3)
        assert data.obs.dtype == np.float32
        assert data.act.shape == (20000, 1) and data.act.dtype == np.float32
        # the policy's actions in [-1, 1]; the env got twice that
        assert -1.0 <= data.act.min() < -0.5 and 0.5 < data.act.max() <= 1.0
        assert np.all(np.abs(data.obs[:, :2]) <= 1.0) and np.all(np.abs(data.obs[:, 2]) <= 8.0)
        cos, sin = data.obs[:, 0], data.obs[:, 1]
        np.testing.assert_allclose(cos**2 + sin**2, 1.0, atol=1e-5)
        assert np.all(data.rew <= 0.0) and np.all(data.rew >= -16.3)

    def test_episodes_are_consistent_and_last_200_steps(self) -> None:
        buffer = gather_pendulum_data.load_expert_buffer()
        assert_episodes_are_consistent(buffer)
        data = stored(buffer)
        assert not data.terminated.any()  # Pendulum only ever truncates
        ends = np.flatnonzero(data.truncated)
        assert len(ends) == 100
        np.testing.assert_array_equal(np.diff(np.concatenate([[-1], ends])), 200)

    def test_the_data_is_expert_level(self) -> None:
        returns = episode_returns(gather_pendulum_data.load_expert_buffer())
        assert len(returns) == 100
        assert returns.mean() >= PENDULUM_MIN_RETURN
        assert returns.max() > -50.0  # upright starts are held at almost no cost


class TestCartPoleBuffer:
    def test_shapes_dtypes_and_ranges(self) -> None:
        buffer = gather_cartpole_data.load_expert_buffer()
        data = stored(buffer)
        assert len(buffer) == 20000 and isinstance(buffer, VectorReplayBuffer)
        assert data.obs.shape == data.obs_next.shape == (20000, 4)
        assert data.act.shape == (20000,) and np.issubdtype(data.act.dtype, np.integer)
        assert set(np.unique(data.act)) == {0, 1}
        assert 0.3 < data.act.mean() < 0.7  # both actions, not one all along
        np.testing.assert_array_equal(data.rew, 1.0)
        assert np.all(np.abs(data.obs[:, 0]) <= 2.4 + 0.2)

    def test_episodes_are_consistent(self) -> None:
        buffer = gather_cartpole_data.load_expert_buffer()
        assert_episodes_are_consistent(buffer)
        data = stored(buffer)
        assert not np.any(data.terminated & data.truncated)
        # a failure ends an episode by termination: the pole or the cart is out of bounds
        failed = data.obs_next[data.terminated]
        assert np.all((np.abs(failed[:, 0]) > 2.4) | (np.abs(failed[:, 2]) > 0.2095))

    def test_the_data_is_expert_level(self) -> None:
        buffer = gather_cartpole_data.load_expert_buffer()
        returns = episode_returns(buffer)
        assert len(returns) >= 20
        assert returns.mean() >= CARTPOLE_MIN_RETURN
        truncated = stored(buffer).truncated
        assert truncated.sum() >= len(returns) / 2  # most episodes reach the 500-step limit


@pytest.mark.parametrize("module", GATHER_MODULES, ids=lambda module: module.__name__)
class TestCachedFile:
    def test_a_second_call_loads_without_training(
        self, module: ModuleType, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        first = module.load_expert_buffer()

        def no_training(*args: object) -> None:
            raise AssertionError("the cached buffer should have been loaded")

        monkeypatch.setattr(module, "gather_data", no_training)
        second = module.load_expert_buffer()
        np.testing.assert_array_equal(stored(second).obs, stored(first).obs)
        np.testing.assert_array_equal(stored(second).act, stored(first).act)

    def test_the_published_loading_code_reads_the_file(self, module: ModuleType) -> None:
        module.load_expert_buffer()
        path = module.expert_file_name()
        assert path.endswith(".hdf5") and os.path.dirname(path) == os.path.dirname(
            str(module.__file__)
        )
        buffer = VectorReplayBuffer.load_hdf5(path)
        module.validate(buffer)

    def test_get_args_ignores_unknown_arguments(self, module: ModuleType) -> None:
        args = module.get_args(["--seed", "7", "-q", "--unknown"])
        assert args.seed == 7 and args.buffer_size == 20000
        assert args.save_buffer_name == module.expert_file_name()


# ----- the cache, with a fake gather function -----


def fake_buffer(steps: int = 6) -> VectorReplayBuffer:
    """Two sub-buffers, episodes of 3 steps, rewards 1, 2, 3, ..."""
    buffer = VectorReplayBuffer(8, 2)
    for t in range(steps // 2):
        buffer.add(
            Batch(
                obs=np.array([[t], [t + 10]], dtype=np.float32),
                act=np.array([0, 1]),
                rew=np.array([t + 1.0, t + 11.0]),
                terminated=np.array([t == 2, False]),
                truncated=np.array([False, False]),
                obs_next=np.array([[t + 1], [t + 11]], dtype=np.float32),
                info=Batch(),
            )
        )
    return buffer


def check_fake(buffer: VectorReplayBuffer) -> None:
    check_expert_buffer(buffer, 6, (1,), (), 0, 1)


class FakeGather:
    """Writes :func:`fake_buffer` to ``path``, recording each call in ``path + ".calls"``."""

    def __init__(self, path: str, delay_s: float = 0.0) -> None:
        self.path = path
        self.delay_s = delay_s

    def __call__(self) -> VectorReplayBuffer:
        with open(self.path + ".calls", "a") as calls:
            calls.write(f"{os.getpid()}\n")
        time.sleep(self.delay_s)
        buffer = fake_buffer()
        save_atomically(buffer, self.path)
        return buffer

    def calls(self) -> int:
        if not os.path.exists(self.path + ".calls"):
            return 0
        with open(self.path + ".calls") as calls:
            return len(calls.readlines())


def load_in_process(path: str, queue: "multiprocessing.Queue[list[float]]") -> None:
    buffer = load_or_gather(path, FakeGather(path, delay_s=0.5), check_fake)
    queue.put(buffer.rew[buffer.sample_indices(0)].tolist())


class TestLoadOrGather:
    def test_gathers_once_then_loads(self, tmp_path: Path) -> None:
        gather = FakeGather(str(tmp_path / "expert.hdf5"))
        first = load_or_gather(gather.path, gather, check_fake)
        second = load_or_gather(gather.path, gather, check_fake)
        assert gather.calls() == 1
        assert sorted(second.rew[second.sample_indices(0)]) == [1, 2, 3, 11, 12, 13]
        np.testing.assert_array_equal(stored(first).obs, stored(second).obs)
        assert sorted(os.listdir(tmp_path)) == [
            "expert.hdf5",
            "expert.hdf5.calls",
            "expert.hdf5.lock",
        ]

    @pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
    def test_a_corrupt_file_is_gathered_again(self, tmp_path: Path, damage: str) -> None:
        gather = FakeGather(str(tmp_path / "expert.hdf5"))
        gather()
        content = Path(gather.path).read_bytes()
        damaged = {
            "garbage": b"not an HDF5 file" * 10,
            "truncated": content[: len(content) // 2],
            "empty": b"",
        }[damage]
        Path(gather.path).write_bytes(damaged)
        buffer = load_or_gather(gather.path, gather, check_fake)
        assert gather.calls() == 2 and len(buffer) == 6
        assert Path(gather.path).read_bytes() != damaged

    def test_a_file_that_does_not_validate_is_gathered_again(self, tmp_path: Path) -> None:
        path = str(tmp_path / "expert.hdf5")
        save_atomically(fake_buffer(steps=4), path)  # 4 transitions instead of 6
        gather = FakeGather(path)
        assert len(load_or_gather(path, gather, check_fake)) == 6
        assert gather.calls() == 1

    def test_a_bad_fresh_gather_is_an_error(self, tmp_path: Path) -> None:
        with pytest.raises(ValueError, match="expected 6 transitions, the buffer holds 4"):
            load_or_gather(str(tmp_path / "x.hdf5"), lambda: fake_buffer(steps=4), check_fake)

    def test_concurrent_processes_gather_once(self, tmp_path: Path) -> None:
        path = str(tmp_path / "expert.hdf5")
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        workers = [context.Process(target=load_in_process, args=(path, queue)) for _ in range(2)]
        for worker in workers:
            worker.start()
        results = [queue.get(timeout=30) for _ in workers]
        for worker in workers:
            worker.join(timeout=30)
            assert worker.exitcode == 0
        assert FakeGather(path).calls() == 1
        assert results[0] == results[1] and sorted(results[0]) == [1, 2, 3, 11, 12, 13]


class TestCollectUntilExpert:
    @staticmethod
    def args(path: Path, min_return: float) -> argparse.Namespace:
        return argparse.Namespace(
            seed=3, seed_attempts=3, min_return=min_return, save_buffer_name=str(path)
        )

    def test_later_seeds_are_tried_until_the_data_is_good_enough(self, tmp_path: Path) -> None:
        tried: list[int] = []

        def collect(args: argparse.Namespace) -> VectorReplayBuffer:
            tried.append(args.seed)
            return fake_buffer(steps=6 if args.seed == 4 else 2)  # only seed 4 ends an episode

        args = self.args(tmp_path / "expert.hdf5", 5.0)
        buffer = collect_until_expert(collect, args, "fake")
        assert tried == [3, 4] and len(buffer) == 6 and args.seed == 3
        assert len(VectorReplayBuffer.load_hdf5(args.save_buffer_name)) == 6

    def test_no_good_seed_is_an_error_naming_each_seed(self, tmp_path: Path) -> None:
        args = self.args(tmp_path / "expert.hdf5", 7.0)
        with pytest.raises(RuntimeError, match=r"seed 3's 1 episodes .* seed 5's 1 episodes"):
            collect_until_expert(lambda args: fake_buffer(), args, "fake")
        assert not os.path.exists(args.save_buffer_name)


class TestSaveAtomically:
    def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = str(tmp_path / "expert.hdf5")
        save_atomically(fake_buffer(), path)
        before = Path(path).read_bytes()

        def fail(self: ReplayBuffer, path: str, compression: str | None = None) -> None:
            Path(path).write_bytes(b"partial")
            raise OSError("disk full")

        monkeypatch.setattr(VectorReplayBuffer, "save_hdf5", fail)
        with pytest.raises(OSError, match="disk full"):
            save_atomically(fake_buffer(steps=4), path)
        assert Path(path).read_bytes() == before
        assert os.listdir(tmp_path) == ["expert.hdf5"]


class TestChecks:
    def test_episode_returns_count_complete_episodes_only(self) -> None:
        # sub-buffer 0: one episode 1 + 2 + 3; sub-buffer 1: 11 + 12 + 13, not finished
        np.testing.assert_array_equal(episode_returns(fake_buffer()), [6.0])
        buffer = fake_buffer()
        buffer.add(
            Batch(
                obs=np.array([[5], [13]], dtype=np.float32),
                act=np.array([1, 0]),
                rew=np.array([4.0, 14.0]),
                terminated=np.array([False, False]),
                truncated=np.array([True, True]),
                obs_next=np.array([[6], [14]], dtype=np.float32),
                info=Batch(),
            )
        )
        np.testing.assert_array_equal(sorted(episode_returns(buffer)), [4.0, 6.0, 50.0])

    def test_check_mean_return(self) -> None:
        check_mean_return(fake_buffer(), 6.0, "fake")
        with pytest.raises(RuntimeError, match=r"fake's 1 episodes return 6\.0.*required 6\.5"):
            check_mean_return(fake_buffer(), 6.5, "fake")
        with pytest.raises(RuntimeError, match="0 episodes"):
            check_mean_return(fake_buffer(steps=2), -100.0, "fake")

    @pytest.mark.parametrize(
        ("args", "match"),
        [
            ((7, (1,), (), 0, 1), "expected 7 transitions"),
            ((6, (2,), (), 0, 1), r"obs has shape \(6, 1\), expected \(6, 2\)"),
            ((6, (1,), (1,), 0, 1), r"act has shape \(6,\), expected \(6, 1\)"),
            ((6, (1,), (), 0, 0), r"actions outside \[0, 0\]"),
        ],
    )
    def test_check_expert_buffer_names_the_mismatch(self, args: tuple, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            check_expert_buffer(fake_buffer(), *args)
