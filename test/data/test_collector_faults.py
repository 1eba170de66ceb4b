"""Faults during collection: what reaches the buffer, what is counted, and that no stored
transition spans the fault. Also the checks at the collector's boundaries: actions against the
action space, and NaN/inf from the envs.

:class:`CountingEnv` observes its step counter ``t``, so every stored transition of a real step
has ``obs_next.t == obs.t + 1``; a transition spanning a fault would not.
"""

import os
import signal
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from test.data.collector_fixtures import ConstantPolicy, CountingEnv, EchoActionEnv, ScaledPolicy
from tianshou.data import Batch, ReplayBuffer, VectorReplayBuffer
from tianshou.data._collect_checks import ActionCheck
from tianshou.data.buffer.buffer_base import MalformedBufferError
from tianshou.data.collector import (
    AsyncCollector,
    Collector,
    CollectorNotResetError,
    InvalidActionError,
    NonFiniteEnvOutputError,
)
from tianshou.env.venvs import DummyVectorEnv, SubprocVectorEnv

DISCRETE = gym.spaces.Discrete(2)
BOX = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)


class FaultyEnv(CountingEnv):
    """A :class:`CountingEnv` whose ``fault_at``-th step call does ``fault`` once ("raise",
    "interrupt" or "kill", the last killing the process it runs in)."""

    def __init__(self, length: int, env_index: int, fault_at: int | None, fault: str) -> None:
        super().__init__(length, env_index)
        self.fault_at = fault_at
        self.fault = fault
        self.calls = 0

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.calls += 1
        if self.calls == self.fault_at:
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault == "interrupt":
                raise KeyboardInterrupt
            raise RuntimeError(f"env {self.env_index} failed at step call {self.calls}")
        return super().step(action)


def faulty_envs(
    venv_cls: type, fault_at: int, fault: str = "raise", length: int = 100, **kwargs: Any
) -> Any:
    """Two envs; env 1 faults at its ``fault_at``-th step call."""
    return venv_cls(
        [
            partial(FaultyEnv, length, 0, None, fault),
            partial(FaultyEnv, length, 1, fault_at, fault),
        ],
        **kwargs,
    )


def assert_no_transition_spans_a_fault(buffer: ReplayBuffer) -> None:
    batch = buffer[:]
    np.testing.assert_array_equal(batch.obs_next[:, 0], batch.obs[:, 0] + 1)


def rows_of_env(buffer: ReplayBuffer, env_index: int) -> np.ndarray:
    batch = buffer[:]
    return batch.obs[batch.obs[:, 1] == env_index, 0]


# ------------------------------------------------------------------ faults
@pytest.mark.parametrize("venv_cls", [DummyVectorEnv, SubprocVectorEnv])
def test_env_error_keeps_completed_steps_and_requires_a_reset(venv_cls: type) -> None:
    envs = faulty_envs(venv_cls, fault_at=6)
    try:
        collector = Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(400, 2))
        collector.reset()
        with pytest.raises(Exception, match="failed at step call 6") as info:
            collector.collect(n_step=100)
        assert any("10 steps" in note for note in getattr(info.value, "__notes__", []))
        assert len(collector.buffer) == 10  # 5 completed vector steps of 2 envs
        assert collector.collect_step == 10
        for env_index in (0, 1):
            np.testing.assert_array_equal(rows_of_env(collector.buffer, env_index), range(5))
        with pytest.raises(CollectorNotResetError, match="interrupted by") as refused:
            collector.collect(n_step=4)
        assert "reset_before_collect=True" in str(refused.value)
        assert len(collector.buffer) == 10
        collector.collect(n_step=4, reset_before_collect=True)
        assert len(collector.buffer) == 14
        assert_no_transition_spans_a_fault(collector.buffer)
        np.testing.assert_array_equal(rows_of_env(collector.buffer, 1), [0, 1, 2, 3, 4, 0, 1])
    finally:
        envs.close()


def test_killed_worker_keeps_completed_steps() -> None:
    envs = faulty_envs(SubprocVectorEnv, fault_at=9, fault="kill")
    try:
        collector = Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(400, 2))
        collector.reset()
        with pytest.raises(Exception):  # noqa: B017 -- the vector env's own error for a lost worker
            collector.collect(n_step=100)
        assert len(collector.buffer) == 16
        assert collector.collect_step == 16
        assert_no_transition_spans_a_fault(collector.buffer)
        with pytest.raises(CollectorNotResetError):
            collector.collect(n_step=2)
    finally:
        envs.close()


def test_keyboard_interrupt_in_the_env_keeps_completed_steps() -> None:
    envs = faulty_envs(DummyVectorEnv, fault_at=4, fault="interrupt", length=3)
    collector = Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(100, 2))
    collector.reset()
    with pytest.raises(KeyboardInterrupt):
        collector.collect(n_episode=10)
    # 3 vector steps (one episode per env); the 4th never returned, so none of it is stored
    assert len(collector.buffer) == 6
    assert (collector.collect_step, collector.collect_episode) == (6, 2)
    assert int(collector.buffer[:].done.sum()) == 2
    collector.collect(n_episode=2, reset_before_collect=True)
    assert_no_transition_spans_a_fault(collector.buffer)


class InterruptingPolicy(ConstantPolicy):
    """Raises ``KeyboardInterrupt`` on its ``interrupt_at``-th call (as Ctrl-C would)."""

    def __init__(self, interrupt_at: int) -> None:
        super().__init__(DISCRETE)
        self.interrupt_at = interrupt_at
        self.n_calls = 0

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        self.n_calls += 1
        if self.n_calls == self.interrupt_at:
            raise KeyboardInterrupt
        return super().forward(batch, state)


@pytest.mark.parametrize("with_step_hook", [False, True])
def test_keyboard_interrupt_in_the_policy_keeps_completed_steps(with_step_hook: bool) -> None:
    envs = DummyVectorEnv([partial(CountingEnv, 4, i) for i in range(3)])
    hook = (lambda action_batch, rollout_batch: None) if with_step_hook else None
    collector = Collector(
        InterruptingPolicy(interrupt_at=8), envs, VectorReplayBuffer(300, 3), on_step_hook=hook
    )
    collector.reset()
    with pytest.raises(KeyboardInterrupt):
        collector.collect(n_step=300)
    assert len(collector.buffer) == 21
    assert (collector.collect_step, collector.collect_episode) == (21, 3)
    collector.collect(n_step=3, reset_before_collect=True)
    assert len(collector.buffer) == 24
    assert_no_transition_spans_a_fault(collector.buffer)
    assert collector.policy.training  # the eval mode of collection was undone


def test_async_collector_keeps_completed_steps_on_a_fault() -> None:
    envs = faulty_envs(DummyVectorEnv, fault_at=5, wait_num=1)
    collector = AsyncCollector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(100, 2))
    collector.reset()
    with pytest.raises(RuntimeError, match="failed at step call 5"):
        collector.collect(n_step=50)
    stored = len(collector.buffer)
    assert stored == collector.collect_step >= 4
    with pytest.raises(CollectorNotResetError):
        collector.collect(n_step=2)
    collector.reset(reset_buffer=False)
    collector.collect(n_step=4)
    assert len(collector.buffer) >= stored + 4
    assert_no_transition_spans_a_fault(collector.buffer)


def test_reset_clears_the_fault() -> None:
    envs = faulty_envs(DummyVectorEnv, fault_at=2)
    collector = Collector(ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(100, 2))
    collector.reset()
    with pytest.raises(RuntimeError):
        collector.collect(n_step=10)
    collector.reset()
    assert len(collector.buffer) == 0
    assert collector.collect(n_step=4).n_collected_steps == 4


# ------------------------------------------------------------------ actions
class FixedActionPolicy(ScaledPolicy):
    """Returns the given action rows (repeated or cut to the batch size)."""

    def __init__(self, rows: np.ndarray) -> None:
        super().__init__(BOX)
        self.rows = rows

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        return Batch(act=self.rows[: len(batch.obs)])


def echo_envs(n: int = 2) -> DummyVectorEnv:
    return DummyVectorEnv([EchoActionEnv for _ in range(n)])


def test_wrong_action_shape_for_a_box_space_is_refused_before_stepping() -> None:
    collector = Collector(FixedActionPolicy(np.zeros((2, 3), np.float32)), echo_envs())
    collector.reset()
    with pytest.raises(InvalidActionError, match=r"shape \(2, 3\).*needs shape \(2, 1\)"):
        collector.collect(n_step=2)
    assert len(collector.buffer) == 0


def test_nan_action_names_the_envs() -> None:
    rows = np.array([[0.1], [np.nan], [np.inf]], dtype=np.float32)
    collector = Collector(FixedActionPolicy(rows), echo_envs(3))
    collector.reset()
    with pytest.raises(InvalidActionError, match=r"NaN or inf actions for envs \[1, 2\]"):
        collector.collect(n_step=3)
    assert len(collector.buffer) == 0


def test_discrete_actions_accept_a_trailing_axis_of_one_but_not_more() -> None:
    class ShapedPolicy(ConstantPolicy):
        def __init__(self, trailing: tuple[int, ...]) -> None:
            super().__init__(DISCRETE)
            self.trailing = trailing

        def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
            return Batch(act=np.ones((len(batch.obs), *self.trailing), dtype=np.int64))

    envs = DummyVectorEnv([partial(CountingEnv, 3, i) for i in range(2)])
    collector = Collector(ShapedPolicy((1,)), envs, VectorReplayBuffer(20, 2))
    collector.reset()
    assert collector.collect(n_step=2).n_collected_steps == 2
    collector = Collector(ShapedPolicy((2,)), envs, VectorReplayBuffer(20, 2))
    collector.reset()
    with pytest.raises(InvalidActionError, match=r"shape \(2, 2\)"):
        collector.collect(n_step=2)


def test_too_few_actions_are_refused() -> None:
    collector = Collector(FixedActionPolicy(np.zeros((1, 1), np.float32)), echo_envs(2))
    collector.reset()
    with pytest.raises(InvalidActionError, match=r"envs \[0, 1\] have shape \(1, 1\)"):
        collector.collect(n_step=2)


def test_valid_and_random_actions_pass_the_check() -> None:
    collector = Collector(ScaledPolicy(BOX), echo_envs())
    collector.reset()
    assert collector.collect(n_step=4).n_collected_steps == 4
    assert collector.collect(n_step=4, random=True).n_collected_steps == 4


def test_env_without_an_action_space_is_stepped_unchecked() -> None:
    class NoSpaceEnv(CountingEnv):
        def __getattribute__(self, name: str) -> Any:
            if name == "action_space":
                raise AttributeError(name)
            return super().__getattribute__(name)

    collector = Collector(ConstantPolicy(DISCRETE), DummyVectorEnv([partial(NoSpaceEnv, 3)]))
    collector.reset()
    assert collector.collect(n_step=4).n_collected_steps == 4
    with pytest.raises(AttributeError, match="action_space"):
        collector.collect(n_step=1, random=True)


# ------------------------------------------------------------------ NaN / inf from the envs
class NaNEnv(CountingEnv):
    """Puts ``value`` into the observation (``"obs"``), the reward (``"rew"``) or the reset
    observation (``"reset"``) at step ``at`` of env index 1."""

    def __init__(self, env_index: int, where: str, value: float = np.nan, at: int = 3) -> None:
        super().__init__(100, env_index)
        self.where, self.value, self.at = where, value, at

    def _bad(self) -> bool:
        return self.env_index == 1 and self.t == self.at

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        obs, info = super().reset(seed=seed)
        if self.where == "reset" and self.env_index == 1:
            obs[0] = self.value
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        obs, rew, term, trunc, info = super().step(action)
        if self._bad() and self.where == "obs":
            obs[0] = self.value
        if self._bad() and self.where == "rew":
            rew = self.value
        return obs, rew, term, trunc, info


def nan_collector(where: str, value: float = np.nan, check: bool = True) -> Collector:
    envs = DummyVectorEnv([partial(NaNEnv, i, where, value) for i in range(3)])
    return Collector(
        ConstantPolicy(DISCRETE), envs, VectorReplayBuffer(300, 3), raise_on_nan_in_buffer=check
    )


@pytest.mark.parametrize(("where", "value"), [("obs", np.nan), ("rew", np.inf)])
def test_non_finite_env_output_is_caught_at_the_step(where: str, value: float) -> None:
    collector = nan_collector(where, value)
    collector.reset()
    with pytest.raises(NonFiniteEnvOutputError, match=rf"{where} from envs \[1\]") as info:
        collector.collect(n_step=30)
    assert isinstance(info.value, MalformedBufferError)
    assert len(collector.buffer) == 6  # the two clean vector steps before it
    assert not collector.buffer.hasnull()


def test_non_finite_reset_observation_is_caught() -> None:
    collector = nan_collector("reset")
    with pytest.raises(NonFiniteEnvOutputError, match=r"reset returned.*obs from envs \[1\]"):
        collector.reset()


def test_non_finite_dict_observation_names_the_key() -> None:
    class NaNDictEnv(CountingEnv):
        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
            obs, rew, term, trunc, info = super().step(action)
            obs["t"] = np.nan
            return obs, rew, term, trunc, info

    envs = DummyVectorEnv([partial(NaNDictEnv, 5, 0, dict_obs=True)])
    collector = Collector(ConstantPolicy(DISCRETE), envs, raise_on_nan_in_buffer=True)
    collector.reset()
    with pytest.raises(NonFiniteEnvOutputError, match=r"obs\.t from envs \[0\]"):
        collector.collect(n_step=1)


def test_non_finite_env_output_is_stored_when_checking_is_off() -> None:
    collector = nan_collector("obs", check=False)
    collector.reset()
    collector.collect(n_step=30)
    assert collector.buffer.hasnull()


def test_action_check_skips_differing_and_composite_spaces() -> None:
    assert ActionCheck.for_spaces([BOX, gym.spaces.Box(-1.0, 1.0, (1,), np.float32)]) is None
    check = ActionCheck.for_spaces([gym.spaces.Dict({"a": BOX})] * 2)
    assert check is not None
    check.check_shape(np.zeros((5, 7)), np.arange(2))  # nothing to check against
    huge = np.full((2, 1), 3e38, dtype=np.float32)  # finite, though their float32 sum is not
    ActionCheck(BOX).check_values(huge, huge, np.arange(2))
    assert not check.values_need_checks
    ActionCheck(BOX).check_shape([0.0], np.arange(1))  # not an array: left to the env
    with pytest.raises(InvalidActionError, match=r"envs \[1\]"):  # a tensor is checked too
        ActionCheck(BOX).check_values(
            np.zeros((2, 1)), torch.tensor([[0.0], [np.inf]]), np.arange(2)
        )
