"""One ``collect`` call, step by step: env -> policy -> staging -> buffer.

A :class:`CollectRun` lives for one call. It is given everything it uses (policy, env, buffer,
hooks, the statistics record) and owns its staging. Both collectors run the same loop,
:meth:`CollectRun.collect`; they differ only in which envs each step acts for and waits for,
the :class:`~tianshou.data._env_stepping.EnvStepping` they pass (all active envs together, or
whichever envs of an asynchronous vector env are ready). The loop reads top to bottom:

1. :meth:`CollectRun.policy_actions` asks the policy for actions for the ready envs and checks
   them against the action space (:meth:`CollectRun.random_actions` samples the spaces instead);
2. the stepping sends them to the envs and returns the transitions of the envs that returned;
   with ``check_env_output`` their observations and rewards are checked for NaN/inf;
3. the transitions are staged (:class:`~tianshou.data._rollout.RolloutStaging`) or, with a step
   hook, passed through the hook and stored at once (:meth:`CollectRun.store_with_hook`), and
   the steps are counted; the spread of a categorical action distribution, which the default
   statistics record per step, is computed for all steps of the call at once at its end;
4. finished envs are reset (:meth:`CollectRun.reset_finished`), surplus envs retired for
   unbiased ``n_episode`` collection, and staged transitions are written to the buffer every
   ``flush_every`` steps, when an episode hook needs a finished episode, and at the end.

If anything (an env error, a dead worker, ``KeyboardInterrupt``) escapes the loop, the staged
steps, all of which completed, are written before the error propagates; the collector then
refuses to continue until it is reset, since the envs' state is no longer known. The exception
is a ``StopIteration`` from resetting finished envs, by which a finite env reports that its data
set is exhausted: the run records where the envs stand (:attr:`CollectRun.exhausted_at`), so the
next call continues from there.
"""

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Categorical

from tianshou.data._collect_checks import ActionCheck, check_env_output
from tianshou.data._env_stepping import EnvCursor, EnvStepping, ReadyEnvs, StepActions
from tianshou.data._rollout import (
    ObsRows,
    RolloutStaging,
    Transitions,
    as_obs,
    info_to_batch,
    nbytes,
    replace_rows,
    rollout_batch,
    zero_rows,
)
from tianshou.data._space_sampling import space_sampler
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.manager import PrioritizedReplayBufferManager, ReplayBufferManager
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.data.buffer.vecbuf import PrioritizedVectorReplayBuffer, VectorReplayBuffer
from tianshou.data.collector_stats import CollectStats, categorical_stddev
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import action_mask, sample_legal_actions

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
        gym_reset_kwargs: Mapping[str, object] | None,
    ) -> None:
        self.policy = policy
        self.env = env
        self.buffer = buffer
        self.stats = stats
        self.random = random
        self.exploration_noise = exploration_noise
        self.action_spaces = action_spaces
        self.action_samplers = (
            None if action_spaces is None else list(map(space_sampler, action_spaces))
        )
        """Per env, draws what ``space.sample()`` would (faster for bounded float boxes)."""
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
        self.pending_spreads: list[torch.Tensor] = []
        """Per step whose distribution spread is yet to be recorded: its categorical action
        probabilities, or (other distributions) its standard deviations."""
        self.pending_are_probs = False
        """Whether :attr:`pending_spreads` holds probabilities rather than deviations."""
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

    # ---------------------------------------------------------------- the loop
    def collect(
        self,
        start: EnvCursor,
        stepping: EnvStepping,
        n_step: int | None,
        n_episode: int | None,
        render: float | None,
    ) -> EnvCursor:
        """Act for the ready envs, step them and store the transitions of the envs that return,
        until at least ``n_step`` steps or ``n_episode`` episodes are collected; return where
        the envs stand afterwards.

        :param start: every env's rows when the call begins.
        :param stepping: which envs each step acts for and waits for (all active envs
            together, or whichever are ready first).
        """
        try:
            return self._collect(start, stepping, n_step, n_episode, render)
        except BaseException:
            self.write_staged()  # every staged step completed: keep it
            raise
        finally:
            self.record_deferred_spreads()

    def _collect(
        self,
        start: EnvCursor,
        stepping: EnvStepping,
        n_step: int | None,
        n_episode: int | None,
        render: float | None,
    ) -> EnvCursor:
        staging = self.staging
        ready = stepping.begin(start)
        flush_every = self.flush_interval(start.obs)
        target = n_step or n_episode or 0  # validated: exactly one is a positive int
        steps = episodes = 0
        while True:
            actions = self.random_actions(ready) if self.random else self.policy_actions(ready)
            transitions, returned_actions = stepping.step(ready, actions)
            self.record_step(transitions, returned_actions)
            steps += len(transitions.env_ids)
            if render:
                self.render(render)
            ready = stepping.ready_after(transitions, actions)
            term, trunc = transitions.terminated, transitions.truncated
            if np.count_nonzero(term) or np.count_nonzero(trunc):
                finished = np.flatnonzero(np.logical_or(term, trunc))
                episodes += len(finished)
                ready = self.reset_finished(ready, finished, stepping)
                if n_episode is not None and episodes < n_episode:
                    ready = stepping.retire(ready, finished, n_episode - episodes)
                if self.episode_batches:
                    self.write_staged()
            if staging.steps >= flush_every:
                self.write_staged()
            if (steps if n_episode is None else episodes) >= target:
                break
        self.write_staged()
        return stepping.end(ready)

    def flush_interval(self, obs: ObsRows) -> int:
        """Vector steps staged before one buffer write: bounded by memory (``obs``: one row per
        env) and by the smallest sub-buffer (a single add must not wrap around a sub-buffer)."""
        if type(self.buffer) not in _STAGING_BUFFER_TYPES or self.step_hook is not None:
            return 1
        by_memory = _MAX_STAGED_BYTES // max(2 * nbytes(obs), 1)
        return int(max(1, min(_MAX_STAGED_STEPS, by_memory, _min_subbuffer_size(self.buffer))))

    # ---------------------------------------------------------------- 1. acting
    def random_actions(self, ready: ReadyEnvs) -> StepActions:
        """Actions sampled from the action spaces of the ``ready`` envs, uniformly among the
        legal actions when their observations carry a legal-action mask (``obs.mask``)."""
        spaces, samplers = self.action_spaces, self.action_samplers
        assert spaces is not None and samplers is not None, "random collection needs the spaces"
        env_ids, obs = ready.env_ids, ready.obs
        if len(env_ids) != len(spaces):
            spaces = [spaces[i] for i in env_ids.tolist()]
            samplers = [samplers[i] for i in env_ids.tolist()]
        mask = action_mask(obs)
        if mask is None:
            samples = [sample() for sample in samplers]
            if isinstance(samples[0], (tuple, dict)):  # Tuple/Dict spaces: one object per env
                act_env = np.empty(len(samples), dtype=object)
                act_env[:] = samples
            else:
                act_env = np.array(samples)
        else:
            act_env = sample_legal_actions(spaces, mask, {"env_id": env_ids})
        act = self.policy.map_action_inverse(act_env) if self.inverse_now else act_env
        return StepActions(act, act_env, None, None, None)

    def policy_actions(self, ready: ReadyEnvs) -> StepActions:
        """The policy's actions for the ``ready`` envs, checked against the action space (the
        shape on the first step of the call, the values every step)."""
        actions = self._policy_action(ready)
        check = self.action_check
        if check is not None:
            if self.shape_unchecked:
                check.check_shape(actions.act_env, ready.env_ids)
                self.shape_unchecked = False
            if check.values_need_checks:
                check.check_values(actions.act, actions.act_env, ready.env_ids)
        return actions

    def _policy_action(self, ready: ReadyEnvs) -> StepActions:
        obs_batch = batch_of_parsed_values({"obs": ready.obs, "info": info_to_batch(ready.info)})
        result = self.policy(obs_batch, ready.state)
        raw = result.act
        act = raw.detach().cpu().numpy() if isinstance(raw, torch.Tensor) else to_numpy(raw)
        if self.exploration_noise:
            act = self.policy.add_exploration_noise(act, obs_batch)
        act_env = self.policy.map_action(act)
        entry = _policy_entry(result.get("policy"))
        state = result.get("state")
        if state is not None:
            entry = Batch() if entry is None else batch_of_parsed_values(dict(entry.items()))
            entry.hidden_state = state
        return StepActions(act, act_env, entry, state, result.get("dist"))

    # ---------------------------------------------------------------- 3. storing, counting
    def record_step(self, transitions: Transitions, actions: StepActions) -> None:
        """Check one vector step's env output, stage its transitions (or, with a step hook, run
        the hook and store them at once) and count the steps.

        :param actions: the actions of the rows of ``transitions``, for the step hook and the
            statistics.
        """
        if self.check_env_output:
            check_env_output(transitions.obs_next, transitions.rew, transitions.env_ids, "step")
        if self.step_hook is None:
            self.staging.stage(transitions)
        else:
            self.store_with_hook(transitions, actions)
        dist = actions.dist
        rows = len(transitions.env_ids)
        if self.default_step_stats:  # what CollectStats.update_at_step_batch would record
            if dist is None:  # only a count to add
                self.stats.n_collected_steps += rows
                return
            if isinstance(dist, Categorical) and len(dist.batch_shape) == 1:
                self.stats.n_collected_steps += rows
                self.defer_spread(dist.probs, are_probs=True)
                return
            if dist.batch_shape[:1] == (rows,) and len(dist.batch_shape + dist.event_shape) > 1:
                # one distribution per row, deviations (rows, ...) like get_stddev_from_dist's
                self.stats.n_collected_steps += rows
                self.defer_spread(dist.stddev.detach().reshape(rows, -1), are_probs=False)
                return
        self.record_deferred_spreads()  # keeps the rows of pred_dist_std_array in step order
        self.stats.update_at_step_batch(
            batch_of_parsed_values({"act": transitions.act, "dist": dist})
        )

    def defer_spread(self, values: torch.Tensor, are_probs: bool) -> None:
        """Keep one step's categorical action probabilities ``(B, K)`` or standard deviations
        ``(B, D)``; the statistics get the spreads of all steps at once from
        :meth:`record_deferred_spreads` (converting and appending them step by step would
        cost a noticeable share of stepping cheap envs, and grow quadratically)."""
        pending = self.pending_spreads
        if pending and (
            self.pending_are_probs != are_probs or pending[0].shape[-1] != values.shape[-1]
        ):
            self.record_deferred_spreads()
        self.pending_are_probs = are_probs
        self.pending_spreads.append(values)  # a new list if the old one was just recorded

    def record_deferred_spreads(self) -> None:
        """Add the spreads of the deferred steps to the statistics' ``pred_dist_std_array``."""
        pending = self.pending_spreads
        if pending:
            self.pending_spreads = []
            values = pending[0] if len(pending) == 1 else torch.cat(pending)
            self.stats.add_dist_stddev(
                categorical_stddev(values) if self.pending_are_probs else values
            )

    def store_with_hook(self, transitions: Transitions, actions: StepActions) -> None:
        """Run the step hook on one vector step's transitions, then store them at once
        (without a step hook, transitions are staged instead)."""
        assert self.step_hook is not None
        entry = Batch() if transitions.policy is None else transitions.policy
        batch = rollout_batch(transitions, info_to_batch(transitions.info), entry)
        action_batch = Batch(
            act=actions.act,
            act_normalized=actions.act_env,
            policy_entry=entry,
            dist=actions.dist,
            hidden_state=actions.state,
        )
        self.step_hook(action_batch, batch)
        self.write(batch, transitions.env_ids)

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
            self.stats.add_episodes(ep_ret[finished], ep_len[finished])
            return
        for j in finished:
            self._record_episode(int(rows[j]), ep_ret[j], int(ep_len[j]), int(ep_start[j]))

    def _record_episode(
        self, last_row: int, ep_return: np.ndarray | float, ep_len: int, start: int
    ) -> None:
        if last_row < 0:  # a cached buffer could not keep the episode
            self.stats.add_episodes(np.asarray([ep_return]), np.array([ep_len]))
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
        self, ready: ReadyEnvs, finished: np.ndarray, stepping: EnvStepping
    ) -> ReadyEnvs:
        """Reset the envs of the rows ``finished`` of ``ready`` and clear their hidden states;
        return the rows to act on next.

        A finite env's ``StopIteration`` propagates, after recording in :attr:`exhausted_at`
        where the envs stand (the finished envs at their last observations).
        """
        env_ids = ready.env_ids[finished]
        state = zero_rows(ready.state, finished)
        try:
            obs_reset, info_reset = self.env.reset(env_id=env_ids, **self.reset_kwargs)
        except StopIteration:
            reached = ReadyEnvs(ready.env_ids, ready.obs, ready.info, state)
            self.exhausted_at = stepping.end(reached)
            raise
        obs_reset_rows = as_obs(obs_reset)
        if self.check_env_output:
            check_env_output(obs_reset_rows, None, env_ids, "reset")
        if len(finished) == len(ready.env_ids):  # every env finished: nothing to merge
            return ReadyEnvs(ready.env_ids, obs_reset_rows, info_reset, state)
        return ReadyEnvs(
            ready.env_ids,
            replace_rows(ready.obs, finished, obs_reset_rows),
            replace_rows(ready.info, finished, info_reset),
            state,
        )


def _policy_entry(entry: Batch | Mapping[str, object] | None) -> Batch | None:
    """A policy output's ``policy`` entry as a Batch (None when absent or empty)."""
    if entry is None or isinstance(entry, Batch):
        return entry if entry is not None and entry.keys() else None
    if isinstance(entry, Mapping):
        return Batch(dict(entry)) if entry else None
    raise TypeError(
        "the 'policy' entry of a policy's output must be a Batch or dict, got "
        f"{type(entry).__name__}"
    )
