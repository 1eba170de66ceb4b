"""Collectors: let a policy act in vectorised environments and store what happens in a buffer.

:class:`Collector` steps all environments of a synchronous vector env together;
:class:`AsyncCollector` steps whichever environments of an asynchronous one are ready. Both write
transitions ``(obs, act, rew, terminated, truncated, done, obs_next, info, policy)`` to a replay
buffer and return :class:`CollectStats`.

How a collection step works, and why:

* The policy sees ``Batch(obs, info)`` in eval mode under ``torch.no_grad()``; its *raw* action
  (after optional exploration noise) is stored, while :meth:`Policy.map_action` of it goes to the
  envs, so learning never depends on the environment's action scaling. Random collection stores
  :meth:`Policy.map_action_inverse` of the sampled env actions for the same reason.
* Finished envs are reset at once and a recurrent policy's hidden state is cleared for them.
* Transitions of consecutive steps are staged and written with one ``buffer.add`` (see
  :mod:`tianshou.data._rollout`): per-step writes would cost more than stepping cheap envs.
  Buffers whose ``add`` has side effects per call (cached, hindsight or user subclasses) get one
  add per step, as do collectors with a step hook.
* Actions are checked against the action space (shape; NaN/inf for ``Box``) once per step, and
  with ``raise_on_nan_in_buffer`` so are the envs' observations and rewards.
* An error escaping ``collect`` first stores every completed step; the collector then refuses
  to collect until it is reset. A finite env's ``StopIteration`` (its data set is exhausted)
  passes through unchanged, and the next ``collect`` continues without a reset.
* Durations are measured with ``time.monotonic`` of this module's ``time``: patching
  ``tianshou.data.collector.time`` controls them, as with the published library.

The collectors below hold what lasts across calls (the envs' current observations, hooks); one
call's loop, from the policy's action to the buffer write, is :class:`CollectRun` in
:mod:`tianshou.data._collect_run`, the same loop for both collectors. They differ only in the
:class:`~tianshou.data._env_stepping.EnvStepping` they give it, which decides the envs each step
acts for and waits for (:mod:`tianshou.data._env_stepping`).
"""

import time
from collections.abc import Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Generic

import gymnasium as gym
import numpy as np

from tianshou.data._collect_checks import (
    ActionCheck,
    InvalidActionError,
    NonFiniteEnvOutputError,
    check_env_output,
)
from tianshou.data._collect_run import CollectRun
from tianshou.data._env_stepping import (
    EnvCursor,
    EnvStepping,
    LockstepStepping,
    ReadyFirstStepping,
)
from tianshou.data._rollout import InfoRows, VenvObs, as_obs
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.collector_base import (
    DEFAULT_BUFFER_MAXSIZE,
    BaseCollector,
    CollectArgumentError,
    CollectorBufferError,
    CollectorNotResetError,
    TCollectStats,
)
from tianshou.data.collector_hooks import (
    CollectActionBatchProtocol,
    CollectStepBatchProtocol,
    EpisodeBatchProtocol,
    EpisodeRolloutHook,
    EpisodeRolloutHookMCReturn,
    EpisodeRolloutHookMerged,
    EpisodeRolloutHookProtocol,
    StepHook,
    StepHookAddActionDistribution,
    StepHookProtocol,
)
from tianshou.data.collector_stats import (
    CollectStats,
    CollectStatsBase,
    get_stddev_from_dist,
)
from tianshou.env.venvs import BaseVectorEnv

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm, Policy

__all__ = [
    "DEFAULT_BUFFER_MAXSIZE",
    "AsyncCollector",
    "BaseCollector",
    "CollectActionBatchProtocol",
    "CollectArgumentError",
    "CollectStats",
    "CollectStatsBase",
    "CollectStepBatchProtocol",
    "Collector",
    "CollectorBufferError",
    "CollectorNotResetError",
    "EpisodeBatchProtocol",
    "EpisodeRolloutHook",
    "EpisodeRolloutHookMCReturn",
    "EpisodeRolloutHookMerged",
    "EpisodeRolloutHookProtocol",
    "InvalidActionError",
    "NonFiniteEnvOutputError",
    "StepHook",
    "StepHookAddActionDistribution",
    "StepHookProtocol",
    "get_stddev_from_dist",
]


class Collector(BaseCollector[TCollectStats], Generic[TCollectStats]):
    """Collects from a synchronous vector env: all envs step together.

    With ``n_episode``, collection is unbiased: only ``min(env_num, n_episode)`` envs start, and
    envs that finish an episode while fewer episodes remain to be collected than envs are running
    are retired, so short episodes are not over-represented.

    :param on_episode_done_hook: called with each finished episode (read back from the buffer);
        the arrays it returns are stored next to the episode's transitions.
    :param on_step_hook: called after each step with the action batch and the rollout batch
        (before it is stored), e.g. :class:`StepHookAddActionDistribution`.

    Other parameters as in :class:`BaseCollector`.

    Example::

        collector = Collector[CollectStats](algorithm, envs, VectorReplayBuffer(20000, len(envs)))
        collector.reset()
        stats = collector.collect(n_step=1000)
    """

    def __init__(
        self,
        policy: "Policy | Algorithm",
        env: BaseVectorEnv | gym.Env,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
        on_episode_done_hook: EpisodeRolloutHookProtocol | None = None,
        on_step_hook: StepHookProtocol | None = None,
        raise_on_nan_in_buffer: bool = False,
        collect_stats_class: type[TCollectStats] = CollectStats,  # type: ignore[assignment]
    ) -> None:
        super().__init__(
            policy, env, buffer, exploration_noise, raise_on_nan_in_buffer, collect_stats_class
        )
        if getattr(self.env, "is_async", False) and not isinstance(self, AsyncCollector):
            raise ValueError(
                f"{type(self.env).__name__} is asynchronous (wait_num or timeout set); collect "
                "from it with AsyncCollector"
            )
        self._on_episode_done_hook = on_episode_done_hook
        self._on_step_hook = on_step_hook
        self._cursor: EnvCursor | None = None
        """The envs' current observations, infos and hidden states; None until reset."""

    # ---------------------------------------------------------------- hooks
    def set_on_episode_done_hook(self, hook: EpisodeRolloutHookProtocol | None) -> None:
        """Install (or with None remove) the episode hook."""
        self._on_episode_done_hook = hook

    def set_on_step_hook(self, hook: StepHookProtocol | None) -> None:
        """Install (or with None remove) the step hook."""
        self._on_step_hook = hook

    def get_on_episode_done_hook(self) -> EpisodeRolloutHookProtocol | None:
        return self._on_episode_done_hook

    def get_on_step_hook(self) -> StepHookProtocol | None:
        return self._on_step_hook

    def run_on_episode_done(self, episode_batch: Batch) -> dict[str, np.ndarray] | None:
        """The episode hook's additions for ``episode_batch`` (None without a hook)."""
        if self._on_episode_done_hook is None:
            return None
        return self._on_episode_done_hook(episode_batch)

    def run_on_step_hook(self, action_batch: Batch, rollout_batch: Batch) -> None:
        """Let the step hook (if any) extend ``rollout_batch``."""
        if self._on_step_hook is not None:
            self._on_step_hook(action_batch, rollout_batch)

    # ---------------------------------------------------------------- resets
    def reset_env(
        self, gym_reset_kwargs: Mapping[str, object] | None = None
    ) -> tuple[VenvObs, InfoRows]:
        obs, info = self.env.reset(env_id=None, **(gym_reset_kwargs or {}))
        obs_rows = as_obs(obs)
        if self.raise_on_nan_in_buffer:
            check_env_output(obs_rows, None, np.arange(self.env_num), "reset")
        self._cursor = EnvCursor(obs_rows, info, None)
        self._fault = None
        return obs, info

    def close(self) -> None:
        super().close()
        self._cursor = None

    def _forget_env_state(self) -> None:
        self._cursor = None

    def _can_continue_after(self, exc: BaseException) -> bool:
        return isinstance(exc, StopIteration) and self._cursor is not None

    def _read_clock(self) -> float:
        # the module attribute ``time`` is looked up at every call, so that patching it counts
        return time.monotonic()

    def _check_is_reset(self) -> EnvCursor:
        """The envs' current state; raises unless the collector was reset since it was built,
        closed, or interrupted."""
        if self._cursor is None:
            why = self._fault or "it has not been reset (or was closed)"
            raise CollectorNotResetError(
                f"{type(self).__name__} cannot collect: {why}. Call collector.reset() "
                "(reset_buffer=False keeps the buffer) or pass reset_before_collect=True"
            )
        return self._cursor

    # ---------------------------------------------------------------- collection
    def _new_run(
        self, stats: TCollectStats, random: bool, gym_reset_kwargs: Mapping[str, object] | None
    ) -> CollectRun:
        """The run of one ``collect`` call, given everything it uses."""
        step_hook = self.run_on_step_hook if self._on_step_hook is not None else None
        episode_hook = self.run_on_episode_done if self._on_episode_done_hook is not None else None
        return CollectRun(
            policy=self.policy,
            env=self.env,
            buffer=self.buffer,
            stats=stats,
            random=random,
            exploration_noise=self.exploration_noise,
            action_spaces=self._action_spaces() if random else None,
            action_check=None if random else self._action_check,
            step_hook=step_hook,
            episode_hook=episode_hook,
            check_env_output=self.raise_on_nan_in_buffer,
            gym_reset_kwargs=gym_reset_kwargs,
        )

    def _action_spaces(self) -> list[gym.Space]:
        spaces = self.action_space
        return list(spaces) if isinstance(spaces, list) else [spaces] * self.env_num

    @cached_property
    def _action_check(self) -> ActionCheck | None:
        """The check of policy actions against the envs' common action space (None without
        one); built on first use, so envs without an action space can still be stepped."""
        try:
            spaces = self._action_spaces()
        except AttributeError:
            return None
        return ActionCheck.for_spaces(spaces) if spaces else None

    def _stepping(self, n_episode: int | None) -> EnvStepping:
        """Which envs each step of a call acts for and waits for: all active envs together."""
        return LockstepStepping(self.env, n_episode)

    def _collect(
        self,
        stats: TCollectStats,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        render: float | None,
        gym_reset_kwargs: Mapping[str, object] | None,
    ) -> None:
        cursor = self._check_is_reset()
        run = self._new_run(stats, random, gym_reset_kwargs)
        try:
            self._cursor = run.collect(cursor, self._stepping(n_episode), n_step, n_episode, render)
        except StopIteration:
            self._cursor = run.exhausted_at  # None unless a finite env's reset raised it
            raise
        if n_episode is not None and self._steps_all_envs_together:
            self.reset_env(gym_reset_kwargs)  # envs retired mid-episode start afresh


class AsyncCollector(Collector[TCollectStats], Generic[TCollectStats]):
    """Collects from an asynchronous vector env (``wait_num``/``timeout`` set): each step acts
    only for the envs that are ready and stores the results of whichever envs finish first.

    Slow envs keep running across steps and across ``collect`` calls, so ``n_step`` and
    ``n_episode`` are lower bounds here: the last step may return several envs at once. Envs
    are not reset after ``n_episode`` collection and no episode-unbiasing is done. Parameters
    as in :class:`Collector`; the NaN check of the buffer is on by default.
    """

    _steps_all_envs_together = False

    def __init__(
        self,
        policy: "Policy | Algorithm",
        env: BaseVectorEnv | gym.Env,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
        on_episode_done_hook: EpisodeRolloutHookProtocol | None = None,
        on_step_hook: StepHookProtocol | None = None,
        raise_on_nan_in_buffer: bool = True,
        collect_stats_class: type[TCollectStats] = CollectStats,  # type: ignore[assignment]
    ) -> None:
        super().__init__(
            policy,
            env,
            buffer,
            exploration_noise,
            on_episode_done_hook,
            on_step_hook,
            raise_on_nan_in_buffer,
            collect_stats_class,
        )
        self._ready_first = ReadyFirstStepping(self.env)
        """Which envs are ready, and the actions sent to the others; lasts across calls."""

    def reset_env(
        self, gym_reset_kwargs: Mapping[str, object] | None = None
    ) -> tuple[VenvObs, InfoRows]:
        # an env that is still stepping cannot be reset: let every env finish its step first
        while getattr(self.env, "waiting_id", None):
            self.env.step(None)
        result = super().reset_env(gym_reset_kwargs)
        self._ready_first = ReadyFirstStepping(self.env)
        return result

    def _stepping(self, n_episode: int | None) -> EnvStepping:
        """Which envs each step acts for and waits for: whichever are ready first."""
        return self._ready_first
