"""Saving and restoring a MuJoCo run: the algorithm's state, the observation statistics and,
in an off-policy run's checkpoints, the replay buffer.

A policy trained on normalised observations is only valid with the statistics it was trained
on, so they are saved next to the policy (:data:`OBS_RMS_FILE`, plain arrays whose loading runs
no code) by the procedural scripts (:func:`save_algorithm`, :func:`checkpoint_saver`) and by the
high-level ones (:class:`MujocoEnvObsRmsPersistence`).

An off-policy run resumed from a checkpoint continues with the transitions it had collected, so
its checkpoints also hold the replay buffer (:data:`BUFFER_FILE`, see :func:`save_replay_buffer`):
without it, the resumed run would start from an empty buffer and collect its random warm-up again.
"""

import argparse
import os
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Batch, ReplayBuffer, ReplayBufferManager, VectorReplayBuffer
from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.highlevel.persistence import Persistence, PersistEvent, RestoreEvent
from tianshou.highlevel.world import World
from tianshou.utils.statistics import RunningMeanStd

POLICY_FILE = "policy.pth"
OBS_RMS_FILE = "obs_rms.npz"
CHECKPOINT_DIR = "checkpoint"
BUFFER_FILE = "buffer.hdf5"


def save_obs_rms(obs_rms: RunningMeanStd, path: str) -> None:
    """Write observation statistics as plain arrays (``.npz``; loading them runs no code)."""
    np.savez(
        path,
        mean=np.asarray(obs_rms.mean, dtype=np.float64),
        var=np.asarray(obs_rms.var, dtype=np.float64),
        count=np.asarray(obs_rms.count, dtype=np.float64),
        clip_max=np.asarray(obs_rms.clip_max or 0.0, dtype=np.float64),
        eps=np.asarray(obs_rms.eps, dtype=np.float64),
    )


def load_obs_rms(path: str) -> RunningMeanStd:
    """Read statistics written by :func:`save_obs_rms`."""
    with np.load(path, allow_pickle=False) as data:
        obs_rms = RunningMeanStd(
            mean=data["mean"],
            std=data["var"],
            clip_max=float(data["clip_max"]) or None,
            epsilon=float(data["eps"]),
        )
        obs_rms.count = float(data["count"])  # type: ignore[assignment]
    return obs_rms


def save_algorithm(algorithm: Algorithm, train_envs: BaseVectorEnv, log_path: str) -> None:
    """Save the algorithm's state (networks and optimisers) and, if used, the observation stats."""
    torch.save(algorithm.state_dict(), os.path.join(log_path, POLICY_FILE))
    if isinstance(train_envs, VectorEnvNormObs):
        save_obs_rms(train_envs.get_obs_rms(), os.path.join(log_path, OBS_RMS_FILE))


def load_algorithm(
    algorithm: Algorithm,
    path: str,
    device: str | torch.device,
    envs: Sequence[BaseVectorEnv] = (),
) -> RunningMeanStd | None:
    """Restore a state saved by :func:`save_algorithm` (networks and optimisers).

    The observation statistics saved next to ``path`` (if any) are given to every
    observation-normalising env of ``envs`` and returned: a policy is only valid with them.
    """
    state = torch.load(path, map_location=device, weights_only=True)
    algorithm.load_state_dict(state)
    rms_path = os.path.join(os.path.dirname(path), OBS_RMS_FILE)
    if not os.path.exists(rms_path):
        return None
    obs_rms = load_obs_rms(rms_path)
    for venv in envs:
        if isinstance(venv, VectorEnvNormObs):
            venv.set_obs_rms(obs_rms)
    return obs_rms


def replay_buffer_path(policy_path: str) -> str:
    """Where the replay buffer of the checkpoint holding ``policy_path`` is (beside it)."""
    return os.path.join(os.path.dirname(policy_path), BUFFER_FILE)


def compact_replay_buffer(buffer: VectorReplayBuffer) -> ReplayBufferManager:
    """A copy of ``buffer`` holding only its stored transitions, for a small file.

    A training buffer is mostly empty (a million slots of which a run fills a fraction), and a
    sub-buffer that has not wrapped around yet holds its transitions in its first rows. The copy
    has one sub-buffer per sub-buffer of ``buffer``, cut after the slot the next transition goes
    to (the whole sub-buffer once it is full), so the stored rows keep their order and the
    counters (insertion slot, size, last row, running episode) stay valid as they are. The copy
    also takes over the random generator that ``buffer.sample`` draws from.

    :param buffer: a vector buffer of plain :class:`~tianshou.data.ReplayBuffer` sub-buffers
        (prioritized and hindsight buffers keep more state than is copied here).
    """
    if type(buffer) is not VectorReplayBuffer:
        raise TypeError(f"only a VectorReplayBuffer can be compacted, got {type(buffer).__name__}")
    maxsizes = buffer.subbuffer_edges[1:] - buffer.subbuffer_edges[:-1]
    sizes = np.minimum(np.asarray([len(sub) for sub in buffer.buffers]) + 1, maxsizes)
    compact = ReplayBufferManager([ReplayBuffer(int(size), **buffer.options) for size in sizes])
    if not buffer._meta.is_empty():
        starts = buffer.subbuffer_edges[:-1]
        rows = np.concatenate(
            [start + np.arange(size) for start, size in zip(starts, sizes, strict=True)]
        )
        compact.set_batch(buffer._meta[rows])
    if compact._rew_shape != buffer._rew_shape:
        compact._set_reward_shape(buffer._rew_shape)
    compact._istate[:] = buffer._istate
    compact._ep_ret[:] = buffer._ep_ret
    compact._random_state.set_state(buffer._random_state.get_state())
    return compact


def save_replay_buffer(buffer: VectorReplayBuffer, path: str) -> None:
    """Write the stored transitions and counters of ``buffer`` (:func:`compact_replay_buffer`)
    to the HDF5 file ``path``, with the library's buffer format (read without unpickling).

    The file is written aside first and then moved into place, so that a process killed while
    writing leaves the previous file intact.
    """
    tmp_path = path + ".tmp"
    compact_replay_buffer(buffer).save_hdf5(tmp_path)
    os.replace(tmp_path, path)


def load_replay_buffer(buffer: VectorReplayBuffer, path: str) -> None:
    """Fill the empty ``buffer`` with what :func:`save_replay_buffer` wrote to ``path``.

    The transitions go back to the rows they were in and the counters and the sampling random
    generator are restored, so adding and sampling go on as if the run had not been interrupted.

    :raises BufferFileError: naming ``path`` if the file is unreadable, truncated or corrupted.
    :raises ValueError: if ``buffer`` has another number of sub-buffers, other options, or
        sub-buffers too small for the saved transitions (the run was resumed with another
        ``--buffer-size`` or ``--num-train-envs``).
    """
    if len(buffer):
        raise ValueError(
            f"load {path!r} into an empty buffer, not one of {len(buffer)} transitions"
        )
    saved = ReplayBufferManager.load_hdf5(path)
    maxsizes = buffer.subbuffer_edges[1:] - buffer.subbuffer_edges[:-1]
    saved_sizes = saved.subbuffer_edges[1:] - saved.subbuffer_edges[:-1]
    lengths = np.asarray([len(sub) for sub in saved.buffers])
    # a saved sub-buffer smaller than this one must have a free slot, i.e. it never wrapped
    fits = saved.buffer_num == buffer.buffer_num and bool(
        np.all((saved_sizes == maxsizes) | ((lengths < saved_sizes) & (saved_sizes <= maxsizes)))
    )
    if not fits or saved.options != buffer.options:
        raise ValueError(
            f"{path!r} holds {saved.buffer_num} sub-buffers with {lengths.tolist()} transitions "
            f"(options {saved.options}), which do not fit a buffer of {buffer.buffer_num} "
            f"sub-buffers of {maxsizes.tolist()} slots (options {buffer.options}); resume with "
            "the buffer size and number of training envs of the saved run"
        )
    stored = saved._meta
    if not stored.is_empty():
        storage = cast(
            Batch,
            stored.apply_values_transform(
                lambda column: np.zeros((buffer.maxsize, *column.shape[1:]), dtype=column.dtype)
            ),
        )
        starts = zip(
            buffer.subbuffer_edges[:-1], saved.subbuffer_edges[:-1], saved_sizes, strict=True
        )
        for start, saved_start, size in starts:
            storage[start : start + size] = stored[saved_start : saved_start + size]
        buffer.set_batch(storage)
    if buffer._rew_shape != saved._rew_shape:
        buffer._set_reward_shape(saved._rew_shape)
    buffer._istate[:] = saved._istate
    buffer._ep_ret[:] = saved._ep_ret
    buffer._random_state.set_state(saved._random_state.get_state())


def checkpoint_saver(
    algorithm: Algorithm,
    train_envs: BaseVectorEnv,
    log_path: str,
    args: argparse.Namespace,
    buffer: VectorReplayBuffer | None = None,
) -> Callable[[int, int, int], str] | None:
    """The trainer's ``save_checkpoint_fn`` with ``--save-checkpoints`` (else None): it saves
    the state as :func:`save_algorithm` does and, if given, the training replay ``buffer``
    (:func:`save_replay_buffer`, as :data:`BUFFER_FILE`), into ``<log_path>/checkpoint/``.

    Each file is written aside first and then moved into place, so that a run killed while
    saving still leaves the previous epoch's complete files.
    """
    if not args.save_checkpoints:
        return None
    directory = os.path.join(log_path, CHECKPOINT_DIR)
    staging = directory + ".partial"

    def save(epoch: int, env_step: int, update_step: int) -> str:
        os.makedirs(staging, exist_ok=True)
        os.makedirs(directory, exist_ok=True)
        save_algorithm(algorithm, train_envs, staging)
        if buffer is not None:
            save_replay_buffer(buffer, os.path.join(staging, BUFFER_FILE))
        for name in os.listdir(staging):
            os.replace(os.path.join(staging, name), os.path.join(directory, name))
        os.rmdir(staging)
        return os.path.join(directory, POLICY_FILE)

    return save


class MujocoEnvObsRmsPersistence(Persistence):
    """Saves the training envs' observation statistics with the policy, and restores them.

    A policy trained on normalised observations is only valid with the statistics it was
    trained on; they are written next to the policy as :data:`OBS_RMS_FILE` (plain arrays,
    see :func:`save_obs_rms`) and, on restoring, given to all of the world's
    observation-normalising envs.
    """

    FILENAME = OBS_RMS_FILE

    def persist(self, event: PersistEvent, world: World) -> None:
        if event != PersistEvent.PERSIST_POLICY:
            return
        training_envs = world.envs.training_envs
        if not isinstance(training_envs, VectorEnvNormObs):
            raise TypeError(
                f"{type(self).__name__} needs observation-normalising training envs "
                f"(VectorEnvNormObs), got {type(training_envs).__name__}"
            )
        path = world.persist_path(self.FILENAME)
        tmp_path = path[: -len(".npz")] + ".tmp.npz"  # np.savez keeps a .npz suffix as is
        save_obs_rms(training_envs.get_obs_rms(), tmp_path)
        os.replace(tmp_path, path)

    def restore(self, event: RestoreEvent, world: World) -> None:
        if event != RestoreEvent.RESTORE_POLICY:
            return
        obs_rms = load_obs_rms(world.restore_path(self.FILENAME))
        for venv in (world.envs.training_envs, world.envs.test_envs, world.envs.watch_env):
            if isinstance(venv, VectorEnvNormObs):
                venv.set_obs_rms(obs_rms)
