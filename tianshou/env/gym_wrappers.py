"""Gymnasium wrappers that adapt action spaces and episode ends to what an algorithm expects."""

from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np


class ContinuousToDiscrete(gym.ActionWrapper):
    """Lets a discrete-action algorithm drive a continuous (``Box``) action space.

    Each action dimension ``i`` is split into ``action_per_dim[i]`` evenly spaced values from
    ``low[i]`` to ``high[i]``; the wrapped env then takes a ``MultiDiscrete`` action holding one
    index per dimension.

    :param env: env with a one-dimensional ``Box`` action space.
    :param action_per_dim: number of values per dimension (one int for all, or one per dim).
    """

    def __init__(self, env: gym.Env, action_per_dim: int | list[int]) -> None:
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise TypeError(f"ContinuousToDiscrete needs a 1-d Box action space, got {space}")
        dims = space.shape[0]
        counts = [action_per_dim] * dims if isinstance(action_per_dim, int) else action_per_dim
        if len(counts) != dims:
            raise ValueError(f"action_per_dim has {len(counts)} entries for {dims} action dims")
        self.action_space = gym.spaces.MultiDiscrete(counts)
        grids = [
            np.linspace(lo, hi, n) for lo, hi, n in zip(space.low, space.high, counts, strict=True)
        ]
        self.mesh = np.zeros((dims, max(counts)), dtype=grids[0].dtype)
        for i, grid in enumerate(grids):
            self.mesh[i, : len(grid)] = grid
        self._dim_index = np.arange(dims)

    def action(self, act: np.ndarray) -> np.ndarray:
        """Map indices of shape ``(dims,)`` or ``(batch, dims)`` to continuous values."""
        act = np.asarray(act)
        if act.ndim not in (1, 2):
            raise ValueError(
                f"expected an action of shape (dims,) or (batch, dims), got {act.shape}"
            )
        return self.mesh[self._dim_index, act]


class MultiDiscreteToDiscrete(gym.ActionWrapper):
    """Flattens a ``MultiDiscrete`` action space into one ``Discrete`` space.

    Discrete action ``k`` is decoded in row-major order, like ``np.unravel_index(k, nvec)``.

    :param env: env with a one-dimensional ``MultiDiscrete`` action space.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.action_space
        if not isinstance(space, gym.spaces.MultiDiscrete) or space.nvec.ndim != 1:
            raise TypeError(f"MultiDiscreteToDiscrete needs a 1-d MultiDiscrete space, got {space}")
        nvec = space.nvec
        # bases[i] is the number of flat actions one step of dimension i skips
        self.bases = np.ones_like(nvec)
        self.bases[:-1] = np.cumprod(nvec[::-1])[::-1][1:]
        self.nvec = nvec
        self.action_space = gym.spaces.Discrete(int(np.prod(nvec)))

    def action(self, act: np.ndarray) -> np.ndarray:
        """Map a flat index (or a batch of them) to one index per dimension (last axis)."""
        return (np.asarray(act)[..., None] // self.bases) % self.nvec


class TruncatedAsTerminated(gym.Wrapper):
    """Reports a truncated episode (time limit) as terminated too.

    For tasks where reaching the time limit really is the end, so that value targets do not
    bootstrap past it. ``truncated`` itself is passed through unchanged.
    """

    def step(self, act: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the wrapped env with ``act``; ``terminated`` also holds when truncated."""
        obs, reward, terminated, truncated, info = self.env.step(act)
        return obs, reward, terminated or truncated, truncated, info
