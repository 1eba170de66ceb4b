"""What every collector shares: setting up env, policy and buffer, resets, counters, and the
``collect`` entry point that validates its arguments, times the run and checks the buffer.

The collectors themselves live in :mod:`tianshou.data.collector`, and the loop of one
``collect`` call in :mod:`tianshou.data._collect_run`.
"""

import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING, Generic

import gymnasium as gym
import numpy as np
import torch
from typing_extensions import TypeVar

from tianshou.data._rollout import InfoRows, VenvObs
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import MalformedBufferError, ReplayBuffer
from tianshou.data.buffer.cached import CachedReplayBuffer
from tianshou.data.buffer.manager import ReplayBufferManager
from tianshou.data.buffer.vecbuf import VectorReplayBuffer
from tianshou.data.collector_stats import CollectStats
from tianshou.data.utils.converter import to_numpy
from tianshou.env.venvs import BaseVectorEnv, DummyVectorEnv
from tianshou.utils.torch_utils import torch_train_mode

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm, Policy

DEFAULT_BUFFER_MAXSIZE = 10_000
"""Transitions per environment in the buffer a collector creates when given none."""

TCollectStats = TypeVar("TCollectStats", bound=CollectStats, default=CollectStats)
"""The statistics type a collector returns; ``Collector(...)`` alone means ``CollectStats``."""


class CollectorBufferError(ValueError, AssertionError, TypeError):
    """The buffer has fewer sub-buffers than the collector has environments (a single
    ``ReplayBuffer`` or ``PrioritizedReplayBuffer`` has one).

    Also an ``AssertionError`` and a ``TypeError``, which earlier releases raised for a too
    small vector buffer and for a single buffer with several environments.
    """


class CollectorNotResetError(ValueError):
    """``collect`` was called on a collector that was never reset, was closed, or whose last
    ``collect`` was interrupted by an error (the envs' state is then unknown)."""


class CollectArgumentError(ValueError, TypeError):
    """``collect`` was not asked for exactly one positive ``n_step`` or ``n_episode``.

    Also a ``TypeError``, which earlier releases raised for a call without either.
    """


def _resolve_policy(policy_or_algorithm: "Policy | Algorithm") -> "Policy":
    from tianshou.algorithm.algorithm_base import Policy

    if isinstance(policy_or_algorithm, Policy):
        return policy_or_algorithm
    policy = getattr(policy_or_algorithm, "policy", None)
    if isinstance(policy, Policy):
        return policy
    raise TypeError(
        "a collector needs a Policy or an Algorithm (an object whose .policy is a Policy), "
        f"got {type(policy_or_algorithm).__name__}"
    )


def _check_buffer(buffer: ReplayBuffer | None, env_num: int) -> ReplayBuffer:
    """The buffer to collect into: the given one if it can take ``env_num`` envs, else a new
    ``VectorReplayBuffer`` with ``DEFAULT_BUFFER_MAXSIZE`` rows per env."""
    if buffer is None:
        return VectorReplayBuffer(DEFAULT_BUFFER_MAXSIZE * env_num, env_num)
    if not isinstance(buffer, ReplayBuffer):
        raise TypeError(f"buffer must be a ReplayBuffer (or subclass), got {type(buffer).__name__}")
    if isinstance(buffer, CachedReplayBuffer):
        if buffer.cached_buffer_num < env_num:
            raise CollectorBufferError(
                f"CachedReplayBuffer has {buffer.cached_buffer_num} cached buffers but the "
                f"collector has {env_num} envs; use cached_buffer_num >= {env_num}"
            )
    elif isinstance(buffer, ReplayBufferManager):
        if buffer.buffer_num < env_num:
            raise CollectorBufferError(
                f"{type(buffer).__name__} has buffer_num={buffer.buffer_num} sub-buffers but the "
                f"collector has {env_num} envs; each env needs its own sub-buffer, e.g. "
                f"VectorReplayBuffer(total_size={buffer.maxsize}, buffer_num={env_num})"
            )
    elif env_num > 1:
        name = type(buffer).__name__
        raise CollectorBufferError(
            f"cannot collect {env_num} envs into a single {name}(size={buffer.maxsize}); use "
            f"the vector version, e.g. VectorReplayBuffer(total_size={buffer.maxsize}, "
            f"buffer_num={env_num})"
        )
    return buffer


def _null_keys(batch: Batch, prefix: str = "") -> list[str]:
    """Dotted keys of the leaves of an ``isnull()`` mask Batch that contain a True."""
    keys: list[str] = []
    for key, value in batch.items():
        if isinstance(value, Batch):
            keys.extend(_null_keys(value, f"{prefix}{key}."))
        elif value is not None and np.any(to_numpy(value)):
            keys.append(prefix + key)
    return keys


class BaseCollector(Generic[TCollectStats], ABC):
    """What every collector shares: env and buffer setup, counters, resets and ``collect``.

    :param policy: a ``Policy``, or an ``Algorithm`` whose ``.policy`` is used.
    :param env: a vector env (or EnvPool env); a bare ``gymnasium.Env`` is wrapped in a
        ``DummyVectorEnv`` with a warning.
    :param buffer: where transitions go; by default a ``VectorReplayBuffer`` with
        ``DEFAULT_BUFFER_MAXSIZE`` rows per env. A plain ``ReplayBuffer`` only works with one env,
        vector buffers need at least one sub-buffer per env.
    :param exploration_noise: pass actions through ``policy.add_exploration_noise``.
    :param raise_on_nan_in_buffer: validate what is collected: an env returning a NaN or inf
        observation or reward raises
        :class:`~tianshou.data._collect_checks.NonFiniteEnvOutputError` at that step (naming the
        env ids and the key), and after each ``collect`` a buffer holding NaN or None (typically
        from a faulty hook) raises
        :class:`~tianshou.data.buffer.buffer_base.MalformedBufferError`.
    :param collect_stats_class: the statistics record ``collect`` fills and returns.
    """

    _steps_all_envs_together = True
    """Whether every step steps all (active) envs together: ``n_step`` then rounds up to a
    multiple of the number of envs, and after ``n_episode`` collection, which retires surplus
    envs mid-episode, all envs are reset."""

    def __init__(
        self,
        policy: "Policy | Algorithm",
        env: BaseVectorEnv | gym.Env,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
        raise_on_nan_in_buffer: bool = False,
        collect_stats_class: type[TCollectStats] = CollectStats,  # type: ignore[assignment]
    ) -> None:
        if isinstance(env, gym.Env) and not hasattr(env, "__len__"):
            warnings.warn(
                "Single environment detected, wrapping it in a DummyVectorEnv.", stacklevel=3
            )
            single_env = env
            env = DummyVectorEnv([lambda: single_env])
        self.env: BaseVectorEnv = env  # type: ignore[assignment]  # or a vector env alike
        self.policy = _resolve_policy(policy)
        self.buffer = _check_buffer(buffer, len(env))
        self.exploration_noise = exploration_noise
        self.raise_on_nan_in_buffer = raise_on_nan_in_buffer
        self.collect_stats_class = collect_stats_class
        self.collect_step = 0
        self.collect_episode = 0
        self.collect_time = 0.0
        self._is_closed = False
        self._action_space: gym.Space | list[gym.Space] | None = None
        self._fault: str | None = None
        """Why the collector must be reset before collecting (None when it need not be)."""

    @property
    def env_num(self) -> int:
        """Number of environments."""
        return len(self.env)

    @property
    def action_space(self) -> gym.Space | list[gym.Space]:
        """The env's action space(s) (one per env for a vector env); read from the env on first
        use, so envs without one can still be stepped by a policy."""
        if self._action_space is None:
            self._action_space = self.env.action_space
        return self._action_space

    def close(self) -> None:
        """Close the environments; the collector cannot collect afterwards."""
        self.env.close()
        self._is_closed = True

    def reset(
        self,
        reset_buffer: bool = True,
        reset_stats: bool = True,
        gym_reset_kwargs: Mapping[str, object] | None = None,
    ) -> tuple[VenvObs, InfoRows]:
        """Reset the envs and, by default, the buffer and the counters; required before the first
        ``collect`` (or use ``collect(reset_before_collect=True)``).

        :param gym_reset_kwargs: keyword arguments for the envs' ``reset`` (e.g. ``seed``).
        :return: the envs' initial observations and infos.
        """
        result = self.reset_env(gym_reset_kwargs)
        if reset_buffer:
            self.reset_buffer()
        if reset_stats:
            self.reset_stat()
        return result

    def reset_stat(self) -> None:
        """Zero the lifetime counters ``collect_step``, ``collect_episode``, ``collect_time``."""
        self.collect_step = 0
        self.collect_episode = 0
        self.collect_time = 0.0

    def reset_buffer(self, keep_statistics: bool = False) -> None:
        """Empty the buffer.

        :param keep_statistics: keep the running episodes' partial returns and lengths.
        """
        self.buffer.reset(keep_statistics=keep_statistics)

    @abstractmethod
    def reset_env(
        self, gym_reset_kwargs: Mapping[str, object] | None = None
    ) -> tuple[VenvObs, InfoRows]:
        """Reset all envs and forget running episodes (and hidden states)."""

    def collect(
        self,
        n_step: int | None = None,
        n_episode: int | None = None,
        random: bool = False,
        render: float | None = None,
        reset_before_collect: bool = False,
        gym_reset_kwargs: Mapping[str, object] | None = None,
    ) -> TCollectStats:
        """Collect ``n_step`` transitions or ``n_episode`` episodes into the buffer.

        :param n_step: transitions to collect (all envs step together, so up to ``env_num - 1``
            more may be collected); running episodes continue in the next call.
        :param n_episode: episodes to collect; afterwards all envs are reset.
        :param random: sample actions from the envs' action spaces instead of the policy.
        :param render: render after each step and sleep this many seconds.
        :param reset_before_collect: reset envs and counters (not the buffer) first.
        :param gym_reset_kwargs: keyword arguments for every env reset during collection.
        :raises ValueError: unless exactly one of ``n_step``/``n_episode`` is a positive
            integer, or if the collector was never reset (:class:`CollectorNotResetError`).

        If an error (or ``KeyboardInterrupt``) interrupts the collection, every step completed
        before it is in the buffer and counted in ``collect_step``/``collect_episode``; the
        collector then refuses to collect until it is reset, because the envs' state is
        unknown and continuing would store a transition spanning the fault.

        A finite vector env (one that serves a data set, e.g. for evaluation) signals that its
        data is exhausted by raising ``StopIteration`` from ``reset``. That ``StopIteration``
        reaches the caller unchanged, the steps before it are stored, and the next ``collect``
        continues from the last observations without resetting the envs (a finite env gets
        ready to serve again before it raises).
        """
        self._check_collect_args(n_step, n_episode)
        if reset_before_collect:
            self.reset(reset_buffer=False, gym_reset_kwargs=gym_reset_kwargs)
        stats = self.collect_stats_class()
        start = self._read_clock()
        try:
            with torch_train_mode(self.policy, enabled=False), torch.no_grad():
                self._collect(stats, n_step, n_episode, random, render, gym_reset_kwargs)
        except BaseException as exc:
            self._count(stats, self._read_clock() - start)
            if not self._can_continue_after(exc):
                self._refuse_until_reset(exc, stats)
            raise
        elapsed = self._read_clock() - start
        self._count(stats, elapsed)
        stats.set_collect_time(elapsed, update_collect_speed=True)
        stats.refresh_all_sequence_stats()
        if self.raise_on_nan_in_buffer and self.buffer.hasnull():
            keys = _null_keys(self.buffer.isnull())
            raise MalformedBufferError(
                f"the buffer holds NaN or None values under {keys}; drop them with "
                "buffer.dropnull(). Typical causes: an episode hook used with n_step collection, "
                "or a step hook that writes incomplete data"
            )
        return stats

    def _read_clock(self) -> float:
        """Seconds on the monotonic clock that times ``collect``. The collectors of
        :mod:`tianshou.data.collector` read the clock of that module's ``time``, where the
        published library does its timing, so that replacing ``tianshou.data.collector.time``
        changes the reported durations."""
        return time.monotonic()

    def _check_collect_args(self, n_step: int | None, n_episode: int | None) -> None:
        if (n_step is None) == (n_episode is None):
            raise CollectArgumentError(
                "collect needs exactly one of n_step and n_episode, got "
                f"n_step={n_step}, n_episode={n_episode}"
            )
        for name, value in (("n_step", n_step), ("n_episode", n_episode)):
            if value is not None and (not isinstance(value, int | np.integer) or value < 1):
                raise CollectArgumentError(f"{name} must be a positive integer, got {value!r}")
        if self._steps_all_envs_together and n_step is not None and n_step % self.env_num:
            warnings.warn(
                f"n_step={n_step} is not a multiple of the number of envs ({self.env_num}); "
                f"all envs step together, so up to {self.env_num - 1} extra transitions may be "
                "collected",
                stacklevel=3,
            )

    def _count(self, stats: TCollectStats, elapsed: float) -> None:
        """Add one call's steps, episodes and time to the lifetime counters."""
        self.collect_step += stats.n_collected_steps
        self.collect_episode += stats.n_collected_episodes
        self.collect_time += elapsed

    def _refuse_until_reset(self, exc: BaseException, stats: TCollectStats) -> None:
        """After ``exc`` interrupted a collection: forget the envs' state, so the next
        ``collect`` asks for a reset, and tell the user what was kept."""
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        self._fault = f"its last collect() was interrupted by {reason}"
        self._forget_env_state()
        exc.add_note(
            f"{type(self).__name__}: the {stats.n_collected_steps} steps "
            f"({stats.n_collected_episodes} finished episodes) completed before this error are "
            "in the buffer; reset the collector (e.g. collector.reset(reset_buffer=False)) "
            "before collecting again"
        )

    def _can_continue_after(self, exc: BaseException) -> bool:
        """Whether the next ``collect`` can continue without a reset after ``exc`` interrupted
        this one: only after a finite env's ``StopIteration``, when ``_collect`` recorded
        where the envs stand. Collectors that do not support finite envs keep the default."""
        return False

    @abstractmethod
    def _forget_env_state(self) -> None:
        """Drop the current observations so that ``collect`` requires a reset."""

    @abstractmethod
    def _collect(
        self,
        stats: TCollectStats,
        n_step: int | None,
        n_episode: int | None,
        random: bool,
        render: float | None,
        gym_reset_kwargs: Mapping[str, object] | None,
    ) -> None:
        """Run the collection loop (in eval mode, without gradients), recording into ``stats``
        as steps complete (so that an interrupted run has counted what it stored)."""
