"""Observations in shared memory, so that a subprocess worker never pickles them.

The child computes a layout from its env's observation space (one aligned byte range per array
leaf of possibly nested ``Dict``/``Tuple`` spaces), sizes a file in ``/dev/shm`` for it and writes
each observation in place. The parent maps the same file and reads the arrays back. Both sides
address the file through numpy views built from the layout.

:class:`ShArray` is a simpler building block for code of one's own: one fixed-shape array in
shared memory, handed to a child process when it is started.
"""

import mmap
import multiprocessing
import os
import tempfile
from dataclasses import dataclass
from math import prod
from multiprocessing.context import BaseContext
from typing import Any, TypeAlias

import gymnasium as gym
import numpy as np
from gymnasium import spaces

_ALIGN = 64
_ARRAY_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


@dataclass(frozen=True)
class Slot:
    """Where one array leaf of the observation lives in the shared file."""

    offset: int
    shape: tuple[int, ...]
    dtype: str


Layout: TypeAlias = "Slot | dict[str, Layout] | tuple[Layout, ...]"
ObsViews: TypeAlias = "np.ndarray | dict[str, ObsViews] | tuple[ObsViews, ...]"


def plan_layout(space: gym.Space) -> tuple[Layout, int]:
    """Give every array leaf of ``space`` an aligned byte range; return the layout and its size.

    Only fixed-shape spaces fit in a preallocated buffer; anything else is rejected with the
    path of the offending sub-space.
    """
    end = 0

    def place(sub: gym.Space, path: str) -> Layout:
        nonlocal end
        if isinstance(sub, spaces.Dict):
            return {key: place(value, f"{path}[{key!r}]") for key, value in sub.spaces.items()}
        if isinstance(sub, spaces.Tuple):
            return tuple(place(value, f"{path}[{i}]") for i, value in enumerate(sub.spaces))
        if isinstance(sub, _ARRAY_SPACES):
            dtype = np.dtype(sub.dtype)
            slot = Slot(end, tuple(sub.shape or ()), dtype.str)
            end += -(-prod(slot.shape) * dtype.itemsize // _ALIGN) * _ALIGN
            return slot
        raise TypeError(
            f"{path} is a {type(sub).__name__}, which has no fixed shape and cannot be kept in "
            "shared memory; shared memory supports Box, Discrete, MultiDiscrete and MultiBinary "
            "leaves inside Dict/Tuple spaces. Use SubprocVectorEnv(share_memory=False) instead."
        )

    layout = place(space, "observation_space")
    return layout, end


def create_shared_file() -> str:
    """Create an empty file in RAM-backed storage (``/dev/shm`` when present); return its path.

    The name carries the creating process's id, so a leftover file can be traced to its owner.
    """
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else None
    fd, path = tempfile.mkstemp(prefix=f"tianshou-obs-{os.getpid()}-", dir=directory)
    os.close(fd)
    return path


def map_shared_file(path: str, size: int, resize: bool) -> mmap.mmap:
    """Memory-map ``path``; the creating side (``resize=True``) first sets its size."""
    size = max(size, 1)  # mmap refuses empty mappings
    with open(path, "r+b") as file:
        if resize:
            os.ftruncate(file.fileno(), size)
        return mmap.mmap(file.fileno(), size)


def make_views(layout: Layout, buffer: mmap.mmap) -> ObsViews:
    """Numpy views into ``buffer``, nested like the observation space."""
    if isinstance(layout, dict):
        return {key: make_views(value, buffer) for key, value in layout.items()}
    if isinstance(layout, tuple):
        return tuple(make_views(value, buffer) for value in layout)
    array = np.frombuffer(buffer, layout.dtype, prod(layout.shape), layout.offset)
    return array.reshape(layout.shape)


def write_obs(views: ObsViews, obs: Any, path: str = "observation") -> None:
    """Copy ``obs`` into the shared views, checking that it matches the declared space.

    An array with the declared number of elements but another shape (``[3]`` for a
    ``Discrete`` leaf of shape ``()``) is accepted and takes the declared shape; anything else
    is rejected rather than broadcast.
    """
    if isinstance(views, np.ndarray):
        value = np.asarray(obs)
        if value.shape != views.shape:
            if value.size != views.size:
                raise ValueError(
                    f"{path} has shape {value.shape}, but observation_space declares "
                    f"{views.shape}; shared memory needs observations that match the space"
                )
            value = value.reshape(views.shape)
        np.copyto(views, value, casting="same_kind")
    elif isinstance(views, dict):
        if not isinstance(obs, dict):
            raise TypeError(f"{path} should be a dict like the Dict space, got {type(obs)}")
        for key, sub_views in views.items():
            write_obs(sub_views, obs[key], f"{path}[{key!r}]")
    else:
        if not isinstance(obs, tuple | list) or len(obs) != len(views):
            raise TypeError(f"{path} should be a tuple of {len(views)} items like the Tuple space")
        for i, (sub_views, item) in enumerate(zip(views, obs, strict=True)):
            write_obs(sub_views, item, f"{path}[{i}]")


def read_obs(views: ObsViews) -> Any:
    """A private copy of the observation currently held in the shared views."""
    if isinstance(views, np.ndarray):
        return views.copy()
    if isinstance(views, dict):
        return {key: read_obs(value) for key, value in views.items()}
    return tuple(read_obs(value) for value in views)


class ShArray:
    """One fixed-shape numpy array in shared memory, visible to the processes started after it.

    Pass it to a child process as a ``Process`` argument (it cannot be sent through a pipe
    later); both sides then read and write the same memory. Nothing synchronises them: the
    processes must agree on who writes when (e.g. by messages on a pipe).

    :param dtype: the element type, e.g. ``np.float32``.
    :param shape: the array shape.
    :param ctx: the multiprocessing context of the processes that will share it; None uses the
        default context.

    Example::

        >>> shared = ShArray(np.float32, (2, 3))
        >>> shared.save(np.ones((2, 3)))
        >>> shared.get().sum()
        np.float32(6.0)
    """

    def __init__(
        self,
        dtype: np.dtype | type[np.generic],
        shape: tuple[int, ...],
        ctx: BaseContext | None = None,
    ) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        nbytes = prod(self.shape) * self.dtype.itemsize
        self.arr = (ctx or multiprocessing.get_context()).RawArray("b", max(nbytes, 1))

    def save(self, ndarray: np.ndarray) -> None:
        """Copy ``ndarray`` into the shared memory; it must have the declared shape."""
        value = np.asarray(ndarray)
        if value.shape != self.shape:
            raise ValueError(f"ShArray holds shape {self.shape}, cannot save shape {value.shape}")
        np.copyto(self.get(), value, casting="unsafe")

    def get(self) -> np.ndarray:
        """A numpy view of the shared memory (not a copy: later writes show through it)."""
        return np.frombuffer(self.arr, self.dtype, prod(self.shape)).reshape(self.shape)
