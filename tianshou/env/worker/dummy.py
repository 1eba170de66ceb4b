"""The in-process worker: the environment lives in the caller's process and steps on ``send``."""

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np

from tianshou.env.utils import gym_new_venv_step_type
from tianshou.env.worker.worker_base import (
    EnvWorker,
    get_env_attr,
    reset_env,
    seed_env,
    set_env_attr,
)


class DummyEnvWorker(EnvWorker):
    """Runs one environment sequentially in the current process.

    There is no communication at all, which makes it the fastest choice for cheap environments
    and the easiest to debug (exceptions surface with their own traceback, unchanged).

    :param env_fn: a callable that builds the environment; called immediately.
    """

    def __init__(self, env_fn: Callable[[], gym.Env]) -> None:
        self.env = env_fn()
        super().__init__(env_fn)

    def get_env_attr(self, key: str) -> Any:
        return get_env_attr(self.env, key)

    def set_env_attr(self, key: str, value: Any) -> None:
        set_env_attr(self.env, key, value)

    def send(self, action: np.ndarray | None, **kwargs: Any) -> None:
        if action is None:
            self.result = reset_env(self.env, **kwargs)
        else:
            self.result = self.env.step(action)

    def recv(self) -> gym_new_venv_step_type | tuple[Any, dict]:
        return self.result

    @staticmethod
    def wait(
        workers: list[EnvWorker],
        wait_num: int,
        timeout: float | None = None,
    ) -> list[EnvWorker]:
        # An in-process step has already finished when ``send`` returns.
        return workers

    def seed(self, seed: int | None = None) -> Any:
        return seed_env(self.env, seed)

    def render(self, **kwargs: Any) -> Any:
        return self.env.render(**kwargs)

    def close_env(self) -> None:
        self.env.close()
