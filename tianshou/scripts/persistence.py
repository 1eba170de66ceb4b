"""Saving and restoring a procedural script's run: the algorithm's state, the observation
statistics of observation-normalising envs and, in an off-policy run's checkpoints, the replay
buffer.

Shared by the MuJoCo and offline example scripts (and the benchmark runners), so that a policy
saved by one is loaded the same way by another. A policy trained on normalised observations is
only valid with the statistics it was trained on, so they are saved next to the policy
(:data:`~tianshou.env.obs_norm_file.OBS_RMS_FILE`, plain arrays whose loading runs no code).

An off-policy run resumed from a checkpoint continues with the transitions it had collected, so
its checkpoints also hold the replay buffer (:data:`BUFFER_FILE`, see :func:`save_replay_buffer`):
without it, the resumed run would start from an empty buffer and collect its random warm-up again.
"""

import argparse
import os
from collections.abc import Callable, Sequence

import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import VectorReplayBuffer
from tianshou.distributed.rank_group import current_rank_group
from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.env.obs_norm_file import OBS_RMS_FILE, array_obs_rms, load_obs_rms, save_obs_rms
from tianshou.utils.statistics import RunningMeanStd

POLICY_FILE = "policy.pth"
"""The file name of a saved algorithm state (networks and optimisers)."""
CHECKPOINT_DIR = "checkpoint"
"""The folder of a run's log directory that holds its latest checkpoint."""
BUFFER_FILE = "buffer.hdf5"
"""The file name of a checkpoint's replay buffer."""


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


def replay_buffer_path(policy_path: str, rank: int = 0) -> str:
    """Where the replay buffer of the checkpoint holding ``policy_path`` is (beside it): the
    buffer of ``rank`` of a data-parallel run (every rank saves its own), :data:`BUFFER_FILE`
    for rank 0 and for a single process."""
    name = BUFFER_FILE if rank == 0 else f"buffer.rank{rank}.hdf5"
    return os.path.join(os.path.dirname(policy_path), name)


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
    In a data-parallel run, rank 0 saves the state and every rank its own buffer (see
    :func:`replay_buffer_path`).

    Each file is written aside first and then moved into place, so that a run killed while
    saving still leaves the previous epoch's complete files.
    """
    if not args.save_checkpoints:
        return None
    ranks = current_rank_group()
    directory = os.path.join(log_path, CHECKPOINT_DIR)
    staging = directory + (".partial" if ranks.rank == 0 else f".partial.rank{ranks.rank}")
    policy_path = os.path.join(directory, POLICY_FILE)
    buffer_file = os.path.basename(replay_buffer_path(policy_path, ranks.rank))

    def save(epoch: int, env_step: int, update_step: int) -> str:
        os.makedirs(staging, exist_ok=True)
        os.makedirs(directory, exist_ok=True)
        if ranks.is_reporting:  # the state every rank shares
            save_algorithm(algorithm, train_envs, staging)
        if buffer is not None:  # each rank's own
            save_replay_buffer(buffer, os.path.join(staging, buffer_file))
        for name in os.listdir(staging):
            os.replace(os.path.join(staging, name), os.path.join(directory, name))
        os.rmdir(staging)
        return policy_path

    return save
