"""MuJoCo tasks in the high-level API: an env factory that normalises observations and saves
their statistics with the policy.

:class:`MujocoEnvFactory` makes the choices of :func:`~tianshou.env.mujoco.make_mujoco_env` (the
procedural scripts' envs) for the high-level example scripts (``examples/mujoco/*_hl.py``).
"""

import os

from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.env.mujoco import envpool_knows
from tianshou.env.obs_norm_file import OBS_RMS_FILE, array_obs_rms, load_obs_rms, save_obs_rms
from tianshou.highlevel.env import (
    ContinuousEnvironments,
    EnvFactoryRegistered,
    EnvPoolFactory,
    VectorEnvType,
)
from tianshou.highlevel.persistence import Persistence, PersistEvent, RestoreEvent
from tianshou.highlevel.world import World
from tianshou.utils.statistics import RunningMeanStd


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


class MujocoEnvFactory(EnvFactoryRegistered):
    """Builds the envs of a MuJoCo task for the high-level API, optionally normalising
    observations.

    With ``obs_norm`` the training envs normalise observations by running statistics, and the
    test and watch envs use the same statistics object, frozen (they see the training envs'
    current statistics without changing them); the statistics are saved and restored with the
    policy (:class:`MujocoEnvObsRmsPersistence`).

    :param task: a gymnasium MuJoCo task, e.g. ``"Hopper-v5"``.
    :param obs_norm: whether to normalise observations.
    :param venv_type: how training and test envs run when EnvPool is not used.
    :param use_envpool_if_available: build the training and test envs with EnvPool (much
        faster) when it is installed and knows the task, as :func:`make_mujoco_env` does.
    """

    def __init__(
        self,
        task: str,
        obs_norm: bool = True,
        venv_type: VectorEnvType = VectorEnvType.SUBPROC_SHARED_MEM_AUTO,
        use_envpool_if_available: bool = True,
    ) -> None:
        use_envpool = use_envpool_if_available and envpool_knows(task)
        super().__init__(
            task=task,
            venv_type=venv_type,
            envpool_factory=EnvPoolFactory() if use_envpool else None,
        )
        self.obs_norm = obs_norm

    def create_envs(
        self,
        num_training_envs: int,
        num_test_envs: int,
        create_watch_env: bool = False,
        seed: int | None = None,
    ) -> ContinuousEnvironments:
        envs = super().create_envs(num_training_envs, num_test_envs, create_watch_env, seed)
        if not isinstance(envs, ContinuousEnvironments):
            raise ValueError(
                f"MujocoEnvFactory needs a task with a continuous (Box) action space; "
                f"{self.task} has {envs.get_action_space()}"
            )
        if self.obs_norm:
            training_envs = VectorEnvNormObs(envs.training_envs)
            envs.training_envs = training_envs
            obs_rms = array_obs_rms(training_envs)
            envs.test_envs = _frozen_obs_norm(envs.test_envs, obs_rms)
            if envs.watch_env is not None:
                envs.watch_env = _frozen_obs_norm(envs.watch_env, obs_rms)
            envs.set_persistence(MujocoEnvObsRmsPersistence())
        return envs


def _frozen_obs_norm(venv: BaseVectorEnv, obs_rms: RunningMeanStd) -> VectorEnvNormObs:
    """``venv`` normalising observations by ``obs_rms`` without updating it."""
    normalising = VectorEnvNormObs(venv, update_obs_rms=False)
    normalising.set_obs_rms(obs_rms)
    return normalising
