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
SUPPORTED_OBSERVATION_SPACES = "Box, Discrete, MultiDiscrete, MultiBinary or a Dict of them"

OBS_KEY, MASK_KEY = "obs", "mask"
"""The two entries of a masked observation: what the networks read, and the legal actions."""


def _flat_dim(shape: int | Sequence[int], what: str) -> int:
    """The number of scalar entries a ``shape`` describes (an int already is that number)."""
    if isinstance(shape, int | np.integer):
        return int(shape)
    if isinstance(shape, Sequence):
        return int(np.prod(shape))
    raise ValueError(f"{what} must be an int or a sequence of ints, got {shape!r}")


def _unsupported(space: gym.Space, role: str, supported: str = SUPPORTED_SPACES) -> ValueError:
    return ValueError(
        f"unsupported {role} space {type(space).__name__}; SpaceInfo handles {supported}"
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

    Two kinds of ``Dict`` observation are described as the networks see them:

    * a masked observation, ``Dict({"obs": ..., "mask": ...})`` (the legal-action convention
      of ``docs/spaces.md``), by its ``obs`` entry, what the networks read; ``mask_shape`` is
      the mask's shape;
    * any other ``Dict``, by the width of its entries flattened and concatenated (one-hot for
      ``Discrete`` entries, as ``gymnasium.spaces.flatdim`` counts them), with each entry
      described in ``entries``.

    :param obs_shape: the Box, MultiDiscrete or MultiBinary shape, ``n`` for a Discrete space,
        or ``(flat width,)`` for a Dict space.
    :param entries: a Dict space's entries, each described on its own (None for other spaces).
    :param mask_shape: the legal-action mask's shape, for a masked observation (else None).
    """

    obs_shape: int | Sequence[int]
    entries: dict[str, "ObservationSpaceInfo"] | None = None
    mask_shape: tuple[int, ...] | None = None

    @property
    def obs_dim(self) -> int:
        """The flat observation size, i.e. the input width of an MLP on flattened observations."""
        return _flat_dim(self.obs_shape, "obs_shape")

    @classmethod
    def from_space(cls, space: gym.Space) -> Self:
        """Read the shape of a Box, Discrete, MultiDiscrete, MultiBinary or Dict observation
        space (a Dict's entries recursively)."""
        if isinstance(space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
            return cls(obs_shape=space.shape)
        if isinstance(space, spaces.Discrete):
            return cls(obs_shape=int(space.n))
        if isinstance(space, spaces.Dict):
            if set(space.spaces) == {OBS_KEY, MASK_KEY}:
                inner = cls.from_space(space[OBS_KEY])
                mask_shape = space[MASK_KEY].shape
                if mask_shape is None:
                    raise ValueError(f"the {MASK_KEY!r} entry {space[MASK_KEY]} has no shape")
                return cls(obs_shape=inner.obs_shape, entries=inner.entries, mask_shape=mask_shape)
            entries: dict[str, ObservationSpaceInfo] = {
                key: cls.from_space(sub) for key, sub in space.spaces.items()
            }
            return cls(obs_shape=(spaces.flatdim(space),), entries=entries)
        raise _unsupported(space, "observation", SUPPORTED_OBSERVATION_SPACES)


@dataclass(kw_only=True)
class SpaceInfo:
    """Action and observation information of an environment.

    >>> import gymnasium as gym
    >>> info = SpaceInfo.from_env(gym.make("CartPole-v1"))
    >>> info.action_info.action_shape, info.observation_info.obs_shape
    (2, (4,))

    A masked observation is described by what the networks read, and its mask:

    >>> masked = gym.spaces.Dict({
    ...     "obs": gym.spaces.Box(0.0, 1.0, (6,)), "mask": gym.spaces.MultiBinary(3)})
    >>> observation = SpaceInfo.from_spaces(gym.spaces.Discrete(3), masked).observation_info
    >>> observation.obs_shape, observation.mask_shape
    ((6,), (3,))
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
