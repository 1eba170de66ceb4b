"""Vector envs under faults: interrupted calls, hung envs, step deadlines, closing hung workers.

Interrupts land at points the tests choose, never after a delay (which a loaded machine may
not honour): while the vector env waits for envs held at a :class:`~test.env.toy_envs.Gate`, a
thread of the test sends a real signal to the main thread, whose handler raises (as Ctrl-C's
does); right after a worker has sent a command or delivered a result, a wrapped worker method
raises. After each, the vector env must either give fresh, correct results or refuse with an
error that says what to do; never a stale result.
"""

import gc
import pickle
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
import pytest

from test.env.conftest import MakeVenv
from test.env.test_venvs import PROCESS_CLASSES, VENV_CLASSES, child_pids
from test.env.toy_envs import CountEnv, Gate, GatedEnv, NoSpacesEnv
from tianshou.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    EnvStateError,
    EnvWorkerError,
    ShmemVectorEnv,
    SubprocVectorEnv,
)
from tianshou.env.worker import EnvWorker
from tianshou.env.worker import subproc as subproc_module


def _ignore(signum: int, frame: object) -> None:
    """Stands in for the test's handler while it is taken down, for a signal sent too late."""


@contextmanager
def interrupt_when(
    condition: Callable[[], bool], exc_type: type[BaseException] = KeyboardInterrupt
) -> Iterator[None]:
    """Raise ``exc_type`` in the main thread as soon as ``condition()`` holds.

    A thread watches ``condition`` and then sends ``SIGUSR1`` to the main thread, whose handler
    raises: a main thread blocked in a system call is woken, as by Ctrl-C.

    The garbage collector is off meanwhile (after one collection): a handler that runs inside a
    finalizer, such as the ``ffi.gc`` callback of an object left by an earlier test, raises
    where Python ignores the exception, and the interrupt would be lost.
    """

    def handler(signum: int, frame: object) -> None:
        raise exc_type("raised by the test's interrupt")

    main_thread = threading.main_thread().ident
    assert main_thread is not None
    done = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + Gate.LIMIT_S
        while not done.is_set() and time.monotonic() < deadline:
            if condition():
                signal.pthread_kill(main_thread, signal.SIGUSR1)
                return
            time.sleep(0.002)

    collecting = gc.isenabled()
    gc.collect()
    gc.disable()
    previous = signal.signal(signal.SIGUSR1, handler)
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.signal(signal.SIGUSR1, _ignore)
        done.set()
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)
        if collecting:
            gc.enable()


@contextmanager
def interrupted_at(
    gate: Gate, condition: Callable[[], bool], exc_type: type[BaseException] = KeyboardInterrupt
) -> Iterator[pytest.ExceptionInfo[BaseException]]:
    """Close ``gate`` so that the envs that reach it hold back their results, expect the body
    to be interrupted once ``condition()`` holds, and open the gate again afterwards."""
    gate.close()
    try:
        with interrupt_when(condition, exc_type), pytest.raises(exc_type) as excinfo:
            yield excinfo
    finally:
        gate.open()


def receiving(monkeypatch: pytest.MonkeyPatch, worker: EnvWorker) -> Callable[[], bool]:
    """A condition that holds once the main thread has started to receive ``worker``'s result.

    With the env held at a closed gate, that is where the main thread then waits, every
    command of the call sent. (An env reaching the gate is too early a sign: the signal could
    then land just after the command was written but before the worker noted it complete,
    which the worker must treat as a message cut off, and terminate its process.)
    """
    started = threading.Event()
    recv = worker.recv

    def announcing_recv() -> Any:
        started.set()
        return recv()

    monkeypatch.setattr(worker, "recv", announcing_recv)
    return started.is_set


def waiting(monkeypatch: pytest.MonkeyPatch, venv: BaseVectorEnv) -> Callable[[], bool]:
    """A condition that holds once asynchronous ``venv`` has started to wait for its envs."""
    started = threading.Event()
    wait = venv.worker_class.wait

    def announcing_wait(
        workers: list[EnvWorker], wait_num: int, timeout: float | None = None
    ) -> list[EnvWorker]:
        started.set()
        return wait(workers, wait_num, timeout)

    announcing = type("Announcing", (venv.worker_class,), {"wait": staticmethod(announcing_wait)})
    monkeypatch.setattr(venv, "worker_class", announcing)
    return started.is_set


def reached(gate: Gate) -> Callable[[], bool]:
    """A condition that holds once an env waits at ``gate``: for in-process envs, the main
    thread is then inside that env's step."""
    return lambda: gate.arrivals() >= 1


@contextmanager
def interrupt_after_first(
    monkeypatch: pytest.MonkeyPatch, workers: Sequence[EnvWorker], method: str
) -> Iterator[None]:
    """The first call of ``method`` on any of ``workers`` does its work, then raises
    ``KeyboardInterrupt``: Ctrl-C landing right after a command was sent or a result received."""
    fired = False

    def then_interrupt(original: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal fired
            result = original(*args, **kwargs)
            if fired:
                return result
            fired = True
            raise KeyboardInterrupt(f"raised by the test after {method}")

        return call

    with monkeypatch.context() as patch:
        for worker in workers:
            patch.setattr(worker, method, then_interrupt(getattr(worker, method)))
        with pytest.raises(KeyboardInterrupt):
            yield


def expected_first_obs(seed: int) -> np.ndarray:
    env = CountEnv()
    obs, _ = env.reset(seed=seed)
    return obs


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_interrupted_step_needs_reset_then_gives_fresh_results(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    venv = make_venv(cls, [partial(GatedEnv, gate.path)] * 2)
    venv.reset(seed=1)
    obs, *_ = venv.step([1, 1])
    np.testing.assert_array_equal(obs[:, 0], [1, 1])
    in_wait = reached(gate) if cls is DummyVectorEnv else receiving(monkeypatch, venv.workers[0])
    with interrupted_at(gate, in_wait):
        venv.step([1, 1])
    with pytest.raises(EnvStateError, match=r"environments \[0, 1\] must be reset.*Keyboard"):
        venv.step([1, 1])  # once a bug: the interrupted step's result came back here
    obs, info = venv.reset(seed=7)  # not a stale step reply (which made reset fail)
    np.testing.assert_array_equal(obs[0], expected_first_obs(7))
    assert [i["env_id"] for i in info] == [0, 1]
    obs, _, _, _, info = venv.step([1, 1])
    np.testing.assert_array_equal(obs[:, 0], [1, 1])
    assert [i["steps"] for i in info] == [1, 1]


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupted_reset_is_retried_cleanly(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    venv = make_venv(cls, [partial(GatedEnv, gate.path, at="reset")] * 2)
    with interrupted_at(gate, receiving(monkeypatch, venv.workers[0])):
        venv.reset(seed=3)
    with pytest.raises(EnvStateError, match="must be reset"):
        venv.step([1, 1])
    obs, _ = venv.reset(seed=3)
    np.testing.assert_array_equal(obs[1], expected_first_obs(3))
    obs, *_ = venv.step([1, 0])
    np.testing.assert_array_equal(obs[:, 0], [1, 0])


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupt_at_each_point_of_a_step(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    """Between two sends, while waiting, and between two received results."""
    venv = make_venv(cls, [partial(GatedEnv, gate.path)] * 3)
    venv.reset(seed=0)
    for point in ("send", "wait", "recv"):
        if point == "wait":
            with interrupted_at(gate, receiving(monkeypatch, venv.workers[0])):
                venv.step([1, 1, 1])
        else:
            with interrupt_after_first(
                monkeypatch, venv.workers[1:2] if point == "send" else venv.workers, point
            ):
                venv.step([1, 1, 1])
        with pytest.raises(EnvStateError, match=r"environments \[0, 1, 2\] must be reset"):
            venv.step([1, 1, 1])
        obs, _ = venv.reset()
        np.testing.assert_array_equal(obs[:, 0], [0, 0, 0])
        obs, _, _, _, info = venv.step([1, 1, 1])
        np.testing.assert_array_equal(obs[:, 0], [1, 1, 1])
        assert [i["steps"] for i in info] == [1, 1, 1]


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_users_timeout_error_is_not_a_lost_worker(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    venv = make_venv(cls, [partial(GatedEnv, gate.path)])
    venv.reset()
    in_wait = receiving(monkeypatch, venv.workers[0])
    with interrupted_at(gate, in_wait, TimeoutError) as excinfo:
        venv.step([1])
    assert excinfo.type is TimeoutError  # the caller's own exception, unchanged
    assert str(excinfo.value) == "raised by the test's interrupt"
    assert not getattr(excinfo.value, "__notes__", None)  # not blamed on an env
    venv.reset()
    obs, *_ = venv.step([1])
    assert obs[0, 0] == 1


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupted_async_wait_keeps_envs_stepping(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    venv = make_venv(cls, [CountEnv, partial(GatedEnv, gate.path)], wait_num=1)
    venv.reset()
    gate.close()
    *_, info = venv.step([1, 1])
    assert [i["env_id"] for i in info] == [0]
    with interrupted_at(gate, waiting(monkeypatch, venv)):
        venv.step(None)  # interrupted while waiting for env 1, whose step goes on
    assert venv.waiting_id == [1] and venv.waiting_conn == [venv.workers[1]]
    obs, *_, info = venv.step(None)
    assert [i["env_id"] for i in info] == [1] and obs[0, 0] == 1
    obs, *_ = venv.step([1, 1])  # env 0 was never affected
    assert obs[0, 0] == 2


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupted_async_step_loses_nothing_silently(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    venv = make_venv(cls, [partial(GatedEnv, gate.path)] * 3, wait_num=2, timeout=1.0)
    venv.reset()
    for point in ("send", "wait", "recv"):
        ids = venv.ready_id
        if point == "wait":
            with interrupted_at(gate, waiting(monkeypatch, venv)):
                venv.step([1] * len(ids), id=ids)
        else:
            workers = venv.workers[1:2] if point == "send" else venv.workers
            with interrupt_after_first(monkeypatch, workers, point):
                venv.step([1] * len(ids), id=ids)
        # an interrupted wait loses nothing; a result received or a command sent just before
        # the interrupt is lost with the call, and so is the step of an env not sent to yet
        if point == "recv":  # whichever env was received first, the other two still step
            assert len(venv.waiting_id) == 2
        else:
            assert venv.waiting_id == {"send": [0], "wait": [0, 1, 2]}[point]
        returned = []
        while venv.waiting_id:
            *_, info = venv.step(None)
            returned += [i["env_id"] for i in info]
        lost = sorted(set(ids) - set(returned))
        assert len(lost) == {"send": 2, "wait": 0, "recv": 1}[point]
        if lost:
            with pytest.raises(
                EnvStateError, match=re.escape(f"environments {lost} must be reset")
            ):
                venv.step([1] * len(lost), id=lost)
        obs, _ = venv.reset()  # whatever was lost, a reset gives a clean start
        np.testing.assert_array_equal(obs[:, 0], [0, 0, 0])
        seen: dict[int, int] = {}
        while len(seen) < 3:
            ids = [j for j in venv.ready_id if j not in seen]
            *_, info = venv.step([1] * len(ids), id=ids) if ids else venv.step(None)
            seen.update((i["env_id"], i["steps"]) for i in info)
        assert seen == {0: 1, 1: 1, 2: 1}


def test_step_refuses_envs_whose_results_were_lost_only(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, gate: Gate
) -> None:
    venv = make_venv(SubprocVectorEnv, [CountEnv, partial(GatedEnv, gate.path), CountEnv])
    venv.reset()
    with interrupted_at(gate, receiving(monkeypatch, venv.workers[1])):
        venv.step([1, 1], id=[0, 1])
    obs, *_ = venv.step([1], id=[2])  # env 2 took no part in the interrupted call
    assert obs[0, 0] == 1
    with pytest.raises(EnvStateError, match=r"environments \[0, 1\].*reset\(env_id=\[0, 1\]\)"):
        venv.step([1, 1, 1])
    venv.reset(env_id=[0, 1])
    obs, *_ = venv.step([1, 1, 1])
    np.testing.assert_array_equal(obs[:, 0], [1, 1, 2])


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_step_timeout_terminates_a_hung_env(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, partial(CountEnv, sleep=60.0)], step_timeout=1.0)
    venv.reset()
    hung = venv.workers[1].process  # type: ignore[attr-defined]
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match=r"environment 1 .*step did not finish") as excinfo:
        venv.step([1, 1])
    assert time.monotonic() - start < 8
    assert excinfo.value.env_id == 1 and "step_timeout=1.0 s" in str(excinfo.value)
    hung.join(5)
    assert not hung.is_alive()
    with pytest.raises(EnvWorkerError, match=r"environment 1 .*step_timeout=1.0 s"):
        venv.reset(env_id=1)  # the env is gone for good, and says why
    obs, _ = venv.reset(env_id=0)
    obs, *_ = venv.step([1], id=[0])
    assert obs[0, 0] == 1


def test_step_timeout_covers_reset_but_not_start_up(make_venv: MakeVenv) -> None:
    slow_start = partial(CountEnv, reset_sleep=60.0)
    venv = make_venv(SubprocVectorEnv, [slow_start], step_timeout=1.0, context="spawn")
    start = time.monotonic()  # the spawned child takes a while to start: that isn't counted
    with pytest.raises(EnvWorkerError, match=r"environment 0 .*its reset did not finish"):
        venv.reset()
    assert time.monotonic() - start < 30


def test_step_timeout_in_async_mode(make_venv: MakeVenv) -> None:
    venv = make_venv(
        SubprocVectorEnv, [CountEnv, partial(CountEnv, sleep=60.0)], wait_num=1, step_timeout=1.0
    )
    venv.reset()
    *_, info = venv.step([1, 1])
    assert [i["env_id"] for i in info] == [0]
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match=r"environment 1 .*step_timeout=1.0 s"):
        while time.monotonic() - start < 10:
            venv.step([1], id=[0])
    assert time.monotonic() - start < 8
    assert 1 not in venv.waiting_id
    if venv.waiting_id:  # env 0 may still have been stepping when env 1 failed
        venv.step(None)
    venv.reset(env_id=0)
    obs, *_ = venv.step([1], id=[0])
    assert obs[0, 0] == 1


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_timeout_bounds_every_call_while_an_env_hangs(
    make_venv: MakeVenv, gate: Gate, cls: type
) -> None:
    venv = make_venv(cls, [CountEnv, CountEnv, partial(GatedEnv, gate.path)], timeout=0.2)
    venv.reset()
    gate.close()
    for _ in range(3):
        ids = venv.ready_id
        start = time.monotonic()
        *_, info = venv.step([1] * len(ids), id=ids)
        took = time.monotonic() - start
        assert sorted(i["env_id"] for i in info) == [0, 1]
        assert venv.waiting_id == [2]
        # fewer than wait_num (all three) envs only once the timeout has passed, and no later
        assert 0.2 <= took < 2.0
    gate.open()
    obs, *_, info = venv.step(None)
    assert [i["env_id"] for i in info] == [2] and obs[0, 0] == 1


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_close_ends_hung_workers_in_parallel(
    monkeypatch: pytest.MonkeyPatch, gate: Gate, cls: type
) -> None:
    monkeypatch.setattr(subproc_module, "_CLOSE_TIMEOUT_S", 1.0)
    before = child_pids()
    venv = cls([partial(GatedEnv, gate.path)] * 6)
    venv.reset()
    gate.close()  # and left closed: the envs hang until they are terminated
    in_wait = receiving(monkeypatch, venv.workers[0])
    with interrupt_when(in_wait), pytest.raises(KeyboardInterrupt):
        venv.step([1] * 6)  # all six are now stuck in their step
    start = time.monotonic()
    venv.close()
    assert time.monotonic() - start < 3.5  # one after another: 6 s
    assert child_pids() <= before


@pytest.mark.parametrize("cls", [*VENV_CLASSES])
def test_envs_without_spaces_step_fine(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [NoSpacesEnv, NoSpacesEnv])
    venv.seed(5)
    obs, _ = venv.reset(seed=2)
    np.testing.assert_array_equal(obs[:, 0], [0, 0])
    obs, *_ = venv.step([1, 2])
    np.testing.assert_array_equal(obs[:, 0], [1, 2])
    with pytest.raises(AttributeError):
        venv.action_space  # noqa: B018 (asking for it is what fails)


def test_step_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="step_timeout must be positive"):
        ShmemVectorEnv([CountEnv], step_timeout=0)


def test_dummy_env_exception_marks_the_call_for_reset(make_venv: MakeVenv, gate: Gate) -> None:
    venv = make_venv(DummyVectorEnv, [CountEnv, partial(GatedEnv, gate.path)])
    venv.reset()
    with interrupted_at(gate, reached(gate)):
        venv.step([1, 1])
    with pytest.raises(EnvStateError, match="KeyboardInterrupt"):
        venv.step([1, 1])


def test_send_to_a_dead_worker_in_async_mode_names_the_env(make_venv: MakeVenv) -> None:
    venv = make_venv(SubprocVectorEnv, [CountEnv, CountEnv], wait_num=1)
    venv.reset()
    victim = venv.workers[0].process  # type: ignore[attr-defined]
    victim.kill()
    victim.join(5)
    with pytest.raises(EnvWorkerError, match="environment 0"):
        venv.step([1], id=[0])
    assert venv.waiting_conn == []
    *_, info = venv.step([1], id=[1])
    assert [i["env_id"] for i in info] == [1]


def test_old_step_api_is_refused_in_process(make_venv: MakeVenv) -> None:
    class FourTupleEnv(CountEnv):
        def step(self, action: object) -> tuple:  # type: ignore[override]
            return super().step(action)[:4]

    venv = make_venv(DummyVectorEnv, [FourTupleEnv])
    venv.reset()
    with pytest.raises(TypeError, match=r"gymnasium >= 0\.26"):
        venv.step([1])


def test_worker_fn_must_build_env_workers() -> None:
    with pytest.raises(TypeError, match="worker_fn must build EnvWorker instances"):
        BaseVectorEnv([CountEnv], lambda env_fn: env_fn())  # type: ignore[arg-type,return-value]


def test_pickled_async_dummy_venv_keeps_stepping() -> None:
    venv = DummyVectorEnv([CountEnv, CountEnv], wait_num=1)
    venv.reset()
    venv.step([1, 1])
    restored = pickle.loads(pickle.dumps(venv))
    obs, *_, info = restored.step([1, 1])
    np.testing.assert_array_equal(obs[:, 0], [2, 2])
    assert [i["env_id"] for i in info] == [0, 1]
