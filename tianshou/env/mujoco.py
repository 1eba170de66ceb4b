"""Vector environments of MuJoCo tasks: seeded copies stepped in this process, in subprocesses
or by EnvPool (falling back to subprocesses where EnvPool lacks the task), optionally
normalising observations.

The supported tasks are gymnasium 1.x's ``-v5`` MuJoCo tasks on mujoco (``Hopper-v5``,
``HalfCheetah-v5``, ``Walker2d-v5``, ``Ant-v5``, ``Humanoid-v5``, ...). The procedural example
scripts (``examples/mujoco/mujoco_<algo>.py``) build their envs with :func:`make_mujoco_env`;
the high-level ones use :class:`~tianshou.highlevel.mujoco.MujocoEnvFactory`, which makes the
same choices.
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

VectorBackend = Literal["auto", "dummy", "subproc", "envpool"]
"""How :func:`make_vector_env` steps its envs (see there)."""


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
    num_training_envs: int,
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
    train_envs = make_vector_env(task, num_training_envs, seed, backend)
    test_envs = make_vector_env(task, num_test_envs, seed + 10_000, backend, test_render_mode)
    if obs_norm:
        train_envs = VectorEnvNormObs(train_envs)
        test_envs = VectorEnvNormObs(test_envs, update_obs_rms=False)
        test_envs.set_obs_rms(train_envs.get_obs_rms())
    return env, train_envs, test_envs


def envpool_knows(task: str) -> bool:
    """Whether EnvPool is installed and can make ``task``."""
    try:
        import envpool
    except ImportError:
        return False
    return task in envpool.list_all_envs()
