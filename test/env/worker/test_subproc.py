"""SubprocEnvWorker on its own: protocol, shared memory, waiting, and shutting down."""

import glob
import os
import time
from functools import partial

import numpy as np
import pytest

from test.env.toy_envs import CountEnv, DictObsEnv
from tianshou.env.worker import EnvWorkerError, SubprocEnvWorker
from tianshou.env.worker import subproc as subproc_module


def shared_files() -> set[str]:
    """Shared-memory files created by this process (other test processes may run alongside)."""
    return set(glob.glob(f"/dev/shm/tianshou-obs-{os.getpid()}-*"))


@pytest.mark.parametrize("share_memory", [False, True])
def test_step_reset_seed_roundtrip(share_memory: bool) -> None:
    worker = SubprocEnvWorker(partial(CountEnv, size=2), share_memory=share_memory)
    try:
        assert worker.seed(7) == [7]
        obs, info = worker.reset()
        reference = CountEnv(size=2)
        reference.reset(seed=7)
        np.testing.assert_array_equal(obs, reference.reset()[0])
        assert info == {"size": 2}
        obs, rew, terminated, truncated, info = worker.step(np.int64(1))
        assert obs[0] == 1 and rew == 0.0 and not terminated and not truncated
        assert info == {"steps": 1}
        assert worker.get_env_attr("size") == 2
        worker.set_env_attr("size", 1)
        assert worker.get_env_attr("size") == 1
        with pytest.raises(AttributeError, match="missing"):
            worker.get_env_attr("missing")
        assert worker.render()[0, 0, 0] == 1
    finally:
        worker.close()
    assert not worker.process.is_alive()


def test_shared_memory_observations_are_private_copies() -> None:
    before = shared_files()
    worker = SubprocEnvWorker(CountEnv, share_memory=True)
    try:
        first, _ = worker.reset(seed=0)
        second, *_ = worker.step(1)
        assert first[0] == 0 and second[0] == 1  # the first read was not overwritten in place
        assert shared_files() == before  # the file was unlinked once both sides mapped it
    finally:
        worker.close()


def test_shared_memory_nested_observations() -> None:
    worker = SubprocEnvWorker(DictObsEnv, share_memory=True)
    reference = DictObsEnv()
    try:
        obs, _ = worker.reset(seed=3)
        expected, _ = reference.reset(seed=3)
        assert obs.keys() == expected.keys()
        np.testing.assert_array_equal(obs["index"], expected["index"])
        pair, expected_pair = obs["nested"]["pair"], expected["nested"]["pair"]
        assert isinstance(pair, tuple) and pair[0] == expected_pair[0]
        np.testing.assert_array_equal(pair[1], expected_pair[1])
        assert obs["nested"]["rand"].dtype == np.float32
    finally:
        worker.close()


def test_shared_memory_rejects_observation_that_does_not_match_space() -> None:
    class LyingEnv(CountEnv):
        def _obs(self) -> np.ndarray:
            return np.zeros(3)  # the space says (2,)

    worker = SubprocEnvWorker(LyingEnv, share_memory=True)
    try:
        with pytest.raises(EnvWorkerError, match=r"shape \(3,\).*declares \(2,\)"):
            worker.reset()
    finally:
        worker.close()


def test_wait_returns_ready_workers_and_respects_timeout() -> None:
    fast = SubprocEnvWorker(CountEnv)
    slow = SubprocEnvWorker(partial(CountEnv, sleep=0.5))
    try:
        for worker in (fast, slow):
            worker.reset()
            worker.send(np.int64(1))
        start = time.monotonic()
        ready = SubprocEnvWorker.wait([fast, slow], wait_num=2, timeout=0.2)
        assert ready == [fast]
        assert 0.15 < time.monotonic() - start < 0.45
        fast.recv()
        assert SubprocEnvWorker.wait([slow], wait_num=1) == [slow]
        assert slow.recv()[0][0] == 1
    finally:
        fast.close()
        slow.close()


def test_close_with_a_pending_step_and_twice() -> None:
    worker = SubprocEnvWorker(partial(CountEnv, sleep=0.2))
    worker.reset()
    worker.send(np.int64(1))  # never received
    worker.close()
    worker.close()
    assert not worker.process.is_alive()


def test_close_terminates_a_hung_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(subproc_module, "_CLOSE_TIMEOUT_S", 0.2)
    worker = SubprocEnvWorker(partial(CountEnv, sleep=60.0))
    worker.reset()
    worker.send(np.int64(1))
    start = time.monotonic()
    worker.close()
    assert time.monotonic() - start < 3
    assert not worker.process.is_alive()


def test_unused_shared_file_is_removed_on_close() -> None:
    before = shared_files()
    worker = SubprocEnvWorker(CountEnv, share_memory=True)
    worker.close()  # closed before any command, so the parent never mapped the file
    assert shared_files() == before
