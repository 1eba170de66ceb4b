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

import numpy as np
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import VectorReplayBuffer
from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.highlevel.persistence import Persistence, PersistEvent, RestoreEvent
from tianshou.highlevel.world import World
from tianshou.utils.statistics import RunningMeanStd

POLICY_FILE = "policy.pth"
OBS_RMS_FILE = "obs_rms.npz"
CHECKPOINT_DIR = "checkpoint"
BUFFER_FILE = "buffer.hdf5"


def array_obs_rms(envs: VectorEnvNormObs) -> RunningMeanStd:
    """The observation statistics of ``envs``, which normalise MuJoCo's array observations
    (one :class:`RunningMeanStd`, not the per-key statistics of dict observations)."""
    obs_rms = envs.get_obs_rms()
    if not isinstance(obs_rms, RunningMeanStd):
        raise TypeError(f"expected statistics of array observations, got {type(obs_rms).__name__}")
    return obs_rms


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
        save_obs_rms(array_obs_rms(train_envs), os.path.join(log_path, OBS_RMS_FILE))


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


def save_replay_buffer(buffer: VectorReplayBuffer, path: str) -> None:
    """Write ``buffer`` to the HDF5 file ``path`` (:meth:`~tianshou.data.ReplayBuffer.save_hdf5`:
    its stored transitions, counters and sampling random generator, read without unpickling;
    written aside and renamed, so a process killed while writing leaves the previous file).
    """
    buffer.save_hdf5(path)


def load_replay_buffer(path: str, buffer_size: int, num_envs: int) -> VectorReplayBuffer:
    """Read the buffer :func:`save_replay_buffer` wrote to ``path``, checking that it is the
    buffer of a run with ``--buffer-size`` ``buffer_size`` and ``num_envs`` training envs.

    The transitions are in the rows they were in and the counters and the sampling random
    generator are restored, so adding and sampling go on as if the run had not been interrupted.

    :raises BufferFileError: naming ``path`` if the file is unreadable, truncated or corrupted.
    :raises ValueError: if the saved buffer has another size or number of sub-buffers (the run
        is resumed with another ``--buffer-size`` or ``--num-train-envs``).
    """
    buffer = VectorReplayBuffer.load_hdf5(path)
    if buffer.maxsize != buffer_size or buffer.buffer_num != num_envs:
        raise ValueError(
            f"{path!r} holds a buffer of {buffer.maxsize} slots in {buffer.buffer_num} "
            f"sub-buffers, but this run's is of {buffer_size} slots for {num_envs} training "
            "envs; resume with the buffer size and number of training envs of the saved run"
        )
    return buffer


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
        save_obs_rms(array_obs_rms(training_envs), tmp_path)
        os.replace(tmp_path, path)

    def restore(self, event: RestoreEvent, world: World) -> None:
        if event != RestoreEvent.RESTORE_POLICY:
            return
        obs_rms = load_obs_rms(world.restore_path(self.FILENAME))
        for venv in (world.envs.training_envs, world.envs.test_envs, world.envs.watch_env):
            if isinstance(venv, VectorEnvNormObs):
                venv.set_obs_rms(obs_rms)
