"""Wrappers around a whole vector env, e.g. to normalise observations across all its envs."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tianshou.env.utils import gym_new_venv_step_type
from tianshou.env.venvs import BaseVectorEnv, IdType
from tianshou.utils.statistics import RunningMeanStd

if TYPE_CHECKING:
    from tianshou.data.batch import Batch


class VectorEnvWrapper(BaseVectorEnv):
    """Base class for wrappers of a vector env; by default everything goes to the wrapped env.

    Attributes the wrapper does not define (``env_num``, ``workers``, ``ready_id``, ...) are read
    from the wrapped env, so a wrapper can stand in wherever a vector env is expected.

    :param venv: the vector env to wrap. Closing the wrapper closes it.
    """

    def __init__(self, venv: BaseVectorEnv) -> None:
        self.venv = venv

    def __getattr__(self, key: str) -> Any:
        # Only called when normal lookup fails; "venv" itself must not recurse (e.g. unpickling).
        if key == "venv":
            raise AttributeError(key)
        return getattr(self.venv, key)

    def __len__(self) -> int:
        return len(self.venv)

    def get_env_attr(self, key: str, id: IdType = None) -> list[Any]:
        return self.venv.get_env_attr(key, id)

    def set_env_attr(self, key: str, value: Any, id: IdType = None) -> None:
        self.venv.set_env_attr(key, value, id)

    def reset(self, env_id: IdType = None, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        return self.venv.reset(env_id, **kwargs)

    def step(
        self, action: "np.ndarray | Batch | None", id: IdType = None
    ) -> gym_new_venv_step_type:
        return self.venv.step(action, id)

    def seed(self, seed: int | Sequence[int | None] | None = None) -> list[Any]:
        return self.venv.seed(seed)

    def render(self, **kwargs: Any) -> list[Any]:
        return self.venv.render(**kwargs)

    def close(self) -> None:
        self.venv.close()


class VectorEnvNormObs(VectorEnvWrapper):
    """Normalises observations by a running mean and standard deviation over all envs.

    Training envs update the statistics with every observation they return; test envs should
    use the training envs' statistics unchanged::

        test_envs = VectorEnvNormObs(test_venv, update_obs_rms=False)
        test_envs.set_obs_rms(train_envs.get_obs_rms())

    Save ``get_obs_rms()`` with a checkpoint, since a policy is only valid with the statistics
    it was trained on.

    Dict observations (of a ``gymnasium.spaces.Dict`` space) are normalised per key, each
    floating-point entry with running statistics of its own; integer and boolean entries
    (``uint8`` images, ``Discrete`` indices, legal-action masks) pass unchanged, since a
    network reads them as pixels, one-hot codes or flags. The statistics are then a dict
    ``{key: RunningMeanStd}``, which ``get_obs_rms``/``set_obs_rms`` pass around alike.

    :param venv: the vector env whose observations (arrays, or dicts of arrays) to normalise.
    :param update_obs_rms: whether observations update the running statistics.
    """

    def __init__(self, venv: BaseVectorEnv, update_obs_rms: bool = True) -> None:
        super().__init__(venv)
        self.update_obs_rms = update_obs_rms
        self.obs_rms: RunningMeanStd | dict[str, RunningMeanStd] = RunningMeanStd()

    def reset(self, env_id: IdType = None, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        obs, info = self.venv.reset(env_id, **kwargs)
        return self._norm_obs(obs), info

    def step(
        self, action: "np.ndarray | Batch | None", id: IdType = None
    ) -> gym_new_venv_step_type:
        obs, rew, terminated, truncated, info = self.venv.step(action, id)
        return self._norm_obs(obs), rew, terminated, truncated, info

    def set_obs_rms(self, obs_rms: RunningMeanStd | dict[str, RunningMeanStd]) -> None:
        """Use ``obs_rms`` (e.g. the training envs' statistics, or a checkpoint's); a dict of
        them, one per key, for dict observations."""
        self.obs_rms = obs_rms

    def get_obs_rms(self) -> RunningMeanStd | dict[str, RunningMeanStd]:
        """The running statistics currently used for normalisation (per key for dict
        observations)."""
        return self.obs_rms

    def _norm_obs(self, obs: np.ndarray) -> np.ndarray:
        if _is_dict_batch(obs):
            return self._norm_dict_obs(obs)
        if isinstance(self.obs_rms, dict):
            raise TypeError(
                "VectorEnvNormObs holds per-key statistics of dict observations, but the env "
                f"returned {type(obs).__name__} observations"
            )
        if self.update_obs_rms:
            self.obs_rms.update(obs)
        return self.obs_rms.norm(obs)

    def _norm_dict_obs(self, obs: np.ndarray) -> np.ndarray:
        """Normalise each floating-point entry of an object array of dict observations."""
        stats = self._per_key_stats()
        columns: dict[str, np.ndarray] = {}
        for key in obs[0]:
            values = np.stack([np.asarray(o[key]) for o in obs])
            if values.dtype.kind != "f":
                continue
            rms = stats.setdefault(key, RunningMeanStd())
            if self.update_obs_rms:
                rms.update(values)
            columns[key] = rms.norm(values).astype(values.dtype)
        result = np.empty(len(obs), dtype=object)
        for i, o in enumerate(obs):
            result[i] = {key: columns[key][i] if key in columns else o[key] for key in o}
        return result

    def _per_key_stats(self) -> dict[str, RunningMeanStd]:
        if isinstance(self.obs_rms, dict):
            return self.obs_rms
        if self.obs_rms.count:
            raise TypeError(
                "VectorEnvNormObs holds statistics of array observations, but the env returned "
                "dict observations; set_obs_rms needs a dict {key: RunningMeanStd} for them"
            )
        self.obs_rms = {}
        return self.obs_rms


def _is_dict_batch(obs: Any) -> bool:
    """Whether ``obs`` is a vector env's stack of dict observations (an object array)."""
    return (
        isinstance(obs, np.ndarray)
        and obs.dtype == object
        and len(obs) > 0
        and isinstance(obs[0], dict)
    )
