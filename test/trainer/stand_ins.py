"""Tiny environments, a switchable policy and stand-in algorithms for the trainer tests.

The stand-in algorithms subclass the real algorithm bases but learn nothing: their
``_update_with_batch`` records what it was given, so the tests can check the trainers'
bookkeeping exactly.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from torch import nn

from tianshou.algorithm.algorithm_base import (
    OfflineAlgorithm,
    OffPolicyAlgorithm,
    OnPolicyAlgorithm,
    Policy,
    TrainingStats,
)
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv


class CountEnv(gym.Env):
    """Episodes of exactly ``length`` steps; each step's reward is ``1 + action``.

    So an episode's return is ``length`` under action 0 and ``2 * length`` under action 1.

    :param nan_reward_at: if given, the reward of this step index (1-based) is NaN.
    """

    def __init__(self, length: int = 5, nan_reward_at: int | None = None) -> None:
        self.length = length
        self.nan_reward_at = nan_reward_at
        self.t = 0
        self.action_space = gym.spaces.Discrete(2)
        self.observation_space = gym.spaces.Box(0.0, np.inf, (1,), np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        reward = np.nan if self.t == self.nan_reward_at else 1.0 + float(action)
        return np.full(1, self.t, np.float32), reward, self.t >= self.length, False, {}


class SwitchPolicy(Policy):
    """Acts ``level`` (0 or 1) everywhere; the stand-in algorithms raise the level to 1."""

    def __init__(self, action_space: gym.Space) -> None:
        super().__init__(action_space=action_space, action_bound_method=None)
        self.level = 0
        self.layer = nn.Linear(1, 1)

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=np.full(len(batch.obs), self.level))


class RandomDiscretePolicy(Policy):
    """Uniformly random actions from a seeded generator (for CartPole smoke runs)."""

    def __init__(self, action_space: gym.spaces.Discrete, seed: int = 0) -> None:
        super().__init__(action_space=action_space, action_bound_method=None)
        self.num_actions = int(action_space.n)
        self.rng = np.random.default_rng(seed)
        self.layer = nn.Linear(1, 1)

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=self.rng.integers(self.num_actions, size=len(batch.obs)))


@dataclass(kw_only=True)
class StandInStats(TrainingStats):
    """An update's result: a fake loss equal to the number of updates so far."""

    loss: float


class _Recorder:
    """Records updates; switches the policy to action 1 after ``switch_after`` updates."""

    policy: SwitchPolicy

    def _init_recorder(self, switch_after: int | None) -> None:
        self.switch_after = switch_after
        self.calls: list[dict[str, Any]] = []

    def _record(self, **call: Any) -> StandInStats:
        self.calls.append(call)
        if self.switch_after is not None and len(self.calls) >= self.switch_after:
            self.policy.level = 1
        return StandInStats(loss=float(len(self.calls)))


class StandInOffPolicy(_Recorder, OffPolicyAlgorithm[SwitchPolicy]):
    """An off-policy algorithm that learns nothing; it records each sampled mini-batch's size."""

    def __init__(self, policy: SwitchPolicy, switch_after: int | None = None) -> None:
        super().__init__(policy=policy)
        self._init_recorder(switch_after)

    def _update_with_batch(self, batch: Batch) -> StandInStats:
        return self._record(batch_len=len(batch))


class StandInOnPolicy(_Recorder, OnPolicyAlgorithm[SwitchPolicy]):
    """An on-policy algorithm that learns nothing; it records the rollout size and settings."""

    def __init__(self, policy: SwitchPolicy, switch_after: int | None = None) -> None:
        super().__init__(policy=policy)
        self._init_recorder(switch_after)

    def _update_with_batch(self, batch: Batch, batch_size: int | None, repeat: int) -> StandInStats:
        return self._record(batch_size=batch_size, repeat=repeat, buffer_len=len(batch))


class StandInOffline(_Recorder, OfflineAlgorithm[SwitchPolicy]):
    """An offline algorithm that learns nothing; ``process_buffer`` remembers its buffer."""

    def __init__(self, policy: SwitchPolicy, switch_after: int | None = None) -> None:
        super().__init__(policy=policy)
        self._init_recorder(switch_after)

    def process_buffer(self, buffer: ReplayBuffer) -> ReplayBuffer:
        self.processed = buffer
        return buffer

    def _update_with_batch(self, batch: Batch) -> StandInStats:
        return self._record(batch_len=len(batch))


def count_env_collectors(
    policy: Policy,
    num_envs: int = 2,
    length: int = 5,
    buffer_size: int = 100,
    nan_reward_at: int | None = None,
) -> tuple[Collector, Collector]:
    """A training collector (with a vector buffer) and a test collector over ``CountEnv``s."""
    train_envs = DummyVectorEnv([lambda: CountEnv(length, nan_reward_at) for _ in range(num_envs)])
    test_envs = DummyVectorEnv([lambda: CountEnv(length) for _ in range(num_envs)])
    buffer = VectorReplayBuffer(buffer_size, num_envs)
    return Collector(policy, train_envs, buffer), Collector(policy, test_envs)
