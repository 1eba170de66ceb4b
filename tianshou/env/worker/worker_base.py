"""The worker interface a vector env drives, plus the env-side operations every backend shares.

A worker owns one environment, wherever it lives (this process, a subprocess, a Ray actor).
The vector env talks to workers only through :class:`EnvWorker`, so that stepping can be split
into ``send`` (start) and ``recv`` (collect) and many envs can run at once.

The env-side helpers (:func:`reset_env`, :func:`seed_env`, ...) run next to the environment in
every backend, which is what makes the same seeded envs produce identical data in all of them.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from tianshou.env.utils import gym_new_venv_step_type


class EnvWorkerError(RuntimeError):
    """An environment failed inside its worker: it raised, or its process or actor died.

    :param reason: one line saying what happened (exception type and message, or exit code).
    :param remote_traceback: the traceback text captured where the environment runs.
    :param env_id: index of the environment in its vector env, when known; the vector env
        fills it in before the error reaches the user.
    """

    def __init__(self, reason: str, remote_traceback: str = "", env_id: int | None = None) -> None:
        self.reason = reason
        self.remote_traceback = remote_traceback
        self.env_id = env_id
        where = "an environment" if env_id is None else f"environment {env_id}"
        text = f"{where} failed in its worker: {reason}"
        if remote_traceback:
            text += f"\n\nTraceback in the worker:\n{remote_traceback.rstrip()}"
        super().__init__(text)

    def for_env(self, env_id: int) -> "EnvWorkerError":
        """The same failure, labelled with the index of the environment that caused it."""
        labelled = EnvWorkerError(self.reason, self.remote_traceback, env_id)
        labelled.__cause__ = self.__cause__
        return labelled


class EnvWorker(ABC):
    """Drives one environment for a vector env.

    Stepping is split in two so that a vector env can start all its envs before waiting for
    any: :meth:`send` starts a step (or a reset, when the action is ``None``) and :meth:`recv`
    returns its result. :meth:`wait` tells which of several started workers have finished.

    :param env_fn: a callable that builds the environment (called where the env will live). The
        worker does not keep it: the factory is often a lambda, and an in-process worker is
        then still picklable with its env (checkpoints of a whole training state rely on this).
    """

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        del env_fn  # used by subclasses only; see the class docstring
        self.is_closed = False
        self.result: Any = None

    @abstractmethod
    def get_env_attr(self, key: str) -> Any:
        """Read attribute ``key`` of the environment (searching through its wrappers)."""

    @abstractmethod
    def set_env_attr(self, key: str, value: Any) -> None:
        """Set attribute ``key`` on the innermost (unwrapped) environment."""

    @abstractmethod
    def send(self, action: np.ndarray | None, **kwargs: Any) -> None:
        """Start a step with ``action``, or a reset with ``kwargs`` when ``action`` is None."""

    @abstractmethod
    def recv(self) -> gym_new_venv_step_type | tuple[Any, dict]:
        """Return the result of the last :meth:`send`: a step 5-tuple or a reset pair."""

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        """Reset the environment and return ``(obs, info)``."""
        self.send(None, **kwargs)
        return self.recv()  # type: ignore[return-value]

    def step(self, action: np.ndarray) -> gym_new_venv_step_type:
        """Step the environment synchronously and return ``(obs, rew, term, trunc, info)``."""
        self.send(action)
        return self.recv()  # type: ignore[return-value]

    @staticmethod
    @abstractmethod
    def wait(
        workers: list["EnvWorker"],
        wait_num: int,
        timeout: float | None = None,
    ) -> list["EnvWorker"]:
        """Block until ``wait_num`` of ``workers`` have a result or ``timeout`` seconds pass.

        Returns the workers whose result is ready (possibly fewer than ``wait_num`` on timeout).
        """

    @abstractmethod
    def seed(self, seed: int | None = None) -> Any:
        """Seed the environment and its action-space sampler."""

    @abstractmethod
    def render(self, **kwargs: Any) -> Any:
        """Render the environment."""

    @abstractmethod
    def close_env(self) -> None:
        """Release the environment and whatever the backend holds for it."""

    def begin_close(self) -> None:  # noqa: B027 (a hook most backends need not override)
        """Ask the environment to shut down without waiting for it; :meth:`close` finishes.

        A vector env calls this on all its workers before closing any, so that their shutdowns
        overlap (a hung environment then delays ``close`` once, not once per worker). Backends
        whose closing is immediate need not override it.
        """

    def close(self) -> None:
        """Close once; later calls do nothing."""
        if self.is_closed:
            return
        self.is_closed = True
        self.close_env()


def get_env_attr(env: gym.Env, key: str) -> Any:
    """Read ``key`` from ``env``, looking through wrappers (gymnasium 1.x no longer forwards)."""
    getter = getattr(env, "get_wrapper_attr", None)
    if getter is None:
        return getattr(env, key)
    return getter(key)


def set_env_attr(env: gym.Env, key: str, value: Any) -> None:
    """Set ``key`` on the innermost environment, where the dynamics read it."""
    setattr(getattr(env, "unwrapped", env), key, value)


def _seed_action_space(env: gym.Env, seed: int | None) -> None:
    """Seed the env's action-space sampler, if it has an action space (not every env does)."""
    space = getattr(env, "action_space", None)
    if space is not None:
        space.seed(seed)


def reset_env(env: gym.Env, **kwargs: Any) -> tuple[Any, dict]:
    """Reset ``env``; a ``seed`` keyword also re-seeds its action-space sampler."""
    if "seed" in kwargs:
        _seed_action_space(env, kwargs["seed"])
    return env.reset(**kwargs)


def seed_env(env: gym.Env, seed: int | None) -> Any:
    """Seed the action-space sampler and the env (legacy ``env.seed`` if present, else reset)."""
    _seed_action_space(env, seed)
    legacy_seed = getattr(env, "seed", None)
    if callable(legacy_seed):
        return legacy_seed(seed)
    env.reset(seed=seed)
    return [seed]
