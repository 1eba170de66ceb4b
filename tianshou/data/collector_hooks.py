"""Hooks a collector calls while it collects, to add data to what it stores.

A *step hook* runs after every environment step, before the transitions reach the buffer; it may
add keys to the rollout batch (e.g. the action distribution). An *episode hook* runs when an
episode has finished and is in the buffer; it returns new per-step arrays (e.g. Monte-Carlo
returns) that the collector writes next to the episode's transitions.
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Protocol, TypedDict

import numpy as np
import torch
from torch.distributions import Distribution

from tianshou.data.batch import Batch, get_sliced_dist
from tianshou.data.types import BatchProtocol, RolloutBatchProtocol


class CollectActionBatchProtocol(Protocol):
    """What the policy produced for one vector step, as a step hook receives it.

    Fields are None where absent (e.g. ``dist`` and ``hidden_state`` in random collection).
    """

    act: np.ndarray | torch.Tensor
    """The raw action, as stored in the buffer (after exploration noise)."""
    act_normalized: np.ndarray | torch.Tensor
    """The action sent to the envs (``Policy.map_action`` of ``act``)."""
    policy_entry: BatchProtocol | None
    """The ``policy`` sub-batch of the policy's output, stored next to each transition."""
    dist: Distribution | None
    """The batched action distribution the action was drawn from."""
    hidden_state: np.ndarray | torch.Tensor | BatchProtocol | None
    """A recurrent policy's state after acting."""


class CollectStepBatchProtocol(RolloutBatchProtocol, Protocol):
    """The transitions of one vector step just before they are stored (``done`` included)."""

    done: np.ndarray
    policy: BatchProtocol


class EpisodeBatchProtocol(RolloutBatchProtocol, Protocol):
    """All transitions of one finished episode, oldest first, read back from the buffer."""

    done: np.ndarray


class StepHookProtocol(Protocol):
    """Called after each environment step with the action batch and the rollout batch.

    ``action_batch`` holds what the policy produced for the step (see
    :class:`CollectActionBatchProtocol`); ``rollout_batch`` holds the transitions about to be
    stored (``obs, act, rew, terminated, truncated, done, obs_next, info, policy``). Keys the
    hook adds to ``rollout_batch`` are stored as well. Any callable with this signature works.
    """

    def __call__(
        self, action_batch: CollectActionBatchProtocol, rollout_batch: CollectStepBatchProtocol
    ) -> None: ...


class StepHook(StepHookProtocol, ABC):
    """Base class for step hooks (see :class:`StepHookProtocol`)."""

    @abstractmethod
    def __call__(
        self, action_batch: CollectActionBatchProtocol, rollout_batch: CollectStepBatchProtocol
    ) -> None: ...


class StepHookAddActionDistribution(StepHook):
    """Stores the policy's action distribution of every step under ``action_dist``.

    Useful for algorithms that learn from the behaviour policy's distribution (imitation
    variants, off-policy corrections). A buffer stores arrays, so the batched distribution is
    split into one distribution per transition, kept in an object array (``buffer.action_dist[i]``
    is the distribution the action of transition ``i`` was drawn from). Steps without a
    distribution (random collection) store nothing.
    """

    ACTION_DIST_KEY = "action_dist"

    def __call__(
        self, action_batch: CollectActionBatchProtocol, rollout_batch: CollectStepBatchProtocol
    ) -> None:
        dist = action_batch.dist
        if dist is None:
            return
        rows = np.empty(dist.batch_shape[0], dtype=object)
        for i in range(len(rows)):
            rows[i] = get_sliced_dist(dist, i)
        rollout_batch[self.ACTION_DIST_KEY] = rows


class EpisodeRolloutHookProtocol(Protocol):
    """Called with a finished episode's transitions; returns arrays to store per step, or None.

    Each returned array has one entry per step of the episode and is written to the buffer under
    its key (new keys are created).
    """

    def __call__(self, episode_batch: Batch) -> dict[str, np.ndarray] | None: ...


class EpisodeRolloutHook(EpisodeRolloutHookProtocol, ABC):
    """Base class for episode hooks (see :class:`EpisodeRolloutHookProtocol`)."""

    @abstractmethod
    def __call__(self, episode_batch: Batch) -> dict[str, np.ndarray] | None: ...


def discounted_return_to_go(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """``G_t = r_t + gamma * G_{t+1}`` for every step of one episode (``G`` after the end is 0).

    :param rewards: the episode's rewards, oldest first, shape ``(T,)`` or ``(T, k)``.
    :param gamma: discount factor in [0, 1].
    """
    rewards = np.asarray(rewards, dtype=float)
    returns = np.empty_like(rewards)
    running = np.zeros_like(rewards[0]) if len(rewards) else 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


class EpisodeRolloutHookMCReturn(EpisodeRolloutHook):
    """Adds Monte-Carlo returns: the discounted return-to-go of every step, and the whole
    episode's discounted return (the same value on every step of the episode).

    :param gamma: discount factor in [0, 1].
    """

    class OutputDict(TypedDict):
        """The arrays the hook returns, one entry per step of the episode."""

        mc_return_to_go: np.ndarray
        full_episode_mc_return: np.ndarray

    MC_RETURN_TO_GO_KEY = "mc_return_to_go"
    FULL_EPISODE_MC_RETURN_KEY = "full_episode_mc_return"

    def __init__(self, gamma: float = 0.99) -> None:
        if not 0 <= gamma <= 1:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = gamma

    def __call__(self, episode_batch: Batch) -> OutputDict:  # type: ignore[override]
        to_go = discounted_return_to_go(episode_batch.rew, self.gamma)
        full = np.broadcast_to(to_go[0], to_go.shape).copy()
        return self.OutputDict(mc_return_to_go=to_go, full_episode_mc_return=full)


class EpisodeRolloutHookMerged(EpisodeRolloutHook):
    """Runs several episode hooks and merges what they return.

    :param episode_rollout_hooks: the hooks, run in order (also accepted as one list).
    :param check_overlapping_keys: raise if two hooks return the same key, instead of letting the
        later one win.
    """

    def __init__(
        self,
        *episode_rollout_hooks: EpisodeRolloutHookProtocol | Iterable[EpisodeRolloutHookProtocol],
        check_overlapping_keys: bool = True,
    ) -> None:
        hooks: list[EpisodeRolloutHookProtocol] = []
        for hook in episode_rollout_hooks:
            if callable(hook):
                hooks.append(hook)
            else:
                hooks.extend(hook)
        self.episode_rollout_hooks = hooks
        self.check_overlapping_keys = check_overlapping_keys

    def __call__(self, episode_batch: Batch) -> dict[str, np.ndarray]:
        merged: dict[str, np.ndarray] = {}
        for hook in self.episode_rollout_hooks:
            entries = hook(episode_batch)
            if not entries:
                continue
            if self.check_overlapping_keys:
                overlap = merged.keys() & entries.keys()
                if overlap:
                    raise KeyError(
                        f"episode hooks return overlapping keys {sorted(overlap)}; rename them or "
                        "pass check_overlapping_keys=False to let later hooks overwrite"
                    )
            merged.update(entries)
        return merged
