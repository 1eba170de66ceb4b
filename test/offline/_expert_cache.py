"""Caching of the expert buffers that the offline learners' tests train from, and what the two
gather modules share.

Gathering an expert buffer means training an expert (tens of seconds), so it happens once per
checkout: the buffer is written to an HDF5 file next to the gather module and later calls load
it. Under pytest-xdist several workers may ask for the same buffer at once; an exclusive
``fcntl`` lock on a sibling ``.lock`` file lets exactly one of them gather while the others wait
and then load its file. Files are written to a temporary name and moved into place with
``os.replace``, so a reader never sees a half-written file; a file that still fails to load or
to validate (corrupted, truncated, written by an older layout) is gathered again.
"""

import argparse
import fcntl
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import gymnasium as gym
import numpy as np
import torch

from tianshou.data import ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv

Validator = Callable[[VectorReplayBuffer], None]
"""Raises ``ValueError`` naming what is wrong when a loaded buffer is not the expected one."""

STORED_KEYS = ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next")
"""The fields every stored transition must have."""


def save_atomically(buffer: ReplayBuffer, path: str) -> None:
    """Write ``buffer`` with ``save_hdf5`` to a temporary file beside ``path``, then move it
    into place, so ``path`` holds either the old file or the complete new one.

    :param buffer: the buffer to store.
    :param path: the destination file.
    """
    directory, name = os.path.split(os.path.abspath(path))
    handle, tmp_path = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp.hdf5", dir=directory)
    os.close(handle)
    try:
        os.chmod(tmp_path, 0o644)  # mkstemp's file is private to its owner; a cache is not
        buffer.save_hdf5(tmp_path)
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)
        raise


def load_valid(path: str, validate: Validator) -> VectorReplayBuffer | None:
    """Load ``path`` as a :class:`VectorReplayBuffer` and validate it.

    :return: the buffer, or None if the file is missing, does not load or does not validate.
    """
    if not os.path.exists(path):
        return None
    try:
        buffer = VectorReplayBuffer.load_hdf5(path)
        validate(buffer)
    except (OSError, ValueError, KeyError, TypeError):  # BufferFileError is both of the first
        return None
    return buffer


@contextmanager
def exclusive_lock(path: str) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path + ".lock"`` (created if needed) for the block.

    The lock file is never deleted: removing it while another process waits on it would let a
    third process lock a new file of the same name at the same time.
    """
    with open(path + ".lock", "a") as lock_file:
        fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock_file.fileno(), fcntl.LOCK_UN)


def load_or_gather(
    path: str,
    gather: Callable[[], VectorReplayBuffer],
    validate: Validator,
) -> VectorReplayBuffer:
    """Return the valid buffer stored at ``path``, gathering it first if there is none.

    :param path: the cached HDF5 file.
    :param gather: produces the buffer and saves it to ``path`` (with :func:`save_atomically`);
        called at most once among all processes that wait on the lock together.
    :param validate: checks a loaded buffer; an invalid file counts as missing.
    :raises ValueError: if the freshly gathered buffer does not validate either.
    """
    buffer = load_valid(path, validate)
    if buffer is not None:
        return buffer
    with exclusive_lock(path):
        buffer = load_valid(path, validate)  # another process may have gathered meanwhile
        if buffer is None:
            buffer = gather()
            validate(buffer)
    return buffer


def check_expert_buffer(
    buffer: ReplayBuffer,
    size: int,
    obs_shape: tuple[int, ...],
    act_shape: tuple[int, ...],
    act_low: float,
    act_high: float,
) -> None:
    """Check that ``buffer`` is full, with the expected fields, shapes and action range.

    :param size: the expected number of stored transitions.
    :param obs_shape: the shape of one observation.
    :param act_shape: the shape of one action (``()`` for discrete actions).
    :param act_low: the smallest allowed action value.
    :param act_high: the largest allowed action value.
    :raises ValueError: naming the first mismatch.
    """
    if len(buffer) != size:
        raise ValueError(f"expected {size} transitions, the buffer holds {len(buffer)}")
    data = buffer[np.arange(len(buffer))]
    missing = [key for key in STORED_KEYS if key not in data.get_keys()]
    if missing:
        raise ValueError(f"the buffer lacks the fields {missing}")
    for key, shape in (("obs", obs_shape), ("obs_next", obs_shape), ("act", act_shape)):
        if data[key].shape != (size, *shape):
            raise ValueError(f"{key} has shape {data[key].shape}, expected {(size, *shape)}")
    act = np.asarray(data.act)
    if not np.all(np.isfinite(act)) or act.min() < act_low or act.max() > act_high:
        raise ValueError(f"actions outside [{act_low}, {act_high}]")


def episode_returns(buffer: ReplayBuffer) -> np.ndarray:
    """The undiscounted returns of the complete episodes stored in ``buffer``.

    An episode is complete when its last transition is stored with ``done`` set; the trailing
    part of an episode that the collection cut off is left out.
    """
    indices = buffer.sample_indices(0)  # each sub-buffer's rows in chronological order
    rew, done = buffer.rew[indices], buffer.done[indices]
    cut_off = buffer.next(indices) == indices  # the last row written, episode unfinished
    returns, total = [], 0.0
    for step_rew, step_done, step_cut_off in zip(rew, done, cut_off & ~done, strict=True):
        total += float(step_rew)
        if step_done:
            returns.append(total)
        if step_done or step_cut_off:
            total = 0.0
    return np.asarray(returns)


def check_mean_return(buffer: ReplayBuffer, min_return: float, expert: str) -> None:
    """Refuse data of a poor expert: the stored episodes' mean return must reach ``min_return``.

    :param expert: names the expert in the error.
    :raises RuntimeError: if there is no complete episode or the mean return is too low.
    """
    returns = episode_returns(buffer)
    if len(returns) == 0 or returns.mean() < min_return:
        mean = returns.mean() if len(returns) else float("nan")
        raise RuntimeError(
            f"the {expert}'s {len(returns)} episodes return {mean:.1f} on average, "
            f"below the required {min_return}"
        )


def collect_until_expert(
    collect: Callable[[argparse.Namespace], VectorReplayBuffer],
    args: argparse.Namespace,
    expert: str,
) -> VectorReplayBuffer:
    """Train an expert and collect its data with seeds ``args.seed``, ``args.seed + 1``, ...
    (``args.seed_attempts`` at most) until the data's mean episode return reaches
    ``args.min_return``; save that buffer to ``args.save_buffer_name`` and return it.

    A later seed is tried only when an expert falls short, so a change elsewhere in the library
    that alters the random stream costs one more expert instead of failing the offline tests.

    :param collect: trains an expert with the given settings and returns the buffer it collected.
    :param args: the settings; only their ``seed`` differs between attempts.
    :param expert: names the expert in errors.
    :raises RuntimeError: listing each seed's shortfall if no seed gives good enough data.
    """
    failures = []
    for seed in range(args.seed, args.seed + args.seed_attempts):
        buffer = collect(argparse.Namespace(**{**vars(args), "seed": seed}))
        try:
            check_mean_return(buffer, args.min_return, f"{expert} of seed {seed}")
        except RuntimeError as failure:
            failures.append(str(failure))
            continue
        save_atomically(buffer, args.save_buffer_name)
        return buffer
    raise RuntimeError("; ".join(failures) or "no seed to try")


def seeded_envs(task: str, num: int, seed: int) -> DummyVectorEnv:
    """``num`` envs of ``task`` in a :class:`DummyVectorEnv`, seeded ``seed``, ``seed + 1``, ..."""
    envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(num)])
    envs.seed(seed)
    return envs


def main(gather_data: Callable[[], VectorReplayBuffer]) -> None:
    """Gather a buffer from the command line and print its size, mean return and wall time."""
    torch.set_num_threads(1)
    start = time.perf_counter()
    buffer = gather_data()
    returns = episode_returns(buffer)
    print(
        f"{len(buffer)} transitions, {len(returns)} episodes, mean return "
        f"{returns.mean():.1f} +- {returns.std():.1f}, {time.perf_counter() - start:.1f} s"
    )
