"""Tiny deterministic environments and hand-written policies for the collector tests.

The envs make every collected value predictable: :class:`CountingEnv` counts steps, so an
observation is the step index within the episode, and its episode length is a parameter.
"""

import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, Policy, TrainingStats
from tianshou.data import Batch
from tianshou.env.venvs import DummyVectorEnv, SubprocVectorEnv


class CountingEnv(gym.Env):
    """Observation ``[t, env_index]`` (``t`` = steps since reset); terminates after ``length``
    steps. Reward is ``t`` plus the received action, so returns are known in closed form.

    :param length: episode length.
    :param env_index: constant second observation entry, to tell envs apart.
    :param sleep: seconds each step takes (for asynchronous collection).
    :param dict_obs: return ``{"t": t, "index": [env_index]}`` observations instead.
    """

    def __init__(
        self, length: int, env_index: int = 0, sleep: float = 0.0, dict_obs: bool = False
    ) -> None:
        self.length = length
        self.env_index = env_index
        self.sleep = sleep
        self.dict_obs = dict_obs
        self.t = 0
        self.action_space = gym.spaces.Discrete(2)
        if dict_obs:
            self.observation_space = gym.spaces.Dict(
                {
                    "t": gym.spaces.Box(0, np.inf, (), np.float64),
                    "index": gym.spaces.Box(0, np.inf, (1,), np.int64),
                }
            )
        else:
            self.observation_space = gym.spaces.Box(0, np.inf, (2,), np.float64)

    def _obs(self) -> Any:
        if self.dict_obs:
            return {"t": float(self.t), "index": np.array([self.env_index])}
        return np.array([self.t, self.env_index], dtype=np.float64)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {"t": 0}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        if self.sleep:
            time.sleep(self.sleep)
        self.t += 1
        reward = float(self.t) + float(np.asarray(action).sum())
        return self._obs(), reward, self.t >= self.length, False, {"t": self.t}


class RaggedEnv(gym.Env):
    """Observation ``arange(t + offset + 1)``: its length grows within an episode of 3 steps, so
    envs with different offsets return observations of different shapes."""

    def __init__(self, offset: int) -> None:
        self.offset = offset
        self.t = 0
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0, np.inf, (1,), np.float64)

    def _obs(self) -> np.ndarray:
        return np.arange(self.t + self.offset + 1, dtype=np.float64)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        return self._obs(), 1.0, self.t >= 3, False, {}


class DataSetEnv(gym.Env):
    """Serves a shard of a data set, one item per episode: observation ``[t, item]``, reward
    ``item``, info ``{"item": item}``, ``length`` steps per item.

    A reset after the last item reports ``{"exhausted": True}`` (with a placeholder observation)
    and rewinds the shard, so the next reset serves its first item again: the sub-env of the
    published pattern for evaluating over a data set (see :class:`FiniteVectorEnvMixin`).
    """

    def __init__(self, shard: list[int], length: int) -> None:
        self.shard = shard
        self.length = length
        self.position = 0
        self.item = -1
        self.t = 0
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(-1, np.inf, (2,), np.float64)

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.item], dtype=np.float64)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        if self.position == len(self.shard):
            self.position, self.item = 0, -1
            return self._obs(), {"item": -1, "exhausted": True}
        self.item = self.shard[self.position]
        self.position += 1
        return self._obs(), {"item": self.item, "exhausted": False}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        return self._obs(), float(self.item), self.t >= self.length, False, {"item": self.item}


class FiniteVectorEnvMixin:
    """Makes a vector env of :class:`DataSetEnv` finite, as the published library's pattern
    does: once every sub-env has run out of items, ``reset`` starts the next pass over the data
    set in every env and raises ``StopIteration``.

    :attr:`reset_calls` counts the resets asked for from outside (by the collector).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reset_calls = 0
        self.exhausted: set[int] = set()

    def reset(self, env_id: Any = None, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        self.reset_calls += 1
        obs, info = super().reset(env_id, **kwargs)  # type: ignore[misc]
        self.exhausted.update(int(row["env_id"]) for row in info if row["exhausted"])
        if len(self.exhausted) == len(self):  # type: ignore[arg-type]
            self.exhausted.clear()
            super().reset()  # type: ignore[misc]
            raise StopIteration("the data set is exhausted")
        return obs, info


class FiniteDummyVectorEnv(FiniteVectorEnvMixin, DummyVectorEnv):
    """A finite :class:`DummyVectorEnv` (see :class:`FiniteVectorEnvMixin`)."""


class FiniteSubprocVectorEnv(FiniteVectorEnvMixin, SubprocVectorEnv):
    """A finite :class:`SubprocVectorEnv` (see :class:`FiniteVectorEnvMixin`)."""


class EchoActionEnv(gym.Env):
    """A 1-d ``Box(-2, 2)`` action env whose reward is the action it received (to check the
    mapping between stored and executed actions); episodes last ``length`` steps."""

    def __init__(self, length: int = 5) -> None:
        self.length = length
        self.t = 0
        self.action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.action_space.seed(seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        return np.full(1, self.t, np.float32), float(action[0]), False, self.t >= self.length, {}


class ConstantPolicy(Policy):
    """Always action ``value``; stores ``policy.twice_t`` (2 * observed t) and records the mode
    it was called in."""

    def __init__(self, action_space: gym.Space, value: int = 1) -> None:
        super().__init__(action_space=action_space)
        self.value = value
        self.layer = nn.Linear(1, 1)
        self.calls: list[tuple[bool, bool]] = []

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        self.calls.append((self.training, torch.is_grad_enabled()))
        obs = batch.obs
        if isinstance(obs, Batch):
            t = np.asarray(obs.t)
        elif obs.dtype == object:  # ragged rows
            t = np.array([row[0] for row in obs], dtype=float)
        else:
            t = obs[:, 0]
        act = np.full(len(t), self.value)
        return Batch(act=act, policy=Batch(twice_t=2.0 * t))


class CountingRecurrentPolicy(Policy):
    """Hidden state = number of steps acted since the env's episode began (per env row); also
    returns a Categorical ``dist`` for the distribution statistics."""

    def __init__(self, action_space: gym.Space) -> None:
        super().__init__(action_space=action_space)

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        n = len(batch.obs)
        prev = torch.zeros(n, 1) if state is None else state
        logits = torch.zeros(n, 2)
        return Batch(
            act=torch.zeros(n, dtype=torch.long),
            state=prev + 1,
            dist=torch.distributions.Categorical(logits=logits),
        )


class ScaledPolicy(Policy):
    """A continuous policy emitting the raw action ``raw`` with action scaling to ``[-2, 2]``."""

    def __init__(self, action_space: gym.Space, raw: float = 0.5) -> None:
        super().__init__(action_space=action_space, action_scaling=True)
        self.raw = raw

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=np.full((len(batch.obs), 1), self.raw, dtype=np.float32))


class MLPPolicy(Policy):
    """Greedy policy over a small fixed-seed MLP (argmax of logits)."""

    def __init__(self, obs_dim: int, action_space: gym.Space) -> None:
        assert isinstance(action_space, gym.spaces.Discrete)
        super().__init__(action_space=action_space)
        torch.manual_seed(0)
        n_actions = int(action_space.n)
        self.net = nn.Sequential(nn.Linear(obs_dim, 16), nn.Tanh(), nn.Linear(16, n_actions))

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        logits = self.net(torch.as_tensor(batch.obs, dtype=torch.float32))
        return Batch(act=logits.argmax(dim=-1), logits=logits)


class NoOpAlgorithm(OffPolicyAlgorithm[Policy]):
    """A real ``Algorithm`` that never changes its policy: collectors accept algorithms as well
    as policies, and must act with the algorithm's policy."""

    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        return TrainingStats()
