"""Sampling random actions for random collection, faster than ``Space.sample`` where it is safe.

Off-policy algorithms start with thousands of uniformly random steps (``start_timesteps``), and
for a cheap MuJoCo env gymnasium's ``Box.sample`` costs a fifth of such a step: it classifies
every coordinate as bounded or not and draws from four distributions on each call. For the common
action space, a plain ``gymnasium.spaces.Box`` of floats bounded on every side, the sample is one
uniform draw; :func:`space_sampler` then makes that draw directly, from the space's own generator,
so the values (and the generator's state afterwards) are exactly those of ``space.sample()``:
seeded runs are unchanged. Every other space, including subclasses of ``Box``, which may
override ``sample``, is sampled by its own method.
"""

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np


def space_sampler(space: gym.Space) -> Callable[[], Any]:
    """A function drawing one sample of ``space``, equal to what ``space.sample()`` draws.

    The space's bounds and dtype are read when the sampler is made; its generator is read at
    every call, so reseeding the space (``space.seed``) takes effect.
    """
    if type(space) is gym.spaces.Box and space.dtype.kind == "f" and space.is_bounded("both"):
        return _bounded_float_box_sampler(space)
    return space.sample


def _bounded_float_box_sampler(space: gym.spaces.Box) -> Callable[[], np.ndarray]:
    """``Box.sample`` draws the coordinates in C order as float64 with one ``uniform`` call,
    then casts them. Bounds that are the same for every coordinate (``Box(-1, 1, shape)``, as
    most continuous-control action spaces are) are passed as two floats, which numpy draws from
    with the same arithmetic but without validating two arrays at every call."""
    low: float | np.ndarray = space.low
    high: float | np.ndarray = space.high
    if np.all(space.low == space.low.flat[0]) and np.all(space.high == space.high.flat[0]):
        low, high = float(space.low.flat[0]), float(space.high.flat[0])
    shape, dtype = space.shape, space.dtype

    def sample() -> np.ndarray:
        return space.np_random.uniform(low, high, shape).astype(dtype)

    return sample
