"""Shapes and bounds of an environment's action and observation spaces, read in one place.

Network constructors need plain numbers (``state_shape``, ``action_shape``, ``max_action``)
rather than gymnasium spaces; :class:`SpaceInfo` extracts them so that scripts do not repeat
the ``space.shape or space.n`` dance.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

import gymnasium as gym
import numpy as np
from gymnasium import spaces

SUPPORTED_SPACES = "Box, Discrete or MultiDiscrete"


def _flat_dim(shape: int | Sequence[int], what: str) -> int:
    """The number of scalar entries a ``shape`` describes (an int already is that number)."""
    if isinstance(shape, int | np.integer):
        return int(shape)
    if isinstance(shape, Sequence):
        return int(np.prod(shape))
    raise ValueError(f"{what} must be an int or a sequence of ints, got {shape!r}")


def _unsupported(space: gym.Space, role: str) -> ValueError:
    return ValueError(
        f"unsupported {role} space {type(space).__name__}; SpaceInfo handles {SUPPORTED_SPACES}"
    )


@dataclass(kw_only=True)
class ActionSpaceInfo:
    """The action shape and bounds of an action space.

    :param action_shape: the Box shape, or the number of actions of a Discrete space (an int).
    :param min_action: the smallest action value (the minimum over all Box dimensions).
    :param max_action: the largest action value (the maximum over all Box dimensions).
    """

    action_shape: int | Sequence[int]
    min_action: float
    max_action: float

    @property
    def action_dim(self) -> int:
        """The flat action size: the number of Box entries, or the number of discrete actions."""
        return _flat_dim(self.action_shape, "action_shape")

    @classmethod
    def from_space(cls, space: gym.Space) -> Self:
        """Read shape and bounds from a Box, Discrete or MultiDiscrete action space.

        A Discrete space of ``n`` actions starting at ``start`` has bounds ``start`` and
        ``start + n - 1``; a MultiDiscrete space keeps its shape (one entry per sub-action)
        and spans the smallest start to the largest last action.
        """
        if isinstance(space, spaces.Box):
            return cls(
                action_shape=space.shape,
                min_action=float(np.min(space.low)),
                max_action=float(np.max(space.high)),
            )
        if isinstance(space, spaces.Discrete):
            start = int(space.start)
            return cls(
                action_shape=int(space.n),
                min_action=float(start),
                max_action=float(start + int(space.n) - 1),
            )
        if isinstance(space, spaces.MultiDiscrete):
            return cls(
                action_shape=space.shape,
                min_action=float(np.min(space.start)),
                max_action=float(np.max(space.start + space.nvec - 1)),
            )
        raise _unsupported(space, "action")


@dataclass(kw_only=True)
class ObservationSpaceInfo:
    """The observation shape of an observation space.

    :param obs_shape: the Box or MultiDiscrete shape, or ``n`` for a Discrete space.
    """

    obs_shape: int | Sequence[int]

    @property
    def obs_dim(self) -> int:
        """The flat observation size, i.e. the input width of an MLP on flattened observations."""
        return _flat_dim(self.obs_shape, "obs_shape")

    @classmethod
    def from_space(cls, space: gym.Space) -> Self:
        """Read the shape of a Box, Discrete or MultiDiscrete observation space."""
        if isinstance(space, spaces.Box | spaces.MultiDiscrete):
            return cls(obs_shape=space.shape)
        if isinstance(space, spaces.Discrete):
            return cls(obs_shape=int(space.n))
        raise _unsupported(space, "observation")


@dataclass(kw_only=True)
class SpaceInfo:
    """Action and observation information of an environment.

    >>> import gymnasium as gym
    >>> info = SpaceInfo.from_env(gym.make("CartPole-v1"))
    >>> info.action_info.action_shape, info.observation_info.obs_shape
    (2, (4,))
    """

    action_info: ActionSpaceInfo
    observation_info: ObservationSpaceInfo

    @classmethod
    def from_env(cls, env: gym.Env) -> Self:
        """Describe ``env.action_space`` and ``env.observation_space``."""
        return cls.from_spaces(env.action_space, env.observation_space)

    @classmethod
    def from_spaces(cls, action_space: gym.Space, observation_space: gym.Space) -> Self:
        """Describe an action space and an observation space."""
        return cls(
            action_info=ActionSpaceInfo.from_space(action_space),
            observation_info=ObservationSpaceInfo.from_space(observation_space),
        )
