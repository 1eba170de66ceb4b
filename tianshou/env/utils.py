"""Small shared pieces of the env layer: the pickling helper for subprocesses and type aliases."""

from typing import TYPE_CHECKING, Any, TypeAlias

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:
    from tianshou.env.pettingzoo_env import PettingZooEnv

ENV_TYPE: TypeAlias = "gym.Env | PettingZooEnv"
"""What an ``env_fn`` of a vector env may return."""

gym_new_venv_step_type: TypeAlias = tuple[
    np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray
]
"""The stacked ``(obs, rew, terminated, truncated, info)`` returned by ``BaseVectorEnv.step``."""


class CloudpickleWrapper:
    """Carries an object (typically an ``env_fn`` lambda) across a process boundary.

    The standard pickler cannot serialise lambdas or closures, which is how env factories are
    usually written, so the wrapped object is pickled with cloudpickle instead.

    :param data: the object to carry; available again as ``.data`` after unpickling.
    """

    def __init__(self, data: Any) -> None:
        self.data = data

    def __getstate__(self) -> bytes:
        import cloudpickle

        return cloudpickle.dumps(self.data)

    def __setstate__(self, data: bytes) -> None:
        import cloudpickle

        self.data = cloudpickle.loads(data)
