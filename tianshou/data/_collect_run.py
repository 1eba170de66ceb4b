"""The per-call machinery of a collector: acting, storing, resetting finished envs, statistics.

A :class:`CollectRun` lives for one ``collect`` call. It resolves once, up front, the choices
that stay fixed during the call (random or policy actions, which hooks run, whether the stats
class needs episode Batches), so that the collectors' loops only read as the algorithm.
"""

import time
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tianshou.data._rollout import (
    RolloutStaging,
    as_obs,
    info_to_batch,
    replace_rows,
    rollout_batch,
)
from tianshou.data.batch import Batch
from tianshou.data.collector_stats import CollectStats
from tianshou.data.utils.converter import to_numpy

if TYPE_CHECKING:
    from tianshou.data.collector import Collector


class CollectRun:
    """Helpers for one ``collect`` call of ``collector``, recording into ``stats``.

    :param collector: the collector (its policy, env, buffer, hooks and staging are used).
    :param stats: the statistics record of this call.
    :param random: sample actions from the action spaces instead of running the policy.
    :param gym_reset_kwargs: keyword arguments for resetting finished envs.
    """

    def __init__(
        self,
        collector: "Collector[Any]",
        stats: CollectStats,
        random: bool,
        gym_reset_kwargs: dict[str, Any] | None,
    ) -> None:
        self.collector = collector
        self.policy = collector.policy
        self.env = collector.env
        self.buffer = collector.buffer
        self.staging: RolloutStaging = collector._staging
        self.stats = stats
        self.random = random
        self.reset_kwargs = gym_reset_kwargs or {}
        self.step_hook = collector._on_step_hook is not None
        stats_type = type(stats)
        self.default_step_stats = (
            stats_type.update_at_step_batch is CollectStats.update_at_step_batch
        )
        self.episode_batches = (
            collector._on_episode_done_hook is not None
            or stats_type.update_at_episode_done is not CollectStats.update_at_episode_done
        )
        """Whether finished episodes are read back from the buffer (for the episode hook or a
        stats class that wants them); they are then written as soon as they finish."""
        self.staging.clear()
        # random actions are inverse-mapped once per buffer write rather than once per step
        defer_inverse = random and not self.step_hook
        self.staging.act_transform = self.policy.map_action_inverse if defer_inverse else None
        self.inverse_now = random and self.step_hook

    # ---------------------------------------------------------------- acting
    def act(self, obs: Any, info: Any, state: Any, env_ids: np.ndarray) -> tuple[Any, ...]:
        """Actions for the envs ``env_ids``: ``(stored action, env action, policy entry or None,
        next hidden state, action distribution)``."""
        if self.random:
            return self._random_action(env_ids)
        return self._policy_action(obs, info, state)

    def _random_action(self, env_ids: np.ndarray) -> tuple[Any, ...]:
        spaces = self.collector._action_spaces
        if len(env_ids) != len(spaces):
            spaces = [spaces[i] for i in env_ids.tolist()]
        act_env = np.array([space.sample() for space in spaces])
        act = self.policy.map_action_inverse(act_env) if self.inverse_now else act_env
        return act, act_env, None, None, None

    def _policy_action(self, obs: Any, info: Any, state: Any) -> tuple[Any, ...]:
        obs_batch = Batch._from_parsed_dict({"obs": obs, "info": info_to_batch(info)})
        result = self.policy(obs_batch, state)
        act: Any = result.act
        act = act.detach().cpu().numpy() if isinstance(act, torch.Tensor) else to_numpy(act)
        if self.collector.exploration_noise:
            act = self.policy.add_exploration_noise(act, obs_batch)
        act_env = self.policy.map_action(act)
        entry = _policy_entry(result.get("policy"))
        state = result.get("state")
        if state is not None:
            entry = Batch() if entry is None else Batch._from_parsed_dict(dict(entry.__dict__))
            entry.hidden_state = state
        return act, act_env, entry, state, result.get("dist")

    def count_steps(self, act: Any, dist: Any, n: int) -> None:
        """Add ``n`` steps to the stats (with the action distribution, if there is one)."""
        if dist is None and self.default_step_stats:
            self.stats.n_collected_steps += n
        else:
            self.stats.update_at_step_batch(Batch._from_parsed_dict({"act": act, "dist": dist}))

    # ---------------------------------------------------------------- storing
    def store_with_hook(
        self,
        action: tuple[Any, ...],
        transition: tuple[Any, Any, np.ndarray, np.ndarray, np.ndarray, Any],
        env_ids: np.ndarray,
    ) -> None:
        """Run the step hook on one vector step's transitions, then store them at once.

        :param action: ``(stored action, env action, policy entry, hidden state, dist)``.
        :param transition: ``(obs, obs_next, rew, terminated, truncated, info)``.
        :param env_ids: the env of each row.
        """
        act, act_env, entry, state, dist = action
        obs, obs_next, rew, term, trunc, info = transition
        entry = Batch() if entry is None else entry
        batch = rollout_batch(obs, act, obs_next, rew, term, trunc, info_to_batch(info), entry)
        action_batch = Batch(
            act=act,
            act_normalized=act_env,
            policy_entry=entry,
            dist=dist,
            hidden_state=state,
        )
        self.collector.run_on_step_hook(action_batch, batch)
        self.write(batch, env_ids)

    def render(self, sleep: float) -> None:
        """Render the envs, then pause ``sleep`` seconds (if positive) so a human can watch."""
        self.env.render()
        if sleep > 0:
            time.sleep(sleep)

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
        additions = self.collector.run_on_episode_done(episode)
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
        if len(local) == len(obs_next):  # every env finished: nothing to merge
            return as_obs(obs_reset), info_reset
        obs = replace_rows(obs_next, local, as_obs(obs_reset))
        return obs, replace_rows(info, local, info_reset)


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
