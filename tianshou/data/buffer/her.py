"""Hindsight experience replay (Andrychowicz et al. 2017, arXiv:1707.01495), "future" strategy.

In goal-conditioned tasks with sparse rewards almost every stored episode failed to reach its
goal, so it teaches little. HER replays such an episode as if its goal had been a state the agent
actually reached later on: the desired goal is replaced by a future achieved goal and the reward
is recomputed, which turns failures into successes for the relabelled goal.

The relabelling happens when sampling: the goals and rewards of the sampled episodes are written
into the storage itself (so everything reading the buffer afterwards, such as n-step returns
through ``next``, sees one consistent relabelled episode), and the original values are kept aside
and written back before the buffer is sampled, written to, saved or pickled again.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.types import IndexType

__all__ = ["HERReplayBuffer", "RestoresOriginalsFirst"]

_GOAL_KEYS = ("observation", "achieved_goal", "desired_goal")


class RestoresOriginalsFirst(ReplayBuffer):
    """Undo a pending relabelling before anything writes, saves or pickles the storage.

    The one definition of this rule for :class:`HERReplayBuffer` and
    :class:`~tianshou.data.HERReplayBufferManager`; each provides :meth:`_restore_cache`.
    """

    def _restore_cache(self) -> None:
        """Write back the original goals and rewards replaced by the last relabelling."""
        raise NotImplementedError

    def add(
        self,
        batch: Batch,
        buffer_ids: np.ndarray | list[int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Restore the original goals, then store as :meth:`ReplayBuffer.add` does."""
        self._restore_cache()
        return super().add(batch, buffer_ids)

    def update(self, buffer: ReplayBuffer) -> np.ndarray:
        self._restore_cache()
        return super().update(buffer)

    def reset(self, keep_statistics: bool = False) -> None:
        self._restore_cache()
        super().reset(keep_statistics=keep_statistics)

    def set_batch(self, batch: Batch) -> None:
        self._restore_cache()
        super().set_batch(batch)

    def set_array_at_key(
        self,
        seq: np.ndarray,
        key: str,
        index: IndexType | None = None,
        default_value: float | None = None,
    ) -> None:
        self._restore_cache()
        super().set_array_at_key(seq, key, index, default_value)

    def dropnull(self) -> None:
        self._restore_cache()
        super().dropnull()

    def save_hdf5(self, path: str, compression: str | None = None) -> None:
        """Restore the original goals, then save as :meth:`ReplayBuffer.save_hdf5` does (the
        reward function is pickled: loading needs ``allow_pickle=True``)."""
        self._restore_cache()
        super().save_hdf5(path, compression)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle the original (not relabelled) data: the relabelling is undone first."""
        self._restore_cache()
        return super().__getstate__()

    def __getitem__(self, index: slice | IndexType) -> Batch:
        """Stored transitions as :meth:`ReplayBuffer.__getitem__` returns them; ``buf[:]`` lists
        every transition as currently stored without relabelling anything (unlike
        ``sample_indices(0)``)."""
        if isinstance(index, slice) and index == slice(None):
            return self._rows_to_batch(super().sample_indices(0))
        return super().__getitem__(index)


class HERReplayBuffer(RestoresOriginalsFirst):
    """A replay buffer that relabels the goals of sampled episodes with goals achieved later.

    Observations must be dicts (Batches) with the keys ``observation``, ``achieved_goal`` and
    ``desired_goal``. For each sampled transition the buffer follows its episode for up to
    ``horizon`` steps; transitions sharing that trajectory end form one group. A fraction
    ``1 - 1 / future_k`` of the groups gets a new desired goal: the ``achieved_goal`` of the next
    observation at a step drawn uniformly between the group's last sampled transition and the
    trajectory end. The whole trajectory of the group is relabelled (``obs.desired_goal``,
    ``obs_next.desired_goal``) and its ``rew`` recomputed as
    ``compute_reward_fn(achieved_goal_of_obs_next, new_desired_goal)``; other fields, including
    ``terminated``, are left unchanged.

    :param size: number of transitions kept.
    :param compute_reward_fn: ``fn(achieved_goal, desired_goal) -> reward``, vectorised over the
        leading axis of both arrays (the environment's reward function for a goal).
    :param horizon: the longest stretch of an episode followed from a sampled transition (at least
        the episode length to consider whole episodes).
    :param future_k: relabelling ratio: on average ``future_k - 1`` relabelled groups per kept one
        (``future_k = 8`` relabels 87.5%, 1 none). Can be overridden through :attr:`future_p`.
    :param kwargs: the :class:`~tianshou.data.ReplayBuffer` options.
    """

    def __init__(
        self,
        size: int,
        compute_reward_fn: Callable[[np.ndarray, np.ndarray], np.ndarray],
        horizon: int,
        future_k: float = 8.0,
        **kwargs: Any,
    ) -> None:
        if isinstance(horizon, bool) or not isinstance(horizon, int | np.integer) or horizon < 1:
            raise ValueError(f"horizon must be an integer >= 1, got {horizon!r}")
        if not future_k >= 1.0:
            raise ValueError(f"future_k must be >= 1 (1 disables relabelling), got {future_k!r}")
        if not callable(compute_reward_fn):
            raise TypeError(f"compute_reward_fn must be callable, got {compute_reward_fn!r}")
        super().__init__(size, **kwargs)
        self.horizon = int(horizon)
        self.future_p = 1.0 - 1.0 / future_k
        """Probability that a sampled group is relabelled."""
        self.fn = compute_reward_fn
        self._altered_indices = np.zeros(0, dtype=np.int64)
        self._original_meta = Batch()

    # ------------------------------------------------------------------ restoring the originals
    def _restore_cache(self) -> None:
        """Write back the original goals and rewards replaced by the last relabelling."""
        rows = self.__dict__.get("_altered_indices")
        if rows is None or rows.size == 0:
            return
        original = self._original_meta
        meta = self._meta
        meta.obs.desired_goal[rows] = original.obs_goal
        if original.obs_next_goal is not None:
            meta.obs_next.desired_goal[rows] = original.obs_next_goal
        meta.rew[rows] = original.rew
        self._altered_indices = np.zeros(0, dtype=np.int64)
        self._original_meta = Batch()

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Restore a pickled buffer. The published library pickles a pending relabelling
        (whole cached rows) instead of undoing it first; such a cache is written back here."""
        state = dict(state)
        rows = np.asarray(state.pop("_altered_indices", ()), dtype=np.int64)
        original = state.pop("_original_meta", None)
        super().__setstate__(state)
        self._altered_indices = np.zeros(0, dtype=np.int64)
        self._original_meta = Batch()
        if rows.size and isinstance(original, Batch):
            self._meta[rows] = original

    # ------------------------------------------------------------------ sampling and relabelling
    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Draw indices as :meth:`ReplayBuffer.sample_indices` does, then relabel the goals of
        the sampled episodes in the storage (see the class docstring)."""
        self._restore_cache()
        indices = super().sample_indices(batch_size)
        self.rewrite_transitions(indices.copy())
        return indices

    def rewrite_transitions(self, indices: np.ndarray) -> None:
        """Relabel the episodes of the transitions at ``indices`` (rows of this buffer) in place,
        keeping the originals for :meth:`_restore_cache`. ``indices`` may be reordered."""
        if indices.size == 0:
            return
        rng = self._random_state
        maxsize = self.maxsize
        # chronological order: rows before the insertion slot were written last
        indices[indices < self._insertion_idx] += maxsize
        indices.sort()
        indices[indices >= maxsize] -= maxsize
        steps = [indices]
        for _ in range(self.horizon - 1):
            steps.append(self.next(steps[-1]))
        trajectories = np.stack(steps)  # (horizon, n)
        start, end = trajectories[0], trajectories[-1]
        span = (end - start + maxsize) % maxsize
        future = (start + np.round(rng.uniform(size=len(start)) * span).astype(np.int64)) % maxsize
        # a group = sampled transitions whose trajectories end at the same row; they are
        # contiguous in chronological order, so its first and last member delimit it
        first = np.sort(np.unique(end, return_index=True)[1])
        last = np.append(first[1:] - 1, len(end) - 1)
        groups = len(first)
        relabel = rng.choice(groups, size=int(groups * self.future_p), replace=False)
        self._relabel(trajectories[:, first], future[last], relabel)

    def _relabel(self, rows: np.ndarray, future: np.ndarray, relabel: np.ndarray) -> None:
        """Give the groups ``relabel`` (columns of the ``(horizon, groups)`` matrix ``rows``) the
        goal achieved after step ``future`` of their group, recompute their rewards, and cache
        the originals of every row in ``rows``."""
        meta = self._meta
        obs = meta.obs
        if not isinstance(obs, Batch) or any(k not in obs.__dict__ for k in _GOAL_KEYS):
            raise ValueError(
                f"HERReplayBuffer needs dict observations with keys {list(_GOAL_KEYS)}, "
                f"got obs of type {type(obs).__name__}"
                + (f" with keys {list(obs.__dict__)}" if isinstance(obs, Batch) else ""),
            )
        obs_next = meta.obs_next if self._save_obs_next else None
        original = batch_of_parsed_values(
            {
                "obs_goal": obs.desired_goal[rows],
                "obs_next_goal": None if obs_next is None else obs_next.desired_goal[rows],
                "rew": meta.rew[rows],
            },
        )
        if obs_next is None:
            next_rows = self.next(rows)
            new_goal = obs.achieved_goal[self.next(future)]
            achieved_next = obs.achieved_goal[next_rows]
        else:
            new_goal = obs_next.achieved_goal[future]
            achieved_next = obs_next.achieved_goal[rows]
        goal = original.obs_goal.copy()
        goal[:, relabel] = new_goal[None, relabel]
        rew = original.rew.copy()
        rew[:, relabel] = self._compute_reward(achieved_next, goal)[:, relabel]
        self._altered_indices = rows
        self._original_meta = original
        obs.desired_goal[rows] = goal
        if obs_next is not None:
            obs_next.desired_goal[rows] = goal
        meta.rew[rows] = rew

    def _compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
        """``compute_reward_fn`` over ``(horizon, groups, *goal_shape)`` arrays, flattening the two
        leading axes for the call and restoring them on the result."""
        lead = achieved_goal.shape[:2]
        reward = np.asarray(
            self.fn(
                achieved_goal.reshape(-1, *achieved_goal.shape[2:]),
                desired_goal.reshape(-1, *desired_goal.shape[2:]),
            ),
        )
        return reward.reshape(*lead, *reward.shape[1:])
