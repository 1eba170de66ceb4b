"""Small deterministic environments for the env-layer tests.

They live in an importable module (not inside test functions) so that spawned subprocesses and
Ray actors can unpickle them by reference. Every observation includes a draw from the env's
``np_random``, so seeding differences show up in the data.
"""

import os
import tempfile
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


class Gate:
    """A barrier in a directory, which envs in any process stop at until the test opens it.

    While the gate is closed, an env that reaches it leaves a file saying so and waits. Files
    work across processes whatever the start method, and a thread of the test can count them
    while the main thread is blocked inside the vector env: that is how tests make an interrupt
    land at a point they choose, instead of after a delay that a loaded machine may not honour.

    :param path: an empty directory that belongs to this gate.
    """

    LIMIT_S = 30.0
    """The longest an env waits at a closed gate, so that a failing test ends instead of hanging."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._closed_marker = os.path.join(path, "closed")

    def close(self) -> None:
        """Make envs that reach the gate from now on stop there (and forget earlier arrivals)."""
        for name in os.listdir(self.path):
            if name.startswith("arrived-"):
                os.unlink(os.path.join(self.path, name))
        with open(self._closed_marker, "w"):
            pass

    def open(self) -> None:
        """Let the waiting envs, and all that come later, through."""
        if os.path.exists(self._closed_marker):
            os.unlink(self._closed_marker)

    def arrivals(self) -> int:
        """How many times an env reached the gate since it was closed."""
        return sum(name.startswith("arrived-") for name in os.listdir(self.path))

    def pass_through(self) -> None:
        """Called by an env: if the gate is closed, say so and wait until it opens."""
        if not os.path.exists(self._closed_marker):
            return
        handle, _ = tempfile.mkstemp(dir=self.path, prefix="arrived-")
        os.close(handle)
        deadline = time.monotonic() + self.LIMIT_S
        while os.path.exists(self._closed_marker) and time.monotonic() < deadline:
            time.sleep(0.002)


class GatedEnv(CountEnv):
    """A :class:`CountEnv` whose every step (or reset, with ``at="reset"``) passes ``gate``.

    :param gate: the directory of a :class:`Gate`.
    """

    def __init__(self, gate: str, at: str = "step", size: int = 50) -> None:
        super().__init__(size)
        if at not in ("step", "reset"):
            raise ValueError(f"at must be 'step' or 'reset', got {at!r}")
        self.gate = Gate(gate)
        self.at = at

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        if self.at == "reset":
            self.gate.pass_through()
        return super().reset(seed=seed, options=options)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.at == "step":
            self.gate.pass_through()
        return super().step(action)


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
