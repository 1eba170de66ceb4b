"""Vectorised environments, their workers and wrappers.

``PettingZooEnv`` and ``PettingZooParallelEnv`` are loaded on first access, so that importing this
package does not import ``pettingzoo``; likewise Ray and EnvPool are imported only by the classes
that use them.
"""

from typing import Any

from tianshou.env.envpool import make_envpool_env
from tianshou.env.gym_wrappers import (
    ContinuousToDiscrete,
    MultiDiscreteToDiscrete,
    TruncatedAsTerminated,
)
from tianshou.env.venv_wrappers import VectorEnvNormObs, VectorEnvWrapper
from tianshou.env.venvs import (
    BaseVectorEnv,
    DummyVectorEnv,
    EnvStateError,
    RayVectorEnv,
    ShmemVectorEnv,
    SubprocVectorEnv,
)
from tianshou.env.worker import EnvWorkerError

__all__ = [
    "BaseVectorEnv",
    "ContinuousToDiscrete",
    "DummyVectorEnv",
    "EnvStateError",
    "EnvWorkerError",
    "MultiDiscreteToDiscrete",
    "PettingZooEnv",
    "PettingZooParallelEnv",
    "RayVectorEnv",
    "ShmemVectorEnv",
    "SubprocVectorEnv",
    "TruncatedAsTerminated",
    "VectorEnvNormObs",
    "VectorEnvWrapper",
    "make_envpool_env",
]


def __getattr__(name: str) -> Any:
    if name == "PettingZooEnv":
        from tianshou.env.pettingzoo_env import PettingZooEnv

        return PettingZooEnv
    if name == "PettingZooParallelEnv":
        from tianshou.env.pettingzoo_parallel_env import PettingZooParallelEnv

        return PettingZooParallelEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
