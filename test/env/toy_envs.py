"""Small deterministic environments for the env-layer tests.

They live in an importable module (not inside test functions) so that spawned subprocesses and
Ray actors can unpickle them by reference. Every observation includes a draw from the env's
``np_random``, so seeding differences show up in the data.
"""

import time
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class CountEnv(gym.Env):
    """Walk an index from 0 to ``size``: action 1 steps forward, 0 steps back.

    Observation ``[index, noise]``; reward 1.0 on reaching ``size`` (terminated); truncated after
    ``3 * size`` steps. ``sleep`` seconds are spent in every step and ``reset_sleep`` seconds in
    every reset, to make slow (or, with long sleeps, hung) envs.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"]}

    def __init__(self, size: int = 5, sleep: float = 0.0, reset_sleep: float = 0.0) -> None:
        self.size = size
        self.sleep = sleep
        self.reset_sleep = reset_sleep
        self.observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float64)
        self.action_space = spaces.Discrete(2)
        self.index = 0
        self.steps = 0

    def _obs(self) -> np.ndarray:
        return np.array([self.index, self.np_random.random()])

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        if self.reset_sleep:
            time.sleep(self.reset_sleep)
        self.index = 0
        self.steps = 0
        return self._obs(), {"size": self.size}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.sleep:
            time.sleep(self.sleep)
        self.steps += 1
        self.index = max(0, self.index + (1 if int(action) == 1 else -1))
        terminated = self.index >= self.size
        truncated = not terminated and self.steps >= 3 * self.size
        return self._obs(), float(terminated), terminated, truncated, {"steps": self.steps}

    def render(self) -> np.ndarray:
        return np.full((2, 2, 3), self.index, dtype=np.uint8)


class DictObsEnv(CountEnv):
    """:class:`CountEnv` with nested dict observations (including a tuple inside the dict)."""

    def __init__(self, size: int = 5) -> None:
        super().__init__(size)
        pair = spaces.Tuple((spaces.Discrete(3), spaces.Box(0, 1, (2,), np.float64)))
        self.observation_space = spaces.Dict(
            {
                "index": spaces.Box(0, size, (1,), np.float32),
                "nested": spaces.Dict({"pair": pair, "rand": spaces.Box(0, 1, (1, 2))}),
            }
        )

    def _obs(self) -> dict[str, Any]:  # type: ignore[override]
        rng = self.np_random
        return {
            "index": np.array([self.index], dtype=np.float32),
            "nested": {
                "pair": (np.int64(self.index % 3), rng.random(2)),
                "rand": rng.random((1, 2)).astype(np.float32),
            },
        }


class RaggedEnv(CountEnv):
    """:class:`CountEnv` whose observation has ``dim`` entries, so envs can differ in shape."""

    def __init__(self, dim: int, size: int = 5) -> None:
        super().__init__(size)
        self.observation_space = spaces.Box(-np.inf, np.inf, (dim,), np.float64)

    def _obs(self) -> np.ndarray:
        dim = self.observation_space.shape[0]
        return self.index + self.np_random.random(dim)


class TupleObsEnv(CountEnv):
    """Returns tuple observations, which vector envs reject."""

    def __init__(self) -> None:
        super().__init__()
        self.observation_space = spaces.Tuple((spaces.Discrete(2), spaces.Discrete(2)))

    def _obs(self) -> tuple[int, int]:  # type: ignore[override]
        return (self.index % 2, 0)


class FailingEnv(CountEnv):
    """A :class:`CountEnv` that raises ``ValueError`` when it gets the action ``POISON``."""

    POISON = 2

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if int(action) == self.POISON:
            explode_with_a_recognisable_frame(self.steps + 1)
        return super().step(action)


def explode_with_a_recognisable_frame(step: int) -> None:
    """Raise from a named function, so tests can find it in a forwarded traceback."""
    raise ValueError(f"toy env exploded on step {step}")


def unbuildable_env() -> gym.Env:
    """An env factory that fails, like a misconfigured task."""
    raise RuntimeError("cannot build this toy env")


class UnpicklableInfoEnv(CountEnv):
    """Puts a lambda into ``info``, which cannot cross a process boundary."""

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        obs, rew, terminated, truncated, info = super().step(action)
        info["callback"] = lambda: None
        return obs, rew, terminated, truncated, info


class NoSpacesEnv(gym.Env):
    """Steps like :class:`CountEnv` but declares neither an action nor an observation space."""

    def __init__(self) -> None:
        self.index = 0

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.index = 0
        return np.array([self.index, self.np_random.random()]), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.index += int(action)
        return np.array([self.index, self.np_random.random()]), 0.0, False, False, {}
