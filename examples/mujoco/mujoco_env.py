"""The environments of the MuJoCo example scripts: seeded vector envs (in-process, subprocess
or EnvPool), optionally normalising observations.

The supported tasks are gymnasium 1.x's ``-v5`` MuJoCo tasks on mujoco (``Hopper-v5``,
``HalfCheetah-v5``, ``Walker2d-v5``, ``Ant-v5``, ``Humanoid-v5``, ...). The procedural scripts
(``mujoco_<algo>.py``) build their envs with :func:`make_mujoco_env`, the high-level ones
(``mujoco_<algo>_hl.py``) with :class:`MujocoEnvFactory`.
"""

from typing import Literal

import gymnasium as gym

from tianshou.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    SubprocVectorEnv,
    VectorEnvNormObs,
    make_envpool_env,
)
from tianshou.highlevel.env import (
    ContinuousEnvironments,
    EnvFactoryRegistered,
    EnvPoolFactory,
    VectorEnvType,
)
from tianshou.utils.statistics import RunningMeanStd

from examples.mujoco.persistence import MujocoEnvObsRmsPersistence, array_obs_rms

VectorBackend = Literal["auto", "dummy", "subproc", "envpool"]


def make_vector_env(
    task: str,
    num_envs: int,
    seed: int,
    backend: VectorBackend = "auto",
    render_mode: str | None = None,
) -> BaseVectorEnv:
    """``num_envs`` seeded copies of ``task`` (env ``i`` gets ``seed + i``).

    :param backend: ``"dummy"`` steps the envs in this process (best for one or two envs, whose
        step is cheaper than a process round trip); ``"subproc"`` uses one process per env;
        ``"envpool"`` uses EnvPool's thread pool (falls back to subprocesses when EnvPool does not
        know the task); ``"auto"`` picks dummy for up to two envs and EnvPool otherwise.
    :param render_mode: gymnasium's render mode for the envs (``"human"`` opens a window). A
        window must belong to this process, so rendering envs always run in-process.
    """
    if render_mode is not None:
        backend = "dummy"
    if backend == "auto":
        backend = "dummy" if num_envs <= 2 else "envpool"
    if backend == "envpool":
        return make_envpool_env(task, num_envs, seed=seed)
    env_fns = [lambda: gym.make(task, render_mode=render_mode) for _ in range(num_envs)]
    venv: BaseVectorEnv = (
        DummyVectorEnv(env_fns) if backend == "dummy" else SubprocVectorEnv(env_fns)
    )
    venv.seed(seed)
    return venv


def make_mujoco_env(
    task: str,
    seed: int,
    num_train_envs: int,
    num_test_envs: int,
    obs_norm: bool,
    backend: VectorBackend = "auto",
    test_render_mode: str | None = None,
) -> tuple[gym.Env, BaseVectorEnv, BaseVectorEnv]:
    """A single env (for its spaces), and the training and test vector envs.

    With ``obs_norm`` the training envs normalise observations with running statistics and the
    test envs use the training envs' statistics, frozen, so that evaluation sees the same input
    scaling the policy was trained on. ``test_render_mode`` is the test envs' render mode
    (``"human"`` to watch a policy).
    """
    env = gym.make(task)
    train_envs = make_vector_env(task, num_train_envs, seed, backend)
    test_envs = make_vector_env(task, num_test_envs, seed + 10_000, backend, test_render_mode)
    if obs_norm:
        train_envs = VectorEnvNormObs(train_envs)
        test_envs = VectorEnvNormObs(test_envs, update_obs_rms=False)
        test_envs.set_obs_rms(train_envs.get_obs_rms())
    return env, train_envs, test_envs


def _envpool_knows(task: str) -> bool:
    try:
        import envpool
    except ImportError:
        return False
    return task in envpool.list_all_envs()


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
        use_envpool = use_envpool_if_available and _envpool_knows(task)
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
