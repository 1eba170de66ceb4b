"""Noise processes for exploration with deterministic continuous policies (DDPG, TD3).

The noises draw from numpy's global random generator, so ``np.random.seed`` makes a run
reproducible, exactly like the rest of the data-collection code.
"""

from abc import ABC, abstractmethod

import numpy as np


class BaseNoise(ABC):
    """A noise process: ``noise(size)`` returns one draw of the given shape."""

    def reset(self) -> None:  # noqa: B027 (a stateless noise has nothing to reset)
        """Forget any internal state (called between episodes by users who need it)."""

    @abstractmethod
    def __call__(self, size: int | tuple[int, ...]) -> np.ndarray:
        """Draw noise of shape ``size``."""


class GaussianNoise(BaseNoise):
    """Independent Gaussian noise ``N(mu, sigma^2)`` for every action entry.

    :param mu: mean of the noise.
    :param sigma: standard deviation; 0 adds a constant ``mu``.
    """

    def __init__(self, mu: float = 0.0, sigma: float = 1.0) -> None:
        if sigma < 0:
            raise ValueError(f"sigma must be non-negative, got {sigma}")
        self._mu = mu
        self._sigma = sigma

    def __call__(self, size: int | tuple[int, ...]) -> np.ndarray:
        return np.random.normal(self._mu, self._sigma, size)


class OUNoise(BaseNoise):
    """Ornstein-Uhlenbeck noise: temporally correlated noise that drifts back to ``mu``.

    Each call advances ``x <- x + theta * (mu - x) * dt + sigma * sqrt(dt) * N(0, 1)`` and returns
    the new ``x``; consecutive actions are therefore perturbed in similar directions, which helps
    exploration in physical control tasks with inertia (Lillicrap et al., 2016). If the requested
    shape changes, the process restarts from 0.

    :param mu: the mean the process reverts to.
    :param sigma: scale of the random increments.
    :param theta: speed of the reversion towards ``mu``.
    :param dt: time step of the discretisation.
    :param x0: the state after :meth:`reset` (None: start from 0 with the first draw's shape).
    """

    def __init__(
        self,
        mu: float = 0.0,
        sigma: float = 0.3,
        theta: float = 0.15,
        dt: float = 1e-2,
        x0: float | np.ndarray | None = None,
    ) -> None:
        if sigma < 0 or theta < 0 or dt <= 0:
            raise ValueError(
                f"OUNoise needs sigma >= 0, theta >= 0 and dt > 0, got sigma={sigma}, "
                f"theta={theta}, dt={dt}"
            )
        self._mu = mu
        self._alpha = theta * dt
        self._beta = sigma * np.sqrt(dt)
        self._x0 = x0
        self._x: float | np.ndarray | None = x0

    def reset(self) -> None:
        """Return the process to ``x0``."""
        self._x = self._x0

    def __call__(self, size: int | tuple[int, ...], mu: float | None = None) -> np.ndarray:
        """Advance the process one step and return its state, of shape ``size``.

        :param mu: revert towards this mean for this step instead of the configured one.
        """
        shape = (size,) if isinstance(size, int) else tuple(size)
        if self._x is None or (isinstance(self._x, np.ndarray) and self._x.shape != shape):
            self._x = 0.0
        target = self._mu if mu is None else mu
        increment = self._beta * np.random.normal(size=shape)
        self._x = self._x + self._alpha * (target - self._x) + increment
        return np.asarray(self._x)
