"""Vector environments: several gymnasium envs behind one batched ``reset``/``step``.

Each env is driven by an :class:`~tianshou.env.worker.EnvWorker` (in-process, subprocess or Ray
actor). Results are stacked along a new first axis: observations with one ``np.array`` call
(ragged observations become an object array, dict observations an object array of dicts),
rewards and flags as arrays, infos as an object array of dicts that each carry ``env_id``.

With ``wait_num < env_num`` or a ``timeout`` the vector env is asynchronous: ``step`` returns as
soon as ``wait_num`` of the stepping envs finished (or the timeout passed), together with every
other env that is done by then, and the caller steps ready envs again while slow ones keep
running. ``ready_id`` and ``waiting_id`` say which is which.

Faults never leave a stale result behind. When a ``step`` or ``reset`` fails (an env raised, a
worker died or missed its ``step_timeout``, or ``KeyboardInterrupt`` arrived mid-call), the envs
of that call whose results did not reach the caller are marked as needing a reset: stepping them
raises :class:`EnvStateError` until ``reset`` is called for them, and replies that were still in
flight are discarded by their workers instead of being returned for a later call.
"""

import contextlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec

from tianshou.env.utils import ENV_TYPE, gym_new_venv_step_type
from tianshou.env.worker import (
    DummyEnvWorker,
    EnvWorker,
    EnvWorkerError,
    RayEnvWorker,
    SubprocEnvWorker,
)
from tianshou.utils.optional_dependency import install_hint

if TYPE_CHECKING:
    from tianshou.data.batch import Batch

GYM_RESERVED_KEYS = ["metadata", "reward_range", "spec", "action_space", "observation_space"]
"""Attributes that read per-env lists through :meth:`BaseVectorEnv.get_env_attr`."""

IdType = int | list[int] | np.ndarray | None


class EnvStateError(RuntimeError, AssertionError):
    """A vector env was used in a state that forbids it.

    It is closed, an env is still stepping (asynchronous mode), or an env must be reset because
    an earlier call on it failed or was interrupted before its result arrived.

    Also an ``AssertionError``, since earlier releases signalled these cases with assertions
    and user code may catch that.
    """


def _object_array(items: Sequence[Any]) -> np.ndarray:
    """A 1-d object array holding ``items`` as they are (numpy would try to broadcast them)."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


def _stack_step_results(
    results: Sequence[Any], ids: Sequence[int] | np.ndarray
) -> gym_new_venv_step_type:
    """Stack the step results of envs ``ids`` along a new first axis; tag infos with ``env_id``."""
    try:
        obs, rew, terminated, truncated, info = zip(*results, strict=True)
    except ValueError as exc:
        raise TypeError(
            "env.step() must return (obs, reward, terminated, truncated, info) as in "
            "gymnasium >= 0.26"
        ) from exc
    for env_info, j in zip(info, ids, strict=True):
        env_info["env_id"] = j
    return (
        _stack_obs(obs),
        np.array(rew),
        np.array(terminated),
        np.array(truncated),
        np.array(info),
    )


def _stack_obs(obs_list: Sequence[Any]) -> np.ndarray:
    """Stack per-env observations; ragged ones become an object array."""
    if isinstance(obs_list[0], tuple):
        raise TypeError(
            "Tuple observation spaces are not supported by vector envs; "
            "use an array or Dict observation space instead"
        )
    try:
        return np.array(obs_list)
    except ValueError:  # different shapes per env
        return _object_array(obs_list)


class BaseVectorEnv:
    """Runs ``len(env_fns)`` environments and batches their results.

    :param env_fns: callables that each build one environment (``lambda: gym.make(...)``).
    :param worker_fn: builds the worker that will own an env, given its ``env_fn``.
    :param wait_num: in asynchronous mode, ``step`` returns once this many stepping envs are
        done. Defaults to all envs, i.e. synchronous stepping.
    :param timeout: in asynchronous mode, the longest one ``step`` call waits (seconds) for
        ``wait_num`` envs before returning whatever envs are ready; if none is, it waits for the
        first one. None waits for ``wait_num`` envs. Envs still stepping from earlier calls
        count like the ones just started, so a slow env's result is returned by the first call
        during which it arrives. (To end envs that hang, use the ``step_timeout`` of the
        subprocess and Ray vector envs.)

    Example::

        >>> import gymnasium as gym
        >>> from tianshou.env import DummyVectorEnv
        >>> envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(3)])
        >>> obs, info = envs.reset(seed=0)
        >>> obs.shape, info[2]["env_id"]
        ((3, 4), 2)
        >>> obs, rew, terminated, truncated, info = envs.step([0, 1, 0])
        >>> rew
        array([1., 1., 1.])
        >>> envs.close()
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        worker_fn: Callable[[Callable[[], gym.Env]], EnvWorker],
        wait_num: int | None = None,
        timeout: float | None = None,
    ) -> None:
        self.env_num = len(env_fns)
        if self.env_num == 0:
            raise ValueError("env_fns is empty: a vector env needs at least one env factory")
        for i, env_fn in enumerate(env_fns):
            if not callable(env_fn):
                raise TypeError(
                    f"env_fns[{i}] is a {type(env_fn).__name__}, not a callable; pass functions "
                    "that build the envs, e.g. lambda: gym.make('CartPole-v1')"
                )
        self.wait_num = wait_num or self.env_num
        if not 1 <= self.wait_num <= self.env_num:
            raise ValueError(f"wait_num must be in [1, {self.env_num}], got {wait_num}")
        if timeout is not None and timeout <= 0:
            raise ValueError(f"timeout must be positive seconds or None, got {timeout}")
        self.timeout = timeout
        self.is_async = self.wait_num != self.env_num or timeout is not None
        self._pending: dict[int, EnvWorker] = {}  # env stepping asynchronously -> its worker
        self._lost: dict[int, str] = {}  # env that must be reset -> exception that lost its result
        self._all_ids = list(range(self.env_num))
        self.is_closed = False
        self.workers: list[EnvWorker] = []
        try:
            for env_fn in env_fns:
                self.workers.append(worker_fn(env_fn))
        except BaseException:
            self.close()
            raise
        self.worker_class = type(self.workers[0])
        if not issubclass(self.worker_class, EnvWorker):
            raise TypeError(f"worker_fn must build EnvWorker instances, got {self.worker_class}")
        self._in_process = issubclass(self.worker_class, DummyEnvWorker)

    @property
    def waiting_id(self) -> list[int]:
        """Envs stepping asynchronously, whose results a later ``step`` will return."""
        return list(self._pending)

    @property
    def waiting_conn(self) -> list[EnvWorker]:
        """The workers of :attr:`waiting_id`."""
        return list(self._pending.values())

    @property
    def ready_id(self) -> list[int]:
        """Envs that are not stepping, which ``step`` and ``reset`` accept."""
        return [j for j in self._all_ids if j not in self._pending]

    def __len__(self) -> int:
        return self.env_num

    @property
    def action_space(self) -> list[gym.Space]:
        """The action space of each env."""
        return self.get_env_attr("action_space")

    @property
    def observation_space(self) -> list[gym.Space]:
        """The observation space of each env."""
        return self.get_env_attr("observation_space")

    @property
    def spec(self) -> list[EnvSpec | None]:
        """The registration spec of each env (None for unregistered envs)."""
        return self.get_env_attr("spec")

    @property
    def metadata(self) -> list[dict[str, Any]]:
        """The metadata dict of each env."""
        return self.get_env_attr("metadata")

    @property
    def reward_range(self) -> list[tuple[float, float]]:
        """The reward range of each env (only envs that still define one; gymnasium 1.x doesn't)."""
        return self.get_env_attr("reward_range")

    def get_env_attr(self, key: str, id: IdType = None) -> list[Any]:
        """Read attribute ``key`` of the envs ``id`` (all by default), looking through wrappers."""
        self._assert_is_not_closed()
        ids = self._wrap_id(id)
        if self.is_async:
            self._assert_id(ids)
        return [self.workers[j].get_env_attr(key) for j in ids]

    def set_env_attr(self, key: str, value: Any, id: IdType = None) -> None:
        """Set attribute ``key`` of the (unwrapped) envs ``id`` (all by default) to ``value``."""
        self._assert_is_not_closed()
        ids = self._wrap_id(id)
        if self.is_async:
            self._assert_id(ids)
        for j in ids:
            self.workers[j].set_env_attr(key, value)

    def reset(self, env_id: IdType = None, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        """Reset the envs ``env_id`` (all by default); ``kwargs`` go to every ``env.reset``.

        A ``seed`` keyword is passed unchanged to each env reset here (and also seeds their
        action-space samplers); use :meth:`seed` for distinct per-env seeds.

        :return: stacked observations and an object array of info dicts (with ``env_id``).
        """
        self._assert_is_not_closed()
        ids = self._wrap_id(env_id)
        if len(ids) == 0:
            raise ValueError("env_id is empty: select at least one environment to reset")
        if self.is_async:
            self._assert_id(ids)
        try:
            results = self._send_and_receive(ids, None, kwargs)
        except BaseException as exc:
            self._mark_lost(ids, exc)
            raise
        if self._lost:
            for j in ids:
                self._lost.pop(int(j), None)
        for j, result in zip(ids, results, strict=True):
            if not (isinstance(result, tuple | list) and len(result) == 2):
                raise TypeError(
                    f"env.reset() of environment {j} returned {type(result).__name__}; "
                    "vector envs need the gymnasium API, which returns (obs, info)"
                )
            result[1]["env_id"] = j
        return _stack_obs([r[0] for r in results]), _object_array([r[1] for r in results])

    def step(
        self, action: "np.ndarray | Batch | None", id: IdType = None
    ) -> gym_new_venv_step_type:
        """Step the envs ``id`` (all by default) with one action each: an array, or a Batch
        (structured actions) whose rows are the envs' actions.

        In asynchronous mode, ``action=None`` only collects results of envs already stepping,
        and the returned arrays cover just the envs that finished (see ``info["env_id"]``).

        :return: ``(obs, rew, terminated, truncated, info)``, each stacked over envs.
        :raises EnvStateError: if one of the envs must be reset first, because an earlier call
            on it failed or was interrupted before its result arrived.
        """
        if self.is_closed:
            self._assert_is_not_closed()
        ids = self._all_ids if id is None else self._wrap_id(id)
        if self._lost and action is not None:
            self._assert_not_lost(ids)
        if self.is_async:
            return self._step_async(action, ids)
        if action is None or len(action) != len(ids) or len(ids) == 0:
            count = "no" if action is None else len(action)
            raise ValueError(f"got {count} actions for the {len(ids)} environments {ids}")
        try:
            return _stack_step_results(self._send_and_receive(ids, action, None), ids)
        except BaseException as exc:
            self._mark_lost(ids, exc)
            raise

    def seed(self, seed: int | Sequence[int | None] | None = None) -> list[Any]:
        """Seed every env and its action-space sampler: an int ``s`` gives env ``i`` seed ``s + i``.

        :param seed: None (fresh entropy for all), an int, or one seed per env.
        """
        self._assert_is_not_closed()
        self._assert_none_waiting("seed")
        if seed is None:
            seeds: Sequence[int | None] = [None] * self.env_num
        elif isinstance(seed, int | np.integer):
            seeds = [int(seed) + i for i in range(self.env_num)]
        else:
            seeds = seed
            if len(seeds) != self.env_num:
                raise ValueError(f"got {len(seeds)} seeds for {self.env_num} environments")
        return [w.seed(s) for w, s in zip(self.workers, seeds, strict=True)]

    def render(self, **kwargs: Any) -> list[Any]:
        """Render every env and return their results in env order."""
        self._assert_is_not_closed()
        self._assert_none_waiting("render")
        return [w.render(**kwargs) for w in self.workers]

    def close(self) -> None:
        """Close all envs and release their workers; later calls do nothing.

        Any other method raises :class:`EnvStateError` afterwards.
        """
        if self.is_closed:
            return
        self.is_closed = True
        for worker in self.workers:  # hung envs then use up the close timeout together
            worker.begin_close()
        for worker in self.workers:
            worker.close()

    def __del__(self) -> None:
        # Wrappers share their venv's workers and must not close them; only owners do.
        if self.__dict__.get("workers") and not self.__dict__.get("is_closed", True):
            # interpreter shutdown may have torn down what closing needs
            with contextlib.suppress(Exception):
                self.close()

    def _send_and_receive(
        self,
        ids: Sequence[int] | np.ndarray,
        actions: "np.ndarray | Batch | Sequence[Any] | None",
        reset_kwargs: dict[str, Any] | None = None,
    ) -> list[Any]:
        """Start all envs first, then collect each result.

        ``actions`` None means reset with ``reset_kwargs``. An exception is raised labelled with
        the env that caused it; the replies of the other envs still in flight are discarded by
        their workers when they arrive (the caller marks those envs as needing a reset).
        """
        workers = self.workers
        current = ids[0]  # the env being handled, to name it if it fails
        results: list[Any] = []
        try:
            if actions is None:
                for current in ids:
                    workers[current].send(None, **reset_kwargs)  # type: ignore[arg-type]
            else:
                for current, act in zip(ids, actions, strict=True):
                    workers[current].send(act)
            for current in ids:
                results.append(workers[current].recv())
        except Exception as exc:
            self._label_and_raise(exc, current)
        return results

    def _step_async(
        self,
        action: "np.ndarray | Batch | Sequence[Any] | None",
        ids: Sequence[int] | np.ndarray,
    ) -> gym_new_venv_step_type:
        if action is not None:
            self._assert_id(ids)
            if len(action) != len(ids):
                raise ValueError(f"got {len(action)} actions for the {len(ids)} environments {ids}")
        # Envs this call may take a result from: after a failure, those not stepping are lost.
        touched = [*(ids if action is not None else []), *self._pending]
        try:
            if action is not None:
                for act, j in zip(action, ids, strict=True):
                    try:
                        self.workers[j].send(act)
                    except Exception as exc:
                        self._label_and_raise(exc, j)
                    self._pending[int(j)] = self.workers[j]
            if not self._pending:
                raise EnvStateError(
                    "no environment is stepping, so there is nothing to wait for: "
                    "pass actions for (some of) the ready environments"
                )
            return _stack_step_results(*self._receive_ready(self._wait_for_ready()))
        except BaseException as exc:
            self._mark_lost([j for j in touched if j not in self._pending], exc)
            raise

    def _wait_for_ready(self) -> list[EnvWorker]:
        """Wait for ``wait_num`` stepping envs or ``timeout``, then take every env that is done.

        The timeout runs from the start of this wait, for envs started by earlier calls as well;
        when it passes with no env done, the wait goes on for the first one.
        """
        wait = self.worker_class.wait
        stepping = list(self._pending.values())
        ready = wait(stepping, min(self.wait_num, len(stepping)), self.timeout)
        while not ready:  # also when a backend's wait for a step deadline returned a bit early
            ready = wait(stepping, 1, None)
        others = [worker for worker in stepping if worker not in ready]
        if others:  # finished meanwhile, or beyond the wait_num a backend hands back
            ready += wait(others, len(others), 0)
        return ready

    def _receive_ready(self, ready: list[EnvWorker]) -> tuple[list[Any], list[int]]:
        """Collect the results of ``ready`` workers, making their envs ready again.

        :return: the results, and the ids of the envs they belong to.
        """
        env_id_of = {id(worker): j for j, worker in self._pending.items()}
        results = []
        ids = []
        for worker in ready:
            j = env_id_of[id(worker)]
            del self._pending[j]
            try:
                results.append(worker.recv())
            except Exception as exc:
                self._label_and_raise(exc, j)
            ids.append(j)
        return results, ids

    def _label_and_raise(self, exc: Exception, env_id: int | np.integer) -> NoReturn:
        """Re-raise an exception from an env's worker so that it names the env.

        Exceptions of the caller's own (e.g. ``TimeoutError`` from a signal handler during a
        subprocess step) pass through unchanged: only in-process envs raise their own type.
        """
        if isinstance(exc, EnvWorkerError):
            raise exc.for_env(int(env_id)) from exc.__cause__
        if self._in_process:
            exc.add_note(f"raised by environment {env_id} of the vector env")
        raise exc

    def _mark_lost(self, ids: Sequence[int] | np.ndarray, exc: BaseException) -> None:
        for j in ids:
            self._lost[int(j)] = type(exc).__name__

    def _assert_not_lost(self, ids: Sequence[int] | np.ndarray) -> None:
        lost = [int(j) for j in ids if j in self._lost]
        if lost:
            causes = sorted({self._lost[j] for j in lost})
            raise EnvStateError(
                f"environments {lost} must be reset before they step again: an earlier call "
                f"on them ended with {' / '.join(causes)} before their results arrived, so "
                f"their last observations are out of date. Call reset(env_id={lost}) first."
            )

    def _wrap_id(self, id: IdType) -> Sequence[int] | np.ndarray:
        if id is None:
            return self._all_ids
        if np.isscalar(id):
            return [id]  # type: ignore[list-item]
        return id  # type: ignore[return-value]

    def _assert_id(self, ids: Sequence[int] | np.ndarray) -> None:
        for i in ids:
            if i in self._pending:
                raise EnvStateError(
                    f"Cannot interact with environment {i}, which is still stepping; "
                    f"call step(None) to collect results first (ready: {self.ready_id})"
                )
            if i not in self._all_ids:
                raise EnvStateError(f"Can only interact with ready environments {self.ready_id}")

    def _assert_none_waiting(self, what: str) -> None:
        if self._pending:
            raise EnvStateError(
                f"Environments {self.waiting_id} are still stepping, cannot {what} them now; "
                "call step(None) until they are ready"
            )

    def _assert_is_not_closed(self) -> None:
        if self.is_closed:
            raise EnvStateError(
                f"Methods of {type(self).__name__} cannot be called after close(); "
                "create a new vector env"
            )


class DummyVectorEnv(BaseVectorEnv):
    """Steps all envs one after another in the current process.

    The fastest choice for cheap environments (no communication at all) and the easiest to debug.
    Arguments as in :class:`BaseVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(env_fns, DummyEnvWorker, wait_num, timeout)


class SubprocVectorEnv(BaseVectorEnv):
    """Runs every env in its own process, so that expensive envs step in parallel.

    :param share_memory: pass observations through shared memory instead of pickling them.
    :param context: multiprocessing start method: ``"fork"``, ``"spawn"``, ``"forkserver"``, or
        None for the platform default.
    :param step_timeout: the longest one env's step or reset may take, in seconds. An env that
        misses it has its process terminated, and the call raises :class:`EnvWorkerError`
        naming the env and the deadline (so do later calls on that env: create a new vector
        env to go on). None (the default) waits as long as the envs take.

    Other arguments as in :class:`BaseVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
        share_memory: bool = False,
        context: str | None = None,
        *,
        step_timeout: float | None = None,
    ) -> None:
        def worker_fn(env_fn: Callable[[], gym.Env]) -> SubprocEnvWorker:
            return SubprocEnvWorker(env_fn, share_memory, context, step_timeout)

        super().__init__(env_fns, worker_fn, wait_num, timeout)


class ShmemVectorEnv(SubprocVectorEnv):
    """A :class:`SubprocVectorEnv` whose observations travel through shared memory.

    Pays off for large observations (images), which are written in place by the env's process
    instead of being pickled through a pipe. Envs without an ``observation_space`` send theirs
    through the pipe. Arguments as in :class:`SubprocVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
        context: str | None = None,
        *,
        step_timeout: float | None = None,
    ) -> None:
        super().__init__(env_fns, wait_num, timeout, True, context, step_timeout=step_timeout)


class RayVectorEnv(BaseVectorEnv):
    """Runs every env in a Ray actor, for more envs than one machine can hold.

    Starts a local Ray instance unless Ray is already initialised; to use a cluster, call
    ``ray.init(address=...)`` before creating this env (or set ``RAY_ADDRESS``).

    :param step_timeout: the longest one env's step or reset may take, in seconds; an env that
        misses it has its actor killed, as for :class:`SubprocVectorEnv`.

    Other arguments as in :class:`BaseVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
        *,
        step_timeout: float | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ImportError(f"RayVectorEnv needs ray; {install_hint('ray')}") from exc
        if not ray.is_initialized():
            ray.init()
        worker_fn = partial(RayEnvWorker, step_timeout=step_timeout)
        super().__init__(env_fns, worker_fn, wait_num, timeout)
