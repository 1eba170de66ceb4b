"""EnvPool's Atari envs, adapted to behave like the gymnasium path of :mod:`.atari_wrapper`."""

import re
from typing import Any

import gymnasium as gym
import numpy as np


def envpool_task(task: str) -> str:
    """EnvPool's name of a gymnasium ALE task: ``"PongNoFrameskip-v4"`` -> ``"Pong-v5"``."""
    match = re.fullmatch(r"(?:ALE/)?([A-Za-z0-9]+?)(?:NoFrameskip)?-v\d+", task)
    if match is None:
        return task
    game = match.group(1)
    return f"{game[0].upper()}{game[1:]}-v5"


class EnvPoolAtariVenv:
    """An EnvPool Atari env with the semantics of the gymnasium path where EnvPool's differ.

    - After a lost life (episodic life), ``reset`` of that env continues the game, as
      :class:`~tianshou.env.atari.atari_wrapper.EpisodicLifeEnv` does. EnvPool's own ``reset``
      would restart it, so such envs are stepped once instead, which EnvPool answers with the
      game continued (the action is ignored).
    - With ``scale``, observations are divided by 255 into ``float32``.

    Everything else is read from the EnvPool env.

    :param venv: an EnvPool env made with ``env_type="gymnasium"``.
    :param continue_after_life_loss: whether lost lives are continued on reset.
    :param scale: whether to scale observations into [0, 1].
    """

    def __init__(self, venv: Any, continue_after_life_loss: bool, scale: bool) -> None:
        self.venv = venv
        self._continue_after_life_loss = continue_after_life_loss
        self._life_lost = np.zeros(len(venv), dtype=bool)
        self._scale = scale
        space = venv.observation_space
        if scale:
            space = gym.spaces.Box(0.0, 1.0, shape=space.shape, dtype=np.float32)
        self.observation_space = space

    def __getattr__(self, key: str) -> Any:
        if key == "venv":  # not set yet, e.g. while unpickling
            raise AttributeError(key)
        return getattr(self.venv, key)

    def __len__(self) -> int:
        return len(self.venv)

    def reset(self, env_id: Any = None, **kwargs: Any) -> tuple[np.ndarray, dict[str, Any]]:
        ids = np.arange(len(self)) if env_id is None else np.atleast_1d(np.asarray(env_id))
        continued = self._life_lost[ids]
        if kwargs.get("seed") is not None or not continued.any():
            obs, info = self.venv.reset(ids, **kwargs)
        else:
            obs, info = self._reset_continuing(ids, continued, kwargs)
        self._life_lost[ids] = False
        return self._observation(obs), info

    def step(self, action: np.ndarray, env_id: Any = None) -> tuple:
        obs, rew, terminated, truncated, info = self.venv.step(action, env_id)
        if self._continue_after_life_loss:
            game_over = info["terminated"].astype(bool) | truncated
            self._life_lost[info["env_id"]] = terminated & ~game_over
        return self._observation(obs), rew, terminated, truncated, info

    def _reset_continuing(
        self, ids: np.ndarray, continued: np.ndarray, kwargs: dict[str, Any]
    ) -> tuple[np.ndarray, dict[str, Any]]:
        parts = []
        if not continued.all():
            parts.append(self.venv.reset(ids[~continued], **kwargs))
        cont_ids = ids[continued]
        obs, _, _, _, info = self.venv.step(np.zeros(len(cont_ids), dtype=np.int64), cont_ids)
        parts.append((obs, info))
        obs = np.concatenate([part[0] for part in parts])
        info = _concat_info([part[1] for part in parts])
        position = {int(env): i for i, env in enumerate(ids)}
        order = np.argsort([position[int(env)] for env in info["env_id"]])
        return obs[order], _take_info(info, order)

    def _observation(self, obs: np.ndarray) -> np.ndarray:
        return obs.astype(np.float32) / 255.0 if self._scale else obs


def _concat_info(infos: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        key: _concat_info([info[key] for info in infos])
        if isinstance(value, dict)
        else np.concatenate([info[key] for info in infos])
        for key, value in infos[0].items()
    }


def _take_info(info: dict[str, Any], order: np.ndarray) -> dict[str, Any]:
    return {
        key: _take_info(value, order) if isinstance(value, dict) else value[order]
        for key, value in info.items()
    }


def envpool_knows(task: str) -> bool:
    import envpool

    return task in envpool.list_all_envs()
