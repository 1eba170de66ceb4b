"""The subprocess worker: each environment runs in its own process, driven through a pipe.

Protocol: the parent sends ``(command, payload)`` tuples; the child answers each with the result,
or with a :class:`_RemoteFailure` carrying the exception and its traceback when the environment
raised (the child survives that and keeps serving). Right after start-up the child sends one
greeting: ``None``, or the shared-memory layout when observations go through shared memory, or
a failure if the environment could not be built. A child that dies closes its pipe end, so the
parent's read fails at once instead of hanging.

Step actions and step results, the only per-step traffic, are encoded with
:mod:`~tianshou.env.worker.wire` so that numpy values cross the pipe without numpy's slow pickling.
"""

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for_connections
from typing import Any, cast

import gymnasium as gym
import numpy as np

from tianshou.env.utils import CloudpickleWrapper, gym_new_venv_step_type
from tianshou.env.worker.shared_obs import (
    ObsViews,
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

_STEP, _RESET, _SEED, _RENDER, _GET_ATTR, _SET_ATTR, _CLOSE = range(7)
_CONTEXTS = (None, "fork", "spawn", "forkserver")
_CLOSE_TIMEOUT_S = 5.0


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
        command, data = conn.recv()
        if command == _CLOSE:
            try:
                env.close()
            finally:
                conn.send(None)
            return
        try:
            reply = _handle(env, views, command, data)
        except Exception as exc:
            reply = _RemoteFailure(exc)
        try:
            conn.send(reply)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            conn.send(_RemoteFailure(exc))  # the reply could not be pickled


def _serve_failure(conn: Connection, failure: _RemoteFailure) -> None:
    """The environment could not be built: answer every command with that failure."""
    conn.send(failure)
    while conn.recv()[0] != _CLOSE:
        conn.send(failure)
    conn.send(None)


def _worker_main(
    conn: Connection,
    parent_end: Connection | None,
    env_fn: CloudpickleWrapper,
    shm_path: str | None,
) -> None:
    """Entry point of the child process."""
    if parent_end is not None:
        parent_end.close()  # a forked child must not keep the parent's end open
    try:
        try:
            env = env_fn.data()
            views = None
            greeting = None
            if shm_path is not None:
                layout, size = plan_layout(env.observation_space)
                views = make_views(layout, map_shared_file(shm_path, size, resize=True))
                greeting = (layout, size)
        except Exception as exc:
            _serve_failure(conn, _RemoteFailure(exc))
            return
        conn.send(greeting)
        _serve(conn, env, views)
    except (EOFError, OSError, KeyboardInterrupt):
        pass  # the parent is gone or interrupted: just exit
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
    """

    def __init__(
        self,
        env_fn: Callable[[], gym.Env],
        share_memory: bool = False,
        context: str | None = None,
    ) -> None:
        if context not in _CONTEXTS:
            raise ValueError(f"context must be one of {_CONTEXTS}, got {context!r}")
        ctx = multiprocessing.get_context(context)
        self.share_memory = share_memory
        self._shm_path = create_shared_file() if share_memory else None
        self._obs_views: ObsViews | None = None
        self._greeting_pending = True
        self._stepping = False  # whether the reply awaited by ``recv`` is a step's or a reset's
        self._conn, child_end = ctx.Pipe()
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

    def recv(self) -> gym_new_venv_step_type | tuple[Any, dict]:
        reply = self._receive()
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
        by_conn = {cast(SubprocEnvWorker, w)._conn: w for w in workers}
        pending = list(by_conn)
        ready: list[Any] = []
        deadline = None if timeout is None else time.monotonic() + timeout
        while pending and len(ready) < wait_num:
            remaining = None
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
            newly_ready = wait_for_connections(pending, timeout=remaining)
            ready.extend(newly_ready)
            pending = [conn for conn in pending if conn not in newly_ready]
        return [by_conn[conn] for conn in ready]

    def seed(self, seed: int | None = None) -> Any:
        self._post(_SEED, seed)
        return self._receive()

    def render(self, **kwargs: Any) -> Any:
        self._post(_RENDER, kwargs)
        return self._receive()

    def close_env(self) -> None:
        deadline = time.monotonic() + _CLOSE_TIMEOUT_S
        try:
            self._conn.send((_CLOSE, None))
            self._drain_until_exit(deadline)
        except OSError:
            pass  # the child is already gone
        self._stop_process(deadline)
        self._conn.close()
        self._obs_views = None
        if self._shm_path is not None:
            self._unlink_shared_file()

    def _post(self, command: int, data: Any) -> None:
        if self._greeting_pending:
            self._accept_greeting()
        try:
            self._conn.send((command, data))
        except OSError as exc:
            raise self._death_error() from exc

    def _receive_raw(self) -> Any:
        try:
            return self._conn.recv()
        except (EOFError, OSError) as exc:
            raise self._death_error() from exc

    def _receive(self) -> Any:
        return self._unwrap(self._receive_raw())

    @staticmethod
    def _unwrap(reply: Any) -> Any:
        if type(reply) is _RemoteFailure:
            raise EnvWorkerError(reply.reason, reply.traceback)
        return reply

    def _accept_greeting(self) -> None:
        """Wait for the child to be up; map its shared-memory observations if it made some."""
        self._greeting_pending = False
        greeting = self._receive()
        if greeting is not None and self._shm_path is not None:
            layout, size = greeting
            self._obs_views = make_views(layout, map_shared_file(self._shm_path, size, False))
            self._unlink_shared_file()

    def _unlink_shared_file(self) -> None:
        assert self._shm_path is not None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._shm_path)
        self._shm_path = None

    def _drain_until_exit(self, deadline: float) -> None:
        """Discard pending replies (a step result, the close acknowledgement) until EOF."""
        try:
            while self._conn.poll(max(0.0, deadline - time.monotonic())):
                self._conn.recv()
        except EOFError:
            pass

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
