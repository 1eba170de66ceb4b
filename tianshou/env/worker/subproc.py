"""The subprocess worker: each environment runs in its own process, driven through a pipe.

Protocol: the parent sends ``(seq, command, payload)`` tuples, numbering its commands 1, 2, ...;
the child answers each with ``(seq, result)``, or with ``(seq, failure)`` (a
:class:`_RemoteFailure` carrying the exception and its traceback) when the environment raised,
which the child survives. Right after start-up the child sends one greeting numbered 0: ``None``,
or the shared-memory layout when observations go through shared memory, or a failure if the
environment could not be built. A child that dies closes its pipe end, so the parent's read
fails at once instead of hanging.

The numbers keep the parent in step after an interrupted call: when ``KeyboardInterrupt`` (or
any exception raised by a signal handler) abandons a command, its reply later arrives with an
old number and is discarded, so it is never taken for the result of a later command. The parent
waits for a reply with ``poll`` before reading it, so an interrupt almost always lands while
nothing has been read; one that cuts a message in half leaves the pipe unusable, and the worker
is then terminated with an error that says so. The child ignores ``SIGINT`` (a terminal's Ctrl-C
reaches the whole process group): the parent decides what an interrupt means.

Step actions and step results, the only per-step traffic, are encoded with
:mod:`~tianshou.env.worker.wire` so that numpy values cross the pipe without numpy's slow pickling.
"""

import contextlib
import multiprocessing
import os
import pickle
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_connections
from multiprocessing.reduction import ForkingPickler
from types import FrameType
from typing import Any, NoReturn, cast

import gymnasium as gym
import numpy as np

from tianshou.env.utils import CloudpickleWrapper, gym_new_venv_step_type
from tianshou.env.worker.shared_obs import (
    ObsViews,
    ShArray,
    create_shared_file,
    make_views,
    map_shared_file,
    plan_layout,
    read_obs,
    write_obs,
)
from tianshou.env.worker.wire import RAW, decode, encode, encode_info
from tianshou.env.worker.worker_base import (
    EnvWorker,
    EnvWorkerError,
    get_env_attr,
    reset_env,
    seed_env,
    set_env_attr,
)

__all__ = ["ShArray", "SubprocEnvWorker"]

_STEP, _RESET, _SEED, _RENDER, _GET_ATTR, _SET_ATTR, _CLOSE = range(7)
_CONTEXTS = (None, "fork", "spawn", "forkserver")
_CLOSE_TIMEOUT_S = 5.0
_CUT_OFF = (
    "a call was interrupted while a message was crossing the pipe to worker process {pid}, "
    "so the pipe is out of step and the worker was terminated; create a new vector env"
)


class _RemoteFailure:
    """Sent by the child in place of a result when the environment raised."""

    __slots__ = ("reason", "traceback", "type_name")

    def __init__(self, exc: BaseException) -> None:
        self.type_name = type(exc).__name__
        self.reason = f"{self.type_name}: {exc}"
        self.traceback = "".join(traceback.format_exception(exc))


def _handle(env: gym.Env, views: "ObsViews | None", command: int, data: Any) -> Any:
    """Run one command against the environment and return the reply to send."""
    if command == _STEP:
        result = env.step(decode(data))
        if not (isinstance(result, tuple | list) and len(result) == 5):
            raise TypeError(
                "env.step() must return (obs, reward, terminated, truncated, info) as in "
                f"gymnasium >= 0.26, got {type(result).__name__}"
            )
        obs, rew, terminated, truncated, info = result
        if views is None:
            encoded_obs = encode(obs)
        else:
            write_obs(views, obs)
            encoded_obs = (RAW, None)
        return encoded_obs, encode(rew), encode(terminated), encode(truncated), encode_info(info)
    if command == _RESET:
        obs, info = reset_env(env, **data)
        if views is None:
            return obs, info
        write_obs(views, obs)
        return None, info
    if command == _SEED:
        return seed_env(env, data)
    if command == _RENDER:
        return env.render(**data)
    if command == _GET_ATTR:
        return get_env_attr(env, data)
    if command == _SET_ATTR:
        return set_env_attr(env, *data)
    raise ValueError(f"unknown worker command {command}")


def _serve(conn: Connection, env: gym.Env, views: "ObsViews | None") -> None:
    """Answer commands until the parent asks to close or goes away."""
    while True:
        seq, command, data = conn.recv()
        if command == _CLOSE:
            try:
                env.close()
            finally:
                conn.send((seq, None))
            return
        try:
            reply = _handle(env, views, command, data)
        except Exception as exc:
            reply = _RemoteFailure(exc)
        try:
            conn.send((seq, reply))
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send((seq, _RemoteFailure(exc)))  # the reply could not be pickled


def _serve_failure(conn: Connection, failure: _RemoteFailure) -> None:
    """The environment could not be built: answer every command with that failure."""
    conn.send((0, failure))
    while True:
        seq, command, _ = conn.recv()
        if command == _CLOSE:
            conn.send((seq, None))
            return
        conn.send((seq, failure))


def _run_child(conn: Connection, env_fn: CloudpickleWrapper, shm_path: str | None) -> None:
    """Build the environment, greet the parent (with the shared-memory layout) and serve it.

    An env without an ``observation_space`` cannot lay out shared memory; its observations then
    go through the pipe even when shared memory was asked for.
    """
    try:
        env = env_fn.data()
        views = None
        greeting = None
        space = getattr(env, "observation_space", None) if shm_path is not None else None
        if space is not None:
            layout, size = plan_layout(space)
            views = make_views(layout, map_shared_file(cast(str, shm_path), size, resize=True))
            greeting = (layout, size)
    except Exception as exc:
        _serve_failure(conn, _RemoteFailure(exc))
        return
    conn.send((0, greeting))
    _serve(conn, env, views)


def _ignore_interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler of the child: the parent handles Ctrl-C and closes its workers."""


def _worker_main(
    conn: Connection,
    parent_end: Connection | None,
    env_fn: CloudpickleWrapper,
    shm_path: str | None,
) -> None:
    """Entry point of the child process."""
    signal.signal(signal.SIGINT, _ignore_interrupt)
    if parent_end is not None:
        parent_end.close()  # a forked child must not keep the parent's end open
    with contextlib.suppress(EOFError, OSError):  # the parent is gone: just exit
        _run_child(conn, env_fn, shm_path)
    # The env is closed: skip interpreter teardown, which takes ~0.5 s in a spawned child that
    # imported torch, and would make close() slow.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class SubprocEnvWorker(EnvWorker):
    """Runs one environment in a subprocess and talks to it through a pipe.

    :param env_fn: a callable that builds the environment; pickled with cloudpickle and called
        in the child, so lambdas and closures work.
    :param share_memory: pass observations through a shared-memory buffer laid out from the
        env's observation space instead of pickling them (worth it for large observations).
    :param context: the multiprocessing start method, ``"fork"``, ``"spawn"`` or
        ``"forkserver"``; None uses the platform default.
    :param step_timeout: the longest a step or reset may take, in seconds. A worker that misses
        it is terminated and the waiting call raises :class:`EnvWorkerError`; every later call
        raises it too. None (the default) waits as long as the environment takes.
    """

    def __init__(
        self,
        env_fn: Callable[[], gym.Env],
        share_memory: bool = False,
        context: str | None = None,
        step_timeout: float | None = None,
    ) -> None:
        if context not in _CONTEXTS:
            raise ValueError(f"context must be one of {_CONTEXTS}, got {context!r}")
        if step_timeout is not None and not step_timeout > 0:
            raise ValueError(f"step_timeout must be positive seconds or None, got {step_timeout}")
        ctx = multiprocessing.get_context(context)
        self.share_memory = share_memory
        self.step_timeout = step_timeout
        self._shm_path = create_shared_file() if share_memory else None
        self._obs_views: ObsViews | None = None
        self._greeting_pending = True
        self._stepping = False  # whether the reply awaited by ``recv`` is a step's or a reset's
        self._seq = 0  # number of the latest command; only its reply is accepted
        self._deadline: float | None = None  # when the running step or reset must be done
        self._broken: str | None = None  # why the pipe can no longer be used, once it can't
        self._close_deadline: float | None = None
        self._conn, child_end = ctx.Pipe()
        self._poller = select.poll()
        self._poller.register(self._conn.fileno(), select.POLLIN)
        parent_end = self._conn if ctx.get_start_method() == "fork" else None
        args = (child_end, parent_end, CloudpickleWrapper(env_fn), self._shm_path)
        process_cls = ctx.Process  # type: ignore[attr-defined]
        self.process = process_cls(target=_worker_main, args=args, daemon=True)
        try:
            self.process.start()
        except BaseException:
            if self._shm_path is not None:
                self._unlink_shared_file()
            raise
        finally:
            child_end.close()
        super().__init__(env_fn)

    def get_env_attr(self, key: str) -> Any:
        self._post(_GET_ATTR, key)
        reply = self._receive_raw()
        if isinstance(reply, _RemoteFailure) and reply.type_name == "AttributeError":
            raise AttributeError(reply.reason.removeprefix("AttributeError: "))
        return self._unwrap(reply)

    def set_env_attr(self, key: str, value: Any) -> None:
        self._post(_SET_ATTR, (key, value))
        self._receive()

    def send(self, action: np.ndarray | None, **kwargs: Any) -> None:
        self._stepping = action is not None
        if action is None:
            self._post(_RESET, kwargs)
        else:
            self._post(_STEP, encode(action))
        if self.step_timeout is not None:
            self._deadline = time.monotonic() + self.step_timeout

    def recv(self) -> gym_new_venv_step_type | tuple[Any, dict]:
        reply = self._receive()
        self._deadline = None
        views = self._obs_views
        if not self._stepping:
            return (reply[0] if views is None else read_obs(views)), reply[1]
        obs, rew, terminated, truncated, info = reply
        return (
            decode(obs) if views is None else read_obs(views),
            decode(rew),
            decode(terminated),
            decode(truncated),
            decode(info),
        )

    @staticmethod
    def wait(
        workers: list[EnvWorker],
        wait_num: int,
        timeout: float | None = None,
    ) -> list[EnvWorker]:
        """Wait as the base class says; a worker past its ``step_timeout`` also counts as ready.

        Its :meth:`recv` then raises the timeout error instead of blocking.
        """
        subproc_workers = cast(list[SubprocEnvWorker], workers)
        by_conn = {w._conn: w for w in subproc_workers}
        pending = list(by_conn)
        ready: list[Any] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        step_deadlines = [w._deadline for w in subproc_workers if w._deadline is not None]
        if step_deadlines:
            first = min(step_deadlines)
            deadline = first if deadline is None else min(deadline, first)
        while pending and len(ready) < wait_num:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            newly_ready = wait_for_connections(pending, timeout=remaining)
            if not newly_ready:
                break  # timed out
            ready.extend(newly_ready)
            pending = [conn for conn in pending if conn not in newly_ready]
        if step_deadlines:
            now = time.monotonic()
            overdue = [c for c in pending if (by_conn[c]._deadline or now) < now]
            ready.extend(overdue)
        return [by_conn[conn] for conn in ready]

    def seed(self, seed: int | None = None) -> Any:
        self._post(_SEED, seed)
        return self._receive()

    def render(self, **kwargs: Any) -> Any:
        self._post(_RENDER, kwargs)
        return self._receive()

    def begin_close(self) -> None:
        if self._close_deadline is not None:
            return
        self._close_deadline = time.monotonic() + _CLOSE_TIMEOUT_S
        if self._broken is None:
            with contextlib.suppress(OSError):  # the child is already gone
                self._conn.send((0, _CLOSE, None))

    def close_env(self) -> None:
        self.begin_close()
        deadline = cast(float, self._close_deadline)
        if self._broken is None:
            self._drain_until_exit(deadline)
        else:  # the child can't be told to close through a pipe that is out of step
            deadline = time.monotonic()
        self._stop_process(deadline)
        self._conn.close()
        self._obs_views = None
        if self._shm_path is not None:
            self._unlink_shared_file()

    def _post(self, command: int, data: Any) -> None:
        """Send a command, after checking that the pipe is usable and the child is up."""
        if self._broken is not None:
            self._fail_broken()
        self._deadline = None
        if self._greeting_pending:
            self._accept_greeting()
        self._seq += 1
        message = ForkingPickler.dumps((self._seq, command, data))
        self._broken = _CUT_OFF  # until the message is written whole
        try:
            self._conn.send_bytes(message)
        except OSError as exc:
            if exc.errno is None:  # raised by the caller's signal handler, not by the pipe
                raise
            self._broken = None
            raise self._death_error() from exc
        self._broken = None

    def _read(self) -> tuple[int, Any]:
        """Wait for the next message (until the step deadline, if any) and unpickle it."""
        if self._deadline is None:
            self._poller.poll()
        elif not self._poller.poll(max(0.0, self._deadline - time.monotonic()) * 1000):
            self._give_up(
                f"its {'step' if self._stepping else 'reset'} did not finish within "
                f"step_timeout={self.step_timeout} s, so worker process {self.process.pid} was "
                "terminated; create a new vector env (or raise step_timeout if the environment "
                "is only slow)"
            )
        self._broken = _CUT_OFF  # until the message is read whole
        try:
            data = self._conn.recv_bytes()
        except EOFError as exc:
            self._broken = None
            raise self._death_error() from exc
        except OSError as exc:
            if exc.errno is None:  # raised by the caller's signal handler, not by the pipe
                raise
            self._broken = None
            raise self._death_error() from exc
        self._broken = None
        return pickle.loads(data)

    def _receive_raw(self) -> Any:
        """The reply to the latest command; replies to abandoned commands are discarded."""
        while True:
            seq, reply = self._read()
            if seq == self._seq:
                return reply

    def _receive(self) -> Any:
        return self._unwrap(self._receive_raw())

    @staticmethod
    def _unwrap(reply: Any) -> Any:
        if type(reply) is _RemoteFailure:
            raise EnvWorkerError(reply.reason, reply.traceback)
        return reply

    def _accept_greeting(self) -> None:
        """Wait for the child to be up; map its shared-memory observations if it made some."""
        greeting = self._receive()
        self._greeting_pending = False
        if self._shm_path is not None:
            if greeting is not None:
                layout, size = greeting
                self._obs_views = make_views(layout, map_shared_file(self._shm_path, size, False))
            self._unlink_shared_file()

    def _unlink_shared_file(self) -> None:
        assert self._shm_path is not None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._shm_path)
        self._shm_path = None

    def _give_up(self, reason: str) -> NoReturn:
        """Terminate the child and make this and every later call raise ``reason``."""
        self._broken = reason
        self._fail_broken()

    def _fail_broken(self) -> NoReturn:
        if self.process.is_alive():
            self._stop_process(time.monotonic())
        raise EnvWorkerError(cast(str, self._broken).format(pid=self.process.pid))

    def _drain_until_exit(self, deadline: float) -> None:
        """Discard pending replies (a step result, the close acknowledgement) until EOF."""
        try:
            while self._conn.poll(max(0.0, deadline - time.monotonic())):
                self._conn.recv_bytes()
        except (EOFError, OSError):
            pass  # the child has exited

    def _stop_process(self, deadline: float) -> None:
        """Let the child exit by itself until ``deadline``, then terminate (and kill) it."""
        self.process.join(timeout=max(0.0, deadline - time.monotonic()))
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout=1.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()

    def _death_error(self) -> EnvWorkerError:
        self.process.join(timeout=1.0)
        code = self.process.exitcode
        pid = self.process.pid
        if code is None:
            reason = f"lost the connection to worker process {pid}, which is still running"
        elif code < 0:
            reason = f"worker process {pid} was killed by signal {signal.Signals(-code).name}"
        else:
            reason = f"worker process {pid} exited unexpectedly with code {code}"
        return EnvWorkerError(reason)
