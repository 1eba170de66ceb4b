"""Partially observed versions of two classic-control tasks, for the recurrent examples and tests.

Hiding the velocities turns a Markov task into one where a single observation no longer tells
the agent what to do: the velocity must be inferred from the history, which is what a recurrent
policy's hidden state is for. A feed-forward policy sees only positions and stays far from the
full task's performance.
"""

from collections.abc import Sequence

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
