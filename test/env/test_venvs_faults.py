"""Vector envs under faults: interrupted calls, hung envs, step deadlines, closing hung workers.

Interrupts are real: a ``SIGALRM`` whose handler raises (as Ctrl-C's handler does) while the
main thread waits for a slow env, or ``_thread.interrupt_main`` from a timer thread, which lands
whenever the main thread next runs Python code. After each, the vector env must either give
fresh, correct results or refuse with an error that says what to do; never a stale result.
"""

import _thread
import pickle
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial

import numpy as np
import pytest

from test.env.conftest import MakeVenv
from test.env.test_venvs import PROCESS_CLASSES, VENV_CLASSES, child_pids
from test.env.toy_envs import CountEnv, NoSpacesEnv
from tianshou.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    EnvStateError,
    EnvWorkerError,
    ShmemVectorEnv,
    SubprocVectorEnv,
)
from tianshou.env.worker import subproc as subproc_module

SLOW = 0.6  # seconds a slow env spends in each step; interrupts come well before that


@contextmanager
def raise_after(
    seconds: float, exc_type: type[BaseException] = KeyboardInterrupt
) -> Iterator[None]:
    """Raise ``exc_type`` in the main thread after ``seconds``, from a SIGALRM handler."""

    def handler(signum: int, frame: object) -> None:
        raise exc_type("raised by the test's alarm")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def linger() -> None:
    """Give a pending ``interrupt_main`` time to land (it does not wake a sleeping thread)."""
    for _ in range(500):
        time.sleep(0.01)


def expected_first_obs(seed: int) -> np.ndarray:
    env = CountEnv()
    obs, _ = env.reset(seed=seed)
    return obs


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_interrupted_step_needs_reset_then_gives_fresh_results(
    make_venv: MakeVenv, cls: type
) -> None:
    venv = make_venv(cls, [partial(CountEnv, size=50, sleep=SLOW)] * 2)
    venv.reset(seed=1)
    obs, *_ = venv.step([1, 1])
    np.testing.assert_array_equal(obs[:, 0], [1, 1])
    with raise_after(0.2), pytest.raises(KeyboardInterrupt):
        venv.step([1, 1])
    with pytest.raises(EnvStateError, match=r"environments \[0, 1\] must be reset.*Keyboard"):
        venv.step([1, 1])  # today's bug: the previous step's result came back here
    obs, info = venv.reset(seed=7)  # not a stale step reply (which made reset fail)
    np.testing.assert_array_equal(obs[0], expected_first_obs(7))
    assert [i["env_id"] for i in info] == [0, 1]
    obs, _, _, _, info = venv.step([1, 1])
    np.testing.assert_array_equal(obs[:, 0], [1, 1])
    assert [i["steps"] for i in info] == [1, 1]


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupted_reset_is_retried_cleanly(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [partial(CountEnv, reset_sleep=SLOW)] * 2)
    with raise_after(0.2), pytest.raises(KeyboardInterrupt):
        venv.reset(seed=3)
    with pytest.raises(EnvStateError, match="must be reset"):
        venv.step([1, 1])
    obs, _ = venv.reset(seed=3)
    np.testing.assert_array_equal(obs[1], expected_first_obs(3))
    obs, *_ = venv.step([1, 0])
    np.testing.assert_array_equal(obs[:, 0], [1, 0])


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupt_main_from_a_thread(make_venv: MakeVenv, cls: type) -> None:
    """``interrupt_main`` lands after the wait, right when the replies are being collected."""
    venv = make_venv(cls, [partial(CountEnv, size=50, sleep=0.2)] * 3)
    venv.reset(seed=0)
    for delay in (0.05, 0.15, 0.25):
        timer = threading.Timer(delay, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            venv.step([1, 1, 1])
            linger()  # in case the interrupt comes after the step: it must land in here
        timer.join()
        obs, _ = venv.reset()
        np.testing.assert_array_equal(obs[:, 0], [0, 0, 0])
        obs, _, _, _, info = venv.step([1, 1, 1])
        np.testing.assert_array_equal(obs[:, 0], [1, 1, 1])
        assert [i["steps"] for i in info] == [1, 1, 1]


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_users_timeout_error_is_not_a_lost_worker(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [partial(CountEnv, sleep=SLOW)])
    venv.reset()
    with raise_after(0.2, TimeoutError), pytest.raises(TimeoutError) as excinfo:
        venv.step([1])
    assert excinfo.type is TimeoutError  # the caller's own exception, unchanged
    assert str(excinfo.value) == "raised by the test's alarm"
    assert not getattr(excinfo.value, "__notes__", None)  # not blamed on an env
    venv.reset()
    obs, *_ = venv.step([1])
    assert obs[0, 0] == 1


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupted_async_wait_keeps_envs_stepping(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, partial(CountEnv, sleep=SLOW)], wait_num=1)
    venv.reset()
    *_, info = venv.step([1, 1])
    assert [i["env_id"] for i in info] == [0]
    with raise_after(0.1), pytest.raises(KeyboardInterrupt):
        venv.step(None)  # interrupted while waiting for env 1, whose step goes on
    assert venv.waiting_id == [1] and venv.waiting_conn == [venv.workers[1]]
    obs, *_, info = venv.step(None)
    assert [i["env_id"] for i in info] == [1] and obs[0, 0] == 1
    obs, *_ = venv.step([1, 1])  # env 0 was never affected
    assert obs[0, 0] == 2


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_interrupted_async_step_loses_nothing_silently(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [partial(CountEnv, size=50, sleep=0.1)] * 3, wait_num=2, timeout=1.0)
    venv.reset()
    for delay in (0.02, 0.12, 0.2):
        timer = threading.Timer(delay, _thread.interrupt_main)
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            venv.step([1] * len(venv.ready_id), id=venv.ready_id)
            linger()
        timer.join()
        while venv.waiting_id:
            venv.step(None)
        obs, _ = venv.reset()  # whatever was lost, a reset gives a clean start
        np.testing.assert_array_equal(obs[:, 0], [0, 0, 0])
        seen: dict[int, int] = {}
        while len(seen) < 3:
            ids = [j for j in venv.ready_id if j not in seen]
            *_, info = venv.step([1] * len(ids), id=ids) if ids else venv.step(None)
            seen.update((i["env_id"], i["steps"]) for i in info)
        assert seen == {0: 1, 1: 1, 2: 1}


def test_step_refuses_envs_whose_results_were_lost_only(make_venv: MakeVenv) -> None:
    venv = make_venv(SubprocVectorEnv, [CountEnv, partial(CountEnv, sleep=SLOW), CountEnv])
    venv.reset()
    with raise_after(0.2), pytest.raises(KeyboardInterrupt):
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
def test_timeout_does_not_wait_again_for_a_hung_env(
    monkeypatch: pytest.MonkeyPatch, make_venv: MakeVenv, cls: type
) -> None:
    monkeypatch.setattr(subproc_module, "_CLOSE_TIMEOUT_S", 0.5)  # the hung env delays close
    venv = make_venv(cls, [CountEnv, CountEnv, partial(CountEnv, sleep=60.0)], timeout=0.2)
    venv.reset()
    *_, info = venv.step([1, 1, 1])
    assert sorted(i["env_id"] for i in info) == [0, 1]
    start = time.monotonic()
    for _ in range(40):
        ids = venv.ready_id
        *_, info = venv.step([0] * len(ids), id=ids)
        assert {i["env_id"] for i in info} <= {0, 1}
    # 40 calls that each waited the full timeout for env 2 took 8 s
    assert time.monotonic() - start < 4
    assert venv.waiting_id == [2]


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_close_ends_hung_workers_in_parallel(monkeypatch: pytest.MonkeyPatch, cls: type) -> None:
    monkeypatch.setattr(subproc_module, "_CLOSE_TIMEOUT_S", 1.0)
    before = child_pids()
    venv = cls([partial(CountEnv, sleep=60.0)] * 6)
    venv.reset()
    with raise_after(0.3), pytest.raises(KeyboardInterrupt):
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


def test_dummy_env_exception_marks_the_call_for_reset(make_venv: MakeVenv) -> None:
    venv = make_venv(DummyVectorEnv, [CountEnv, partial(CountEnv, sleep=SLOW)])
    venv.reset()
    with raise_after(0.2), pytest.raises(KeyboardInterrupt):
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
