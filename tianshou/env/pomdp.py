"""Partially observed tasks for the recurrent example scripts (``examples/pomdp/``), tests and
benchmarks.

Hiding the velocities of two classic-control tasks turns a Markov task into one where a single
observation no longer tells the agent what to do: the velocity must be inferred from the
history, which is what a recurrent policy's hidden state is for. A feed-forward policy sees only
positions and stays far from the full task's performance. :class:`CueRecallEnv` needs memory
and legal-action masks together.
"""

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np

CARTPOLE_VISIBLE = (0, 2)
"""CartPole keeps the cart position and the pole angle; both velocities are hidden."""

PENDULUM_VISIBLE = (0, 1)
"""Pendulum keeps ``cos(theta)`` and ``sin(theta)``; the angular velocity is hidden."""


class HiddenComponents(gym.ObservationWrapper):
    """Shows only some components of a flat ``Box`` observation.

    :param env: an environment with a one-dimensional ``Box`` observation space.
    :param visible: indices of the components the agent still sees (at least one).
    """

    def __init__(self, env: gym.Env, visible: Sequence[int]) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"HiddenComponents needs a flat Box observation space, got {space}")
        self.visible = np.asarray(visible, dtype=np.int64)
        if self.visible.size == 0 or not np.all(
            (self.visible >= 0) & (self.visible < space.shape[0])
        ):
            raise ValueError(
                f"visible must name components in [0, {space.shape[0]}), got {list(visible)}"
            )
        self.observation_space = gym.spaces.Box(
            low=space.low[self.visible], high=space.high[self.visible], dtype=space.dtype
        )

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.asarray(observation)[self.visible]


def cartpole_without_velocities() -> gym.Env:
    """``CartPole-v1`` that shows the cart position and pole angle only (reward threshold 195)."""
    return HiddenComponents(gym.make("CartPole-v1"), CARTPOLE_VISIBLE)


def pendulum_without_velocity() -> gym.Env:
    """``Pendulum-v1`` that shows the angle (as cosine and sine) but not the angular velocity."""
    return HiddenComponents(gym.make("Pendulum-v1"), PENDULUM_VISIBLE)


class CueRecallEnv(gym.Env):
    """Remember a cue through a delay, then choose its side; every step says which actions are
    legal.

    The first observation shows a cue, left or right; the next ``delay`` observations are blank
    and only ``WAIT`` is legal; the last one asks for a choice, where only ``LEFT`` and
    ``RIGHT`` are legal, and the episode ends paying 1 for the cue's side and 0 otherwise. The
    choice step looks the same whatever the cue was, so a policy without memory earns 0.5 per
    episode on average and a recurrent one can earn 1. An illegal action raises, so a policy
    that ignores the mask fails at once.

    Observations are dicts of ``obs`` (cue left, cue right, choice now) and the boolean
    ``mask`` over the actions (``WAIT``, ``LEFT``, ``RIGHT``): the masking convention every
    discrete-action policy of the library honours. With ``dict_obs`` the network input ``obs``
    is itself a dict, ``cue`` (0 none, 1 left, 2 right) and ``choosing`` (0 or 1), for
    networks that encode structured observations.

    :param delay: blank steps between the cue and the choice.
    :param dict_obs: give ``obs`` as a dict of ``cue`` and ``choosing`` instead of an array.
    """

    WAIT, LEFT, RIGHT = 0, 1, 2

    def __init__(self, delay: int = 3, dict_obs: bool = False) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay}")
        self.delay = delay
        self.dict_obs = dict_obs
        network_input: gym.Space = (
            gym.spaces.Dict({"cue": gym.spaces.Discrete(3), "choosing": gym.spaces.MultiBinary(1)})
            if dict_obs
            else gym.spaces.Box(0.0, 1.0, (3,), np.float32)
        )
        self.observation_space = gym.spaces.Dict(
            {"obs": network_input, "mask": gym.spaces.MultiBinary(3)}
        )
        self.action_space = gym.spaces.Discrete(3)
        self._cue = self.LEFT
        self._step = 0
        self._mask = np.zeros(3, dtype=bool)

    def _observe(self) -> dict[str, Any]:
        cue = self._cue if self._step == 0 else 0
        choosing = self._step == self.delay
        self._mask = np.array([not choosing, choosing, choosing])
        if self.dict_obs:
            network_input: Any = {"cue": cue, "choosing": np.array([choosing], dtype=np.int8)}
        else:
            network_input = np.zeros(3, dtype=np.float32)
            if cue:
                network_input[cue - 1] = 1.0
            network_input[2] = float(choosing)
        return {"obs": network_input, "mask": self._mask.copy()}

    def reset(
        self, *, seed: int | None = None, options: dict | None = None
    ) -> tuple[dict[str, Any], dict]:
        """Start an episode with a new cue (drawn from the env's seeded generator)."""
        super().reset(seed=seed)
        self._cue = self.LEFT if self.np_random.random() < 0.5 else self.RIGHT
        self._step = 0
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict[str, Any], float, bool, bool, dict]:
        """Wait through the delay, or choose a side at its end (reward 1 for the cue's side).

        :raises ValueError: for an action the current mask does not allow.
        """
        if not self._mask[action]:
            raise ValueError(f"illegal action {action}; legal: {np.flatnonzero(self._mask)}")
        if self._step == self.delay:
            return self._observe(), float(action == self._cue), True, False, {}
        self._step += 1
        return self._observe(), 0.0, False, False, {}
