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
"""

from typing import Any, Generic

import numpy as np

from tianshou.data._collect_run import CollectRun
from tianshou.data._rollout import (
    RolloutStaging,
    as_obs,
    env_ids_of,
    nbytes,
    put_rows,
    replace_rows,
    stack_rows,
    take_rows,
    zero_rows,
)
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.manager import PrioritizedReplayBufferManager, ReplayBufferManager
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.data.buffer.vecbuf import PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tianshou.data.collector_base import (
    DEFAULT_BUFFER_MAXSIZE,
    BaseCollector,
    CollectArgumentError,
    CollectorBufferError,
    TCollectStats,
)
from tianshou.data.collector_hooks import (
    EpisodeRolloutHook,
    EpisodeRolloutHookMCReturn,
    EpisodeRolloutHookMerged,
    EpisodeRolloutHookProtocol,
    StepHook,
    StepHookAddActionDistribution,
)
from tianshou.data.collector_stats import (
    CollectStats,
    CollectStatsBase,
    get_stddev_from_dist,
)

__all__ = [
    "DEFAULT_BUFFER_MAXSIZE",
    "AsyncCollector",
    "BaseCollector",
    "CollectArgumentError",
    "CollectStats",
    "CollectStatsBase",
    "Collector",
    "CollectorBufferError",
    "EpisodeRolloutHook",
    "EpisodeRolloutHookMCReturn",
    "EpisodeRolloutHookMerged",
    "EpisodeRolloutHookProtocol",
    "StepHook",
    "StepHookAddActionDistribution",
    "get_stddev_from_dist",
]

_MAX_STAGED_STEPS = 128
_MAX_STAGED_BYTES = 8 * 2**20
_STAGING_BUFFER_TYPES = (
    ReplayBuffer,
    ReplayBufferManager,
    VectorReplayBuffer,
    PrioritizedReplayBuffer,
    PrioritizedReplayBufferManager,
    PrioritizedVectorReplayBuffer,
)
"""Buffers whose ``add`` of many rows equals the same rows added one step at a time."""


def _min_subbuffer_size(buffer: ReplayBuffer) -> int:
    if isinstance(buffer, ReplayBufferManager):
        return min(b.maxsize for b in buffer.buffers)
    return buffer.maxsize


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
        policy: Any,
        env: Any,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
        on_episode_done_hook: EpisodeRolloutHookProtocol | None = None,
        on_step_hook: StepHook | None = None,
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
        spaces = self._action_space
        self._action_spaces = spaces if isinstance(spaces, list) else [spaces] * self.env_num
        self._staging = RolloutStaging()
        self._stage_many = type(self.buffer) in _STAGING_BUFFER_TYPES
        self._obs: Any = None
        self._info: Any = None
        self._state: Any = None

    # ---------------------------------------------------------------- hooks
    def set_on_episode_done_hook(self, hook: EpisodeRolloutHookProtocol | None) -> None:
        """Install (or with None remove) the episode hook."""
        self._on_episode_done_hook = hook

    def set_on_step_hook(self, hook: StepHook | None) -> None:
        """Install (or with None remove) the step hook."""
        self._on_step_hook = hook

    def get_on_episode_done_hook(self) -> EpisodeRolloutHookProtocol | None:
        return self._on_episode_done_hook

    def get_on_step_hook(self) -> StepHook | None:
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
    def reset_env(self, gym_reset_kwargs: dict[str, Any] | None = None) -> tuple[Any, Any]:
        obs, info = self.env.reset(**(gym_reset_kwargs or {}))
        self._obs, self._info, self._state = as_obs(obs), info, None
        return obs, info

    def close(self) -> None:
        super().close()
        self._obs = self._info = self._state = None

    def _check_is_reset(self) -> None:
        if self._obs is None:
            raise ValueError(
                f"{type(self).__name__} has not been reset (or was closed): call reset() before "
                "collect(), or pass reset_before_collect=True"
            )

    def _flush_interval(self, obs: Any) -> int:
        """Vector steps staged before one buffer write: bounded by memory and by the smallest
        sub-buffer (a single add must not wrap around a sub-buffer)."""
        if not self._stage_many or self._on_step_hook is not None:
            return 1
        by_memory = _MAX_STAGED_BYTES // max(2 * nbytes(obs), 1)
        return int(max(1, min(_MAX_STAGED_STEPS, by_memory, _min_subbuffer_size(self.buffer))))

    # ---------------------------------------------------------------- collection
    def _collect(
        self,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        render: float | None,
        gym_reset_kwargs: dict[str, Any] | None,
    ) -> TCollectStats:
        self._check_is_reset()
        stats = self.collect_stats_class()
        run = CollectRun(self, stats, random, gym_reset_kwargs)
        env, env_num, staging = self.env, self.env_num, self._staging
        active = np.arange(env_num if n_episode is None else min(env_num, n_episode))
        obs, info, state = self._obs, self._info, self._state
        if len(active) < env_num:
            obs, info, state = (take_rows(v, active) for v in (obs, info, state))
        flush_every = self._flush_interval(obs)
        target = n_step or n_episode or 0  # validated: exactly one is a positive int
        steps = episodes = 0
        while True:
            step_ids = None if len(active) == env_num else active
            act, act_env, entry, state, dist = run.act(obs, info, state, active)
            obs_next, rew, term, trunc, info_next = env.step(act_env, step_ids)
            obs_next = as_obs(obs_next)
            if run.step_hook:
                transition = (obs, obs_next, rew, term, trunc, info_next)
                run.store_with_hook((act, act_env, entry, state, dist), transition, active)
            else:
                staging.stage(obs, act, obs_next, rew, term, trunc, info_next, entry, active)
            run.count_steps(act, dist, len(active))
            steps += len(active)
            if render:
                run.render(render)
            if np.count_nonzero(term) or np.count_nonzero(trunc):
                local = np.flatnonzero(np.logical_or(term, trunc))
                episodes += len(local)
                obs_next, info_next = run.reset_finished(active[local], local, obs_next, info_next)
                state = zero_rows(state, local)
                if n_episode is not None and episodes < n_episode:
                    keep = _unbiased_keep(len(active), local, n_episode - episodes)
                    if keep is not None:
                        active = active[keep]
                        obs_next, info_next, state = (
                            take_rows(v, keep) for v in (obs_next, info_next, state)
                        )
                if run.episode_batches:
                    run.write_staged()
            obs, info = obs_next, info_next
            if staging.steps >= flush_every:
                run.write_staged()
            if (steps if n_episode is None else episodes) >= target:
                break
        run.write_staged()
        if n_step is not None:
            self._obs, self._info, self._state = obs, info, state
        else:
            self.reset_env(gym_reset_kwargs)
        return stats


def _unbiased_keep(n_active: int, finished: np.ndarray, remaining: int) -> np.ndarray | None:
    """Indices of the active envs to keep when more envs run than episodes remain: the surplus
    is taken from the envs that just finished, so no running episode is cut short."""
    surplus = n_active - remaining
    if surplus <= 0:
        return None
    keep = np.ones(n_active, dtype=bool)
    keep[finished[:surplus]] = False
    return np.flatnonzero(keep)


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
        policy: Any,
        env: Any,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
        on_episode_done_hook: EpisodeRolloutHookProtocol | None = None,
        on_step_hook: StepHook | None = None,
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
        self._ready = np.arange(self.env_num)
        self._sent_act: list[Any] = [None] * self.env_num
        self._sent_policy: list[Batch | None] = [None] * self.env_num

    def reset_env(self, gym_reset_kwargs: dict[str, Any] | None = None) -> tuple[Any, Any]:
        # an env that is still stepping cannot be reset: let every env finish its step first
        while getattr(self.env, "waiting_id", None):
            self.env.step(None)
        result = super().reset_env(gym_reset_kwargs)
        self._ready = np.arange(self.env_num)
        self._sent_act = [None] * self.env_num
        self._sent_policy = [None] * self.env_num
        return result

    def _collect(
        self,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        render: float | None,
        gym_reset_kwargs: dict[str, Any] | None,
    ) -> TCollectStats:
        self._check_is_reset()
        stats = self.collect_stats_class()
        run = CollectRun(self, stats, random, gym_reset_kwargs)
        obs_all, info_all, state_all = self._obs, self._info, self._state
        ready = self._ready
        target = n_step or n_episode or 0  # validated: exactly one is a positive int
        steps = episodes = 0
        while True:
            state = take_rows(state_all, ready)
            action = run.act(take_rows(obs_all, ready), take_rows(info_all, ready), state, ready)
            self._remember_sent(ready, action[0], action[2])
            if action[3] is not None:
                state_all = put_rows(state_all, ready, action[3], self.env_num)
            obs_next, rew, term, trunc, info = self.env.step(action[1], ready)
            ready = env_ids_of(info)
            act = stack_rows([self._sent_act[i] for i in ready])
            entries = [self._sent_policy[i] for i in ready]
            entry = None if all(e is None for e in entries) else stack_rows(entries)
            obs_next = as_obs(obs_next)
            obs = take_rows(obs_all, ready)
            if run.step_hook:
                transition = (obs, obs_next, rew, term, trunc, info)
                run.store_with_hook((act, None, entry, None, None), transition, ready)
            else:
                self._staging.stage(obs, act, obs_next, rew, term, trunc, info, entry, ready)
            run.count_steps(act, None, len(ready))
            steps += len(ready)
            if render:
                run.render(render)
            if np.count_nonzero(term) or np.count_nonzero(trunc):
                local = np.flatnonzero(np.logical_or(term, trunc))
                episodes += len(local)
                obs_next, info = run.reset_finished(ready[local], local, obs_next, info)
                state_all = zero_rows(state_all, ready[local])
                if run.episode_batches:
                    run.write_staged()
            obs_all = replace_rows(obs_all, ready, obs_next)
            info_all = replace_rows(info_all, ready, info)
            if self._staging.steps >= self._flush_interval(obs_next):
                run.write_staged()
            if (steps if n_episode is None else episodes) >= target:
                break
        run.write_staged()
        self._obs, self._info, self._state, self._ready = obs_all, info_all, state_all, ready
        return stats

    def _remember_sent(self, env_ids: np.ndarray, act: Any, entry: Batch | None) -> None:
        """Keep the action (and policy entry) sent to each env until its transition returns."""
        for k, i in enumerate(env_ids):
            self._sent_act[i] = act[k]
            self._sent_policy[i] = None if entry is None else entry[k]
