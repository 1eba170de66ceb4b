"""SubprocEnvWorker on its own: protocol, shared memory, waiting, deadlines, shutting down.

The child's side of the protocol is also run in a thread of the test process, where it can be
fed commands one by one (and measured by coverage, which a child that ends with ``os._exit``
is not).
"""

import errno
import glob
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from multiprocessing.connection import Connection
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from test.env.toy_envs import (
    CountEnv,
    DictObsEnv,
    FailingEnv,
    NoSpacesEnv,
    UnpicklableInfoEnv,
    unbuildable_env,
)
from tianshou.env.utils import CloudpickleWrapper
from tianshou.env.worker import EnvWorkerError, SubprocEnvWorker
from tianshou.env.worker import subproc as subproc_module
from tianshou.env.worker.shared_obs import (
    create_shared_file,
    make_views,
    map_shared_file,
    read_obs,
)
from tianshou.env.worker.subproc import ShArray
from tianshou.env.worker.wire import decode, encode


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


def serve_in_thread(env_fn: Callable[[], gym.Env], shm_path: str | None = None) -> Connection:
    """Run the child's side of the protocol in a thread of this process; return the parent end."""
    parent, child = multiprocessing.Pipe()
    args = (child, CloudpickleWrapper(env_fn), shm_path)
    threading.Thread(target=subproc_module._run_child, args=args, daemon=True).start()
    return parent


def test_child_numbers_replies_and_survives_env_errors() -> None:
    conn = serve_in_thread(partial(FailingEnv, size=4))
    assert conn.recv() == (0, None)  # the greeting: no shared memory
    conn.send((1, subproc_module._RESET, {"seed": 0}))
    seq, (obs, info) = conn.recv()
    assert seq == 1 and obs[0] == 0 and info == {"size": 4}
    conn.send((2, subproc_module._STEP, encode(np.int64(FailingEnv.POISON))))
    seq, failure = conn.recv()
    assert seq == 2 and failure.type_name == "ValueError"
    assert "explode_with_a_recognisable_frame" in failure.traceback
    conn.send((3, subproc_module._STEP, encode(np.int64(1))))
    seq, (obs, rew, terminated, truncated, info) = conn.recv()
    assert seq == 3 and decode(obs)[0] == 1 and decode(info) == {"steps": 1}
    assert (decode(rew), decode(terminated), decode(truncated)) == (0.0, False, False)
    for seq, command, data, expected in [
        (4, subproc_module._GET_ATTR, "size", 4),
        (5, subproc_module._SET_ATTR, ("size", 2), None),
        (6, subproc_module._SEED, 9, [9]),
    ]:
        conn.send((seq, command, data))
        assert conn.recv() == (seq, expected)
    conn.send((7, subproc_module._RENDER, {}))
    seq, frame = conn.recv()
    assert seq == 7 and frame.shape == (2, 2, 3)
    conn.send((8, 99, None))
    seq, failure = conn.recv()
    assert seq == 8 and failure.reason == "ValueError: unknown worker command 99"
    conn.send((9, subproc_module._CLOSE, None))
    assert conn.recv() == (9, None)


def test_child_reports_replies_that_cannot_be_pickled() -> None:
    conn = serve_in_thread(UnpicklableInfoEnv)
    conn.recv()
    conn.send((1, subproc_module._RESET, {}))
    conn.recv()
    conn.send((2, subproc_module._STEP, encode(np.int64(1))))
    seq, failure = conn.recv()
    assert seq == 2 and "pickle" in failure.reason.lower()
    conn.send((3, subproc_module._CLOSE, None))
    assert conn.recv() == (3, None)


def test_child_of_an_unbuildable_env_answers_every_command_with_the_failure() -> None:
    conn = serve_in_thread(unbuildable_env)
    seq, failure = conn.recv()
    assert seq == 0 and failure.reason == "RuntimeError: cannot build this toy env"
    conn.send((1, subproc_module._STEP, encode(np.int64(1))))
    assert conn.recv()[1].reason == failure.reason
    conn.send((2, subproc_module._CLOSE, None))
    assert conn.recv() == (2, None)


def test_env_without_observation_space_sends_observations_through_the_pipe() -> None:
    before = shared_files()
    worker = SubprocEnvWorker(NoSpacesEnv, share_memory=True)
    try:
        obs, _ = worker.reset(seed=1)
        obs, *_ = worker.step(np.int64(3))
        assert obs[0] == 3
        assert shared_files() == before
    finally:
        worker.close()


def test_reply_of_an_abandoned_command_is_discarded() -> None:
    worker = SubprocEnvWorker(partial(CountEnv, sleep=0.3))
    try:
        worker.reset(seed=0)
        worker.send(np.int64(1))  # abandoned, as by an interrupt: its reply is never read
        obs, info = worker.reset(seed=0)
        assert obs[0] == 0 and info == {"size": 5}  # the reset's reply, not the step's
        assert worker.step(np.int64(1))[0][0] == 1
    finally:
        worker.close()


def test_wait_hands_back_a_worker_past_its_step_timeout() -> None:
    hung = SubprocEnvWorker(partial(CountEnv, sleep=60.0), step_timeout=0.5)
    try:
        hung.reset()
        hung.send(np.int64(1))
        start = time.monotonic()
        assert SubprocEnvWorker.wait([hung], wait_num=1) == [hung]
        assert 0.4 < time.monotonic() - start < 5
        with pytest.raises(EnvWorkerError, match=r"step did not finish within step_timeout=0.5"):
            hung.recv()
        hung.process.join(5)
        assert not hung.process.is_alive()
    finally:
        hung.close()


def test_step_timeout_validation() -> None:
    with pytest.raises(ValueError, match="step_timeout must be positive seconds or None"):
        SubprocEnvWorker(CountEnv, step_timeout=-1.0)


def _write_in_child(shared: ShArray) -> None:
    shared.save(np.arange(6).reshape(2, 3))


def test_sharray_is_shared_with_a_child_process() -> None:
    ctx = multiprocessing.get_context("fork")
    shared = ShArray(np.int16, (2, 3), ctx)
    shared.save(np.zeros((2, 3)))
    child = ctx.Process(target=_write_in_child, args=(shared,))
    child.start()
    child.join(10)
    np.testing.assert_array_equal(shared.get(), np.arange(6).reshape(2, 3))
    assert shared.get().dtype == np.int16
    with pytest.raises(ValueError, match=r"holds shape \(2, 3\), cannot save shape \(3,\)"):
        shared.save(np.zeros(3))


class _FourTupleEnv(CountEnv):
    """Returns the old gym step API, which workers refuse."""

    def step(self, action: Any) -> Any:
        return super().step(action)[:4]


def test_child_writes_observations_to_shared_memory_and_checks_step_results() -> None:
    path = create_shared_file()
    try:
        conn = serve_in_thread(_FourTupleEnv, shm_path=path)
        seq, (layout, size) = conn.recv()
        views = make_views(layout, map_shared_file(path, size, resize=False))
        conn.send((1, subproc_module._RESET, {"seed": 2}))
        assert conn.recv() == (1, (None, {"size": 5}))  # the observation is in shared memory
        expected, _ = CountEnv().reset(seed=2)
        np.testing.assert_array_equal(read_obs(views), expected)
        conn.send((2, subproc_module._STEP, encode(np.int64(1))))
        seq, failure = conn.recv()
        assert (
            seq == 2 and "must return (obs, reward, terminated, truncated, info)" in failure.reason
        )
        conn.send((3, subproc_module._CLOSE, None))
        assert conn.recv() == (3, None)
    finally:
        os.unlink(path)


class _BrokenConnection:
    """Stands in for a pipe end whose ``method`` raises ``error`` (as an interrupt would)."""

    def __init__(self, conn: Connection, method: str, error: BaseException) -> None:
        self.conn = conn
        self.method = method
        self.error = error

    def __getattr__(self, name: str) -> Any:
        if name == self.method:

            def fail(*args: Any) -> None:
                raise self.error

            return fail
        return getattr(self.conn, name)


@pytest.mark.parametrize(
    ("method", "error"),
    [
        ("recv_bytes", KeyboardInterrupt()),
        ("recv_bytes", TimeoutError("the caller's own")),
        ("send_bytes", TimeoutError("the caller's own")),
    ],
)
def test_message_cut_off_mid_transfer_terminates_the_worker(
    method: str, error: BaseException
) -> None:
    worker = SubprocEnvWorker(CountEnv)
    real_conn = worker._conn
    try:
        worker.reset()
        worker._conn = _BrokenConnection(real_conn, method, error)  # type: ignore[assignment]
        with pytest.raises(type(error)):  # passed on unchanged, not as a lost worker
            worker.step(np.int64(1))
        worker._conn = real_conn
        with pytest.raises(EnvWorkerError, match="out of step and the worker was terminated"):
            worker.reset()
        assert not worker.process.is_alive()
        with pytest.raises(EnvWorkerError, match="create a new vector env"):
            worker.seed(0)
    finally:
        start = time.monotonic()
        worker.close()
        assert time.monotonic() - start < 3


def test_pipe_error_while_the_child_runs_is_a_lost_connection() -> None:
    worker = SubprocEnvWorker(CountEnv)
    real_conn = worker._conn
    try:
        worker.reset()
        worker.send(np.int64(1))
        bad_fd = OSError(errno.EBADF, "Bad file descriptor")
        worker._conn = _BrokenConnection(real_conn, "recv_bytes", bad_fd)  # type: ignore[assignment]
        with pytest.raises(
            EnvWorkerError,
            match=r"lost the connection to worker process \d+, which is still running",
        ):
            worker.recv()
    finally:
        worker._conn = real_conn
        worker.close()


class _ExitingEnv(CountEnv):
    def step(self, action: Any) -> Any:
        os._exit(3)


def test_child_that_exits_is_reported_with_its_exit_code() -> None:
    worker = SubprocEnvWorker(_ExitingEnv)
    try:
        worker.reset()
        with pytest.raises(EnvWorkerError, match="exited unexpectedly with code 3"):
            worker.step(np.int64(1))
    finally:
        worker.close()
