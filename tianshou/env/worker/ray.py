"""The Ray worker: each environment lives in a Ray actor, locally or anywhere on a cluster.

Ray is imported only when a :class:`RayEnvWorker` is created. Which cluster the actors go to is
decided by ``ray.init`` (``RayVectorEnv`` starts a local instance if none is running; call
``ray.init(address=...)`` first, or set ``RAY_ADDRESS``, to use an existing cluster).
"""

import time
from collections.abc import Callable
from functools import cache
from typing import Any, cast

import gymnasium as gym
import numpy as np

from tianshou.env.utils import gym_new_venv_step_type
from tianshou.env.worker.worker_base import (
    EnvWorker,
    EnvWorkerError,
    get_env_attr,
    reset_env,
    seed_env,
    set_env_attr,
)


class _EnvHost:
    """The actor's body: builds the environment remotely and applies the shared env-side ops."""

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        self.env = env_fn()

    def ping(self) -> None:
        """Answers once the actor is up (its env is built)."""

    def step(self, action: np.ndarray) -> Any:
        return self.env.step(action)

    def reset(self, kwargs: dict[str, Any]) -> Any:
        return reset_env(self.env, **kwargs)

    def seed(self, seed: int | None) -> Any:
        return seed_env(self.env, seed)

    def render(self, kwargs: dict[str, Any]) -> Any:
        return self.env.render(**kwargs)

    def get_env_attr(self, key: str) -> Any:
        return get_env_attr(self.env, key)

    def set_env_attr(self, key: str, value: Any) -> None:
        set_env_attr(self.env, key, value)

    def close(self) -> None:
        self.env.close()


_CLOSE_TIMEOUT_S = 10.0


@cache
def _actor_class() -> Any:
    import ray

    # Envs mostly wait on their own work; reserving no CPU lets many share a small machine.
    return ray.remote(num_cpus=0)(_EnvHost)


class RayEnvWorker(EnvWorker):
    """Runs one environment in a Ray actor.

    :param env_fn: a callable that builds the environment; shipped to the actor and called there.
    :param step_timeout: the longest a step or reset may take, in seconds. An actor that misses
        it is killed and the waiting call raises :class:`EnvWorkerError`; every later call
        raises it too. None (the default) waits as long as the environment takes.
    """

    def __init__(self, env_fn: Callable[[], gym.Env], step_timeout: float | None = None) -> None:
        import ray

        if step_timeout is not None and not step_timeout > 0:
            raise ValueError(f"step_timeout must be positive seconds or None, got {step_timeout}")
        self._ray = ray
        self.step_timeout = step_timeout
        self._deadline: float | None = None  # when the running step or reset must be done
        self._lost: str | None = None  # why the actor was killed, once it was
        self._up = False  # whether the actor is known to have built its env
        self._stepping = False  # whether the running call is a step (else a reset)
        self._closing: tuple[float, Any] | None = None  # close deadline and the actor's reply
        self.actor = _actor_class().remote(env_fn)
        super().__init__(env_fn)

    def get_env_attr(self, key: str) -> Any:
        self._check_alive()
        try:
            return self._ray.get(self.actor.get_env_attr.remote(key))
        except self._ray.exceptions.RayTaskError as err:
            if isinstance(err, AttributeError):
                raise AttributeError(f"the environment has no attribute {key!r}") from err
            raise self._failure(err) from err

    def set_env_attr(self, key: str, value: Any) -> None:
        self._get(self.actor.set_env_attr.remote(key, value))

    def send(self, action: np.ndarray | None, **kwargs: Any) -> None:
        if self.step_timeout is not None and not self._up:
            self._get(self.actor.ping.remote())  # starting the actor doesn't count as a step
            self._up = True
        self._check_alive()
        self._stepping = action is not None
        if action is None:
            self.result = self.actor.reset.remote(kwargs)
        else:
            self.result = self.actor.step.remote(action)
        if self.step_timeout is not None:
            self._deadline = time.monotonic() + self.step_timeout

    def recv(self) -> gym_new_venv_step_type | tuple[Any, dict]:
        deadline, self._deadline = self._deadline, None
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            return self._get(self.result, timeout)
        except self._ray.exceptions.GetTimeoutError:
            self._ray.kill(self.actor)
            self._lost = (
                f"its {'step' if self._stepping else 'reset'} did not finish within "
                f"step_timeout={self.step_timeout} s, so its Ray actor was killed; create a new "
                "vector env (or raise step_timeout if the environment is only slow)"
            )
            raise EnvWorkerError(self._lost) from None

    @staticmethod
    def wait(
        workers: list[EnvWorker],
        wait_num: int,
        timeout: float | None = None,
    ) -> list[EnvWorker]:
        """Wait as the base class says; a worker past its ``step_timeout`` also counts as ready.

        Its :meth:`recv` then raises the timeout error instead of blocking.
        """
        import ray

        ray_workers = cast(list[RayEnvWorker], workers)
        by_ref = {w.result: w for w in ray_workers}
        deadlines = [w._deadline for w in ray_workers if w._deadline is not None]
        if deadlines:
            until_first = max(0.0, min(deadlines) - time.monotonic())
            timeout = until_first if timeout is None else min(timeout, until_first)
        ready, _ = ray.wait(list(by_ref), num_returns=min(wait_num, len(by_ref)), timeout=timeout)
        ready_workers: list[EnvWorker] = [by_ref[ref] for ref in ready]
        now = time.monotonic()
        overdue = [w for w in ray_workers if (w._deadline or now) < now and w not in ready_workers]
        return ready_workers + overdue

    def seed(self, seed: int | None = None) -> Any:
        return self._get(self.actor.seed.remote(seed))

    def render(self, **kwargs: Any) -> Any:
        return self._get(self.actor.render.remote(kwargs))

    def begin_close(self) -> None:
        if self._closing is None:
            self._closing = (time.monotonic() + _CLOSE_TIMEOUT_S, self.actor.close.remote())

    def close_env(self) -> None:
        self.begin_close()
        deadline, closed = cast(tuple[float, Any], self._closing)
        try:
            if self._lost is None:
                self._ray.get(closed, timeout=max(0.0, deadline - time.monotonic()))
        except self._ray.exceptions.RayError:
            pass  # the actor died or hangs; killing it below is all that is left
        finally:
            self._ray.kill(self.actor)

    def _check_alive(self) -> None:
        if self._lost is not None:
            raise EnvWorkerError(self._lost)

    def _get(self, ref: Any, timeout: float | None = None) -> Any:
        self._check_alive()
        try:
            return self._ray.get(ref, timeout=timeout)
        except self._ray.exceptions.GetTimeoutError:
            raise
        except self._ray.exceptions.RayError as err:
            raise self._failure(err) from err

    @staticmethod
    def _failure(err: Exception) -> EnvWorkerError:
        """Turn a Ray error (env exception or dead actor) into an :class:`EnvWorkerError`."""
        cause = getattr(err, "cause", None)
        reason = f"{type(cause).__name__}: {cause}" if cause is not None else type(err).__name__
        return EnvWorkerError(reason, str(err))
