"""The Ray worker: each environment lives in a Ray actor, locally or anywhere on a cluster.

Ray is imported only when a :class:`RayEnvWorker` is created. Which cluster the actors go to is
decided by ``ray.init`` (``RayVectorEnv`` starts a local instance if none is running; call
``ray.init(address=...)`` first, or set ``RAY_ADDRESS``, to use an existing cluster).
"""

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


@cache
def _actor_class() -> Any:
    import ray

    # Envs mostly wait on their own work; reserving no CPU lets many share a small machine.
    return ray.remote(num_cpus=0)(_EnvHost)


class RayEnvWorker(EnvWorker):
    """Runs one environment in a Ray actor.

    :param env_fn: a callable that builds the environment; shipped to the actor and called there.
    """

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        import ray

        self._ray = ray
        self.actor = _actor_class().remote(env_fn)
        super().__init__(env_fn)

    def get_env_attr(self, key: str) -> Any:
        try:
            return self._ray.get(self.actor.get_env_attr.remote(key))
        except self._ray.exceptions.RayTaskError as err:
            if isinstance(err, AttributeError):
                raise AttributeError(f"the environment has no attribute {key!r}") from err
            raise self._failure(err) from err

    def set_env_attr(self, key: str, value: Any) -> None:
        self._get(self.actor.set_env_attr.remote(key, value))

    def send(self, action: np.ndarray | None, **kwargs: Any) -> None:
        if action is None:
            self.result = self.actor.reset.remote(kwargs)
        else:
            self.result = self.actor.step.remote(action)

    def recv(self) -> gym_new_venv_step_type | tuple[Any, dict]:
        return self._get(self.result)

    @staticmethod
    def wait(
        workers: list[EnvWorker],
        wait_num: int,
        timeout: float | None = None,
    ) -> list[EnvWorker]:
        import ray

        by_ref = {cast(RayEnvWorker, w).result: w for w in workers}
        ready, _ = ray.wait(list(by_ref), num_returns=min(wait_num, len(by_ref)), timeout=timeout)
        return [by_ref[ref] for ref in ready]

    def seed(self, seed: int | None = None) -> Any:
        return self._get(self.actor.seed.remote(seed))

    def render(self, **kwargs: Any) -> Any:
        return self._get(self.actor.render.remote(kwargs))

    def close_env(self) -> None:
        try:
            self._ray.get(self.actor.close.remote(), timeout=10)
        except self._ray.exceptions.RayError:
            pass  # the actor already died; killing it below is all that is left
        finally:
            self._ray.kill(self.actor)

    def _get(self, ref: Any) -> Any:
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayError as err:
            raise self._failure(err) from err

    @staticmethod
    def _failure(err: Exception) -> EnvWorkerError:
        """Turn a Ray error (env exception or dead actor) into an :class:`EnvWorkerError`."""
        cause = getattr(err, "cause", None)
        reason = f"{type(cause).__name__}: {cause}" if cause is not None else type(err).__name__
        return EnvWorkerError(reason, str(err))
