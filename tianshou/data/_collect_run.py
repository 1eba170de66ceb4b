"""One ``collect`` call, step by step: env -> policy -> staging -> buffer.

A :class:`CollectRun` lives for one call. It is given everything it uses (policy, env, buffer,
hooks, the statistics record) and owns its staging, so the loop reads top to bottom:

1. :meth:`CollectRun.policy_actions` asks the policy for actions and checks them against the
   action space (:meth:`CollectRun.random_actions` samples the spaces instead);
2. the vector env steps, and with ``check_env_output`` its observations and rewards are checked
   for NaN/inf;
3. the transitions are staged (:class:`~tianshou.data._rollout.RolloutStaging`) or, with a step
   hook, passed through the hook and stored at once (:meth:`CollectRun.store_with_hook`), and
   the steps are counted;
4. finished envs are reset, and staged transitions are written to the buffer every
   ``flush_every`` steps, when an episode hook needs a finished episode, and at the end.

If anything (an env error, a dead worker, ``KeyboardInterrupt``) escapes the loop, the staged
steps, all of which completed, are written before the error propagates; the collector then
refuses to continue until it is reset, since the envs' state is no longer known. The exception
is a ``StopIteration`` from resetting finished envs, by which a finite env reports that its data
set is exhausted: the run records where the envs stand (:attr:`CollectRun.exhausted_at`), so the
next call continues from there.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Distribution

from tianshou.data._collect_checks import ActionCheck, check_env_output
from tianshou.data._rollout import (
    RolloutStaging,
    as_obs,
    env_ids_of,
    info_to_batch,
    nbytes,
    put_rows,
    replace_rows,
    rollout_batch,
    stack_rows,
    take_rows,
    zero_rows,
)
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.manager import PrioritizedReplayBufferManager, ReplayBufferManager
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.data.buffer.vecbuf import PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tianshou.data.collector_stats import CollectStats
from tianshou.data.utils.converter import to_numpy

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Policy
    from tianshou.env.venvs import BaseVectorEnv

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

StepHookFn = Callable[[Batch, Batch], None]
EpisodeHookFn = Callable[[Batch], dict[str, np.ndarray] | None]


class StepActions(NamedTuple):
    """What acting produced for the envs of one vector step."""

    act: Any
    """Raw actions, as stored in the buffer."""
    act_env: Any
    """Actions sent to the envs (``Policy.map_action`` of ``act``)."""
    policy_entry: Batch | None
    """The policy's ``policy`` sub-batch (with ``hidden_state``), None when empty."""
    state: Any
    """A recurrent policy's hidden state after acting (None otherwise)."""
    dist: Distribution | None
    """The action distribution, for the statistics and step hooks."""


class EnvCursor(NamedTuple):
    """Where collection stands: per env, the observation to act on next, its info and the
    policy's hidden state (None for a stateless policy)."""

    obs: Any
    info: Any
    state: Any


@dataclass
class AsyncPending:
    """Asynchronous collection's memory across calls: the envs ready for an action, and the
    action (and policy entry) sent to each env whose step has not returned yet."""

    env_num: int
    ready: np.ndarray = field(init=False)
    sent_act: list[Any] = field(init=False)
    sent_policy: list[Batch | None] = field(init=False)

    def __post_init__(self) -> None:
        self.ready = np.arange(self.env_num)
        self.sent_act = [None] * self.env_num
        self.sent_policy = [None] * self.env_num

    def remember(self, env_ids: np.ndarray, actions: StepActions) -> None:
        """Keep the action (and policy entry) sent to each env until its transition returns."""
        entry = actions.policy_entry
        for k, i in enumerate(env_ids):
            self.sent_act[i] = actions.act[k]
            self.sent_policy[i] = None if entry is None else entry[k]

    def returned(self, env_ids: np.ndarray) -> tuple[Any, Batch | None]:
        """The stored actions and policy entries of the envs whose steps returned."""
        act = stack_rows([self.sent_act[i] for i in env_ids])
        entries = [self.sent_policy[i] for i in env_ids]
        entry = None if all(e is None for e in entries) else stack_rows(entries)
        return act, entry


def _min_subbuffer_size(buffer: ReplayBuffer) -> int:
    if isinstance(buffer, ReplayBufferManager):
        return min(b.maxsize for b in buffer.buffers)
    return buffer.maxsize


class CollectRun:
    """One ``collect`` call: acting, stepping, staging, storing and episode bookkeeping.

    :param policy: acts on ``Batch(obs, info)``.
    :param env: the vector env.
    :param buffer: receives the transitions.
    :param stats: the statistics record of this call, filled as steps and episodes complete.
    :param random: sample actions from ``action_spaces`` instead of running the policy.
    :param exploration_noise: pass policy actions through ``policy.add_exploration_noise``.
    :param action_spaces: one action space per env, sampled in random collection (may be None
        otherwise).
    :param action_check: validates the policy's actions (None: no check).
    :param step_hook: called with the action and rollout batch of every step (None: staged).
    :param episode_hook: called with every finished episode; returns arrays to store.
    :param check_env_output: raise on NaN/inf observations or rewards from the env.
    :param gym_reset_kwargs: keyword arguments for resetting finished envs.
    """

    def __init__(
        self,
        *,
        policy: "Policy",
        env: "BaseVectorEnv",
        buffer: ReplayBuffer,
        stats: CollectStats,
        random: bool,
        exploration_noise: bool,
        action_spaces: list[gym.Space] | None,
        action_check: ActionCheck | None,
        step_hook: StepHookFn | None,
        episode_hook: EpisodeHookFn | None,
        check_env_output: bool,
        gym_reset_kwargs: dict[str, Any] | None,
    ) -> None:
        self.policy = policy
        self.env = env
        self.buffer = buffer
        self.stats = stats
        self.random = random
        self.exploration_noise = exploration_noise
        self.action_spaces = action_spaces
        self.action_check = action_check
        self.shape_unchecked = True
        """Whether the policy's action shape is still to be checked (once per call)."""
        self.step_hook = step_hook
        self.episode_hook = episode_hook
        self.check_env_output = check_env_output
        self.reset_kwargs = gym_reset_kwargs or {}
        self.exhausted_at: EnvCursor | None = None
        """Where the envs stood (one row per env) when a finite env's reset raised
        ``StopIteration``; None unless that ended the run."""
        self.staging = RolloutStaging()
        stats_type = type(stats)
        self.default_step_stats = (
            stats_type.update_at_step_batch is CollectStats.update_at_step_batch
        )
        self.episode_batches = (
            episode_hook is not None
            or stats_type.update_at_episode_done is not CollectStats.update_at_episode_done
        )
        """Whether finished episodes are read back from the buffer (for the episode hook or a
        stats class that wants them); they are then written as soon as they finish."""
        # random actions are inverse-mapped once per buffer write rather than once per step
        defer_inverse = random and step_hook is None
        self.staging.act_transform = policy.map_action_inverse if defer_inverse else None
        self.inverse_now = random and step_hook is not None

    # ---------------------------------------------------------------- the loops
    def collect_sync(
        self, start: EnvCursor, n_step: int | None, n_episode: int | None, render: float | None
    ) -> EnvCursor:
        """Step all (active) envs together until ``n_step`` steps or ``n_episode`` episodes
        are collected; return where the envs stand afterwards (one row per env).

        With ``n_episode``, only ``min(env_num, n_episode)`` envs start, and envs that finish
        while fewer episodes remain than envs run are retired (no bias to short episodes).
        """
        try:
            return self._collect_sync(start, n_step, n_episode, render)
        except BaseException:
            self.write_staged()  # every staged step completed: keep it
            raise

    def _collect_sync(
        self, start: EnvCursor, n_step: int | None, n_episode: int | None, render: float | None
    ) -> EnvCursor:
        env, env_num, staging = self.env, len(self.env), self.staging
        active = np.arange(env_num if n_episode is None else min(env_num, n_episode))
        obs, info, state = start
        if len(active) < env_num:
            obs, info, state = (take_rows(v, active) for v in start)
        flush_every = self.flush_interval(obs)
        target = n_step or n_episode or 0  # validated: exactly one is a positive int
        steps = episodes = 0
        while True:
            if self.random:
                act, act_env = self.random_actions(active, obs)
                entry = state = dist = None
            else:
                act, act_env, entry, state, dist = self.policy_actions(obs, info, state, active)
            step_ids = None if len(active) == env_num else active
            obs_next, rew, term, trunc, info_next = env.step(act_env, step_ids)
            obs_next = as_obs(obs_next)
            transition = (obs, obs_next, rew, term, trunc, info_next)
            self.record_step(transition, act, entry, active, (act_env, state, dist))
            steps += len(active)
            if render:
                self.render(render)
            if np.count_nonzero(term) or np.count_nonzero(trunc):
                local = np.flatnonzero(np.logical_or(term, trunc))
                episodes += len(local)
                state = zero_rows(state, local)
                try:
                    obs_next, info_next = self.reset_finished(
                        active[local], local, obs_next, info_next
                    )
                except StopIteration:
                    reached = EnvCursor(obs_next, info_next, state)
                    self.exhausted_at = _with_rows(start, active, reached, env_num)
                    raise
                if n_episode is not None and episodes < n_episode:
                    keep = _unbiased_keep(len(active), local, n_episode - episodes)
                    if keep is not None:
                        active = active[keep]
                        obs_next, info_next, state = (
                            take_rows(v, keep) for v in (obs_next, info_next, state)
                        )
                if self.episode_batches:
                    self.write_staged()
            obs, info = obs_next, info_next
            if staging.steps >= flush_every:
                self.write_staged()
            if (steps if n_episode is None else episodes) >= target:
                break
        self.write_staged()
        return _with_rows(start, active, EnvCursor(obs, info, state), env_num)

    def collect_async(
        self,
        start: EnvCursor,
        pending: AsyncPending,
        n_step: int | None,
        n_episode: int | None,
        render: float | None,
    ) -> EnvCursor:
        """Act for the ready envs and store whichever envs return first, until at least
        ``n_step`` steps or ``n_episode`` episodes are collected. ``start`` holds every env's
        row; ``pending`` is updated in place."""
        try:
            return self._collect_async(start, pending, n_step, n_episode, render)
        except BaseException:
            self.write_staged()
            raise

    def _collect_async(
        self,
        start: EnvCursor,
        pending: AsyncPending,
        n_step: int | None,
        n_episode: int | None,
        render: float | None,
    ) -> EnvCursor:
        env_num = len(self.env)
        obs_all, info_all, state_all = start
        target = n_step or n_episode or 0  # validated: exactly one is a positive int
        steps = episodes = 0
        while True:
            ready = pending.ready
            obs_ready, info_ready = take_rows(obs_all, ready), take_rows(info_all, ready)
            actions = self.act(obs_ready, info_ready, take_rows(state_all, ready), ready)
            pending.remember(ready, actions)
            if actions.state is not None:
                state_all = put_rows(state_all, ready, actions.state, env_num)
            obs_next, rew, term, trunc, info = self.env.step(actions.act_env, ready)
            ready = pending.ready = env_ids_of(info)
            obs_next = as_obs(obs_next)
            act, entry = pending.returned(ready)
            transition = (take_rows(obs_all, ready), obs_next, rew, term, trunc, info)
            self.record_step(transition, act, entry, ready)
            steps += len(ready)
            if render:
                self.render(render)
            if np.count_nonzero(term) or np.count_nonzero(trunc):
                local = np.flatnonzero(np.logical_or(term, trunc))
                episodes += len(local)
                state_all = zero_rows(state_all, ready[local])
                try:
                    obs_next, info = self.reset_finished(ready[local], local, obs_next, info)
                except StopIteration:
                    before = EnvCursor(obs_all, info_all, state_all)
                    reached = EnvCursor(obs_next, info, None)
                    self.exhausted_at = _with_rows(before, ready, reached, env_num)
                    raise
                if self.episode_batches:
                    self.write_staged()
            obs_all = replace_rows(obs_all, ready, obs_next)
            info_all = replace_rows(info_all, ready, info)
            if self.staging.steps >= self.flush_interval(obs_next):
                self.write_staged()
            if (steps if n_episode is None else episodes) >= target:
                break
        self.write_staged()
        return EnvCursor(obs_all, info_all, state_all)

    def flush_interval(self, obs: Any) -> int:
        """Vector steps staged before one buffer write: bounded by memory and by the smallest
        sub-buffer (a single add must not wrap around a sub-buffer)."""
        if type(self.buffer) not in _STAGING_BUFFER_TYPES or self.step_hook is not None:
            return 1
        by_memory = _MAX_STAGED_BYTES // max(2 * nbytes(obs), 1)
        return int(max(1, min(_MAX_STAGED_STEPS, by_memory, _min_subbuffer_size(self.buffer))))

    # ---------------------------------------------------------------- 1. acting
    def act(self, obs: Any, info: Any, state: Any, env_ids: np.ndarray) -> StepActions:
        """Actions for the envs ``env_ids`` (rows of ``obs``, ``info`` and ``state``)."""
        if self.random:
            act, act_env = self.random_actions(env_ids, obs)
            return StepActions(act, act_env, None, None, None)
        return self.policy_actions(obs, info, state, env_ids)

    def random_actions(self, env_ids: np.ndarray, obs: Any) -> tuple[Any, Any]:
        """``(stored actions, env actions)`` sampled from the action spaces of ``env_ids``,
        uniformly among the legal actions when the observations ``obs`` carry a legal-action
        mask (``obs.mask``).

        A pair rather than :class:`StepActions`: on cheap envs, building a NamedTuple per step
        costs a measurable share (~3%) of random collection.
        """
        spaces = self.action_spaces
        assert spaces is not None, "random collection needs the action spaces"
        if len(env_ids) != len(spaces):
            spaces = [spaces[i] for i in env_ids.tolist()]
        mask = obs.get("mask") if isinstance(obs, Batch) else None
        if mask is None:
            samples = [space.sample() for space in spaces]
            if isinstance(samples[0], tuple | dict):  # Tuple/Dict spaces: one object per env
                act_env = np.empty(len(samples), dtype=object)
                act_env[:] = samples
            else:
                act_env = np.array(samples)
        else:
            # imported here: the data layer does not load the algorithm layer at import time
            from tianshou.algorithm._masking import sample_legal_actions

            act_env = sample_legal_actions(spaces, mask, {"env_id": env_ids})
        act = self.policy.map_action_inverse(act_env) if self.inverse_now else act_env
        return act, act_env

    def policy_actions(self, obs: Any, info: Any, state: Any, env_ids: np.ndarray) -> StepActions:
        """The policy's actions for the envs ``env_ids``, checked against the action space
        (the shape on the first step of the call, the values every step)."""
        actions = self._policy_action(obs, info, state)
        check = self.action_check
        if check is not None:
            if self.shape_unchecked:
                check.check_shape(actions.act_env, env_ids)
                self.shape_unchecked = False
            if check.values_need_checks:
                check.check_values(actions.act, actions.act_env, env_ids)
        return actions

    def _policy_action(self, obs: Any, info: Any, state: Any) -> StepActions:
        obs_batch = batch_of_parsed_values({"obs": obs, "info": info_to_batch(info)})
        result = self.policy(obs_batch, state)
        act: Any = result.act
        act = act.detach().cpu().numpy() if isinstance(act, torch.Tensor) else to_numpy(act)
        if self.exploration_noise:
            act = self.policy.add_exploration_noise(act, obs_batch)
        act_env = self.policy.map_action(act)
        entry = _policy_entry(result.get("policy"))
        state = result.get("state")
        if state is not None:
            entry = Batch() if entry is None else batch_of_parsed_values(dict(entry.__dict__))
            entry.hidden_state = state
        return StepActions(act, act_env, entry, state, result.get("dist"))

    # ---------------------------------------------------------------- 3. storing, counting
    def record_step(
        self,
        transition: tuple[Any, Any, np.ndarray, np.ndarray, np.ndarray, Any],
        act: Any,
        policy_entry: Batch | None,
        env_ids: np.ndarray,
        extra: tuple[Any, Any, Distribution | None] = (None, None, None),
    ) -> None:
        """Check one vector step's env output, stage its rows (or, with a step hook, run the
        hook and store them at once) and count the steps.

        :param transition: ``(obs, obs_next, rew, terminated, truncated, info)``.
        :param act: the stored actions; ``policy_entry`` the policy's sub-batch for them.
        :param env_ids: the env of each row.
        :param extra: ``(env actions, hidden state, distribution)``, for the step hook and the
            statistics (plain arguments: building a :class:`StepActions` on every step would
            cost a measurable share of collection on cheap envs).
        """
        obs, obs_next, rew, term, trunc, info = transition
        if self.check_env_output:
            check_env_output(obs_next, rew, env_ids, "step")
        act_env, state, dist = extra
        if self.step_hook is None:
            self.staging.stage(obs, act, obs_next, rew, term, trunc, info, policy_entry, env_ids)
        else:
            actions = StepActions(act, act_env, policy_entry, state, dist)
            self.store_with_hook(actions, transition, env_ids)
        self.count_steps(act, dist, len(env_ids))

    def count_steps(self, act: Any, dist: Distribution | None, n: int) -> None:
        """Add ``n`` steps to the stats (with the action distribution, if there is one)."""
        if dist is None and self.default_step_stats:
            self.stats.n_collected_steps += n
        else:
            self.stats.update_at_step_batch(batch_of_parsed_values({"act": act, "dist": dist}))

    def store_with_hook(
        self,
        actions: StepActions,
        transition: tuple[Any, Any, np.ndarray, np.ndarray, np.ndarray, Any],
        env_ids: np.ndarray,
    ) -> None:
        """Run the step hook on one vector step's transitions, then store them at once
        (without a step hook, transitions are staged instead).

        :param transition: ``(obs, obs_next, rew, terminated, truncated, info)``.
        :param env_ids: the env of each row.
        """
        assert self.step_hook is not None
        obs, obs_next, rew, term, trunc, info = transition
        entry = Batch() if actions.policy_entry is None else actions.policy_entry
        info_batch = info_to_batch(info)
        batch = rollout_batch(obs, actions.act, obs_next, rew, term, trunc, info_batch, entry)
        action_batch = Batch(
            act=actions.act,
            act_normalized=actions.act_env,
            policy_entry=entry,
            dist=actions.dist,
            hidden_state=actions.state,
        )
        self.step_hook(action_batch, batch)
        self.write(batch, env_ids)

    def render(self, sleep: float) -> None:
        """Render the envs, then pause ``sleep`` seconds (if positive) so a human can watch."""
        self.env.render()
        if sleep > 0:
            time.sleep(sleep)

    # ---------------------------------------------------------------- 4. writing
    def write_staged(self) -> None:
        """Write whatever is staged to the buffer."""
        taken = self.staging.take()
        if taken is not None:
            self.write(*taken)

    def write(self, batch: Batch, env_ids: np.ndarray) -> None:
        """Add ``batch`` to the buffer and record the episodes it completes."""
        rows, ep_ret, ep_len, ep_start = self.buffer.add(batch, buffer_ids=env_ids)
        finished = np.flatnonzero(batch.done)
        if not len(finished):
            return
        if not self.episode_batches:
            self.stats._extend_episodes(ep_ret[finished], ep_len[finished])
            return
        for j in finished:
            self._record_episode(int(rows[j]), ep_ret[j], int(ep_len[j]), int(ep_start[j]))

    def _record_episode(self, last_row: int, ep_return: Any, ep_len: int, start: int) -> None:
        if last_row < 0:  # a cached buffer could not keep the episode
            self.stats._extend_episodes(np.asarray([ep_return]), np.array([ep_len]))
            return
        indices = self.buffer.get_buffer_indices(start, last_row + 1)
        episode = self.buffer[indices]
        additions = self.episode_hook(episode) if self.episode_hook is not None else None
        if additions:
            for key, values in additions.items():
                self.buffer.set_array_at_key(values, key, index=indices)
        self.stats.update_at_episode_done(episode, ep_return)

    # ---------------------------------------------------------------- finished episodes
    def reset_finished(
        self, env_ids: np.ndarray, local: np.ndarray, obs_next: Any, info: Any
    ) -> tuple[Any, Any]:
        """Reset the envs ``env_ids`` (rows ``local`` of ``obs_next``/``info``) and return the
        observations and infos to act on next."""
        obs_reset, info_reset = self.env.reset(env_id=env_ids, **self.reset_kwargs)
        obs_reset = as_obs(obs_reset)
        if self.check_env_output:
            check_env_output(obs_reset, None, env_ids, "reset")
        if len(local) == len(obs_next):  # every env finished: nothing to merge
            return obs_reset, info_reset
        obs = replace_rows(obs_next, local, obs_reset)
        return obs, replace_rows(info, local, info_reset)


def _with_rows(base: EnvCursor, env_ids: np.ndarray, rows: EnvCursor, env_num: int) -> EnvCursor:
    """``base`` (one row per env) with the rows of the envs ``env_ids`` taken from ``rows``;
    ``rows.state`` None keeps ``base.state``."""
    every_env_in_order = len(env_ids) == env_num and np.array_equal(env_ids, np.arange(env_num))
    if rows.state is None:
        state = base.state
    elif every_env_in_order:
        state = rows.state
    else:
        state = put_rows(base.state, env_ids, rows.state, env_num)
    if every_env_in_order:
        return EnvCursor(rows.obs, rows.info, state)
    return EnvCursor(
        replace_rows(base.obs, env_ids, rows.obs),
        replace_rows(base.info, env_ids, rows.info),
        state,
    )


def _unbiased_keep(n_active: int, finished: np.ndarray, remaining: int) -> np.ndarray | None:
    """Indices of the active envs to keep when more envs run than episodes remain: the surplus
    is taken from the envs that just finished, so no running episode is cut short."""
    surplus = n_active - remaining
    if surplus <= 0:
        return None
    keep = np.ones(n_active, dtype=bool)
    keep[finished[:surplus]] = False
    return np.flatnonzero(keep)


def _policy_entry(entry: Any) -> Batch | None:
    """A policy output's ``policy`` entry as a Batch (None when absent or empty)."""
    if entry is None or isinstance(entry, Batch):
        return entry if entry is not None and entry.__dict__ else None
    if isinstance(entry, dict):
        return Batch(entry) if entry else None
    raise TypeError(
        "the 'policy' entry of a policy's output must be a Batch or dict, got "
        f"{type(entry).__name__}"
    )
