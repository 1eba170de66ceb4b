"""Vector environments: several gymnasium envs behind one batched ``reset``/``step``.

Each env is driven by an :class:`~tianshou.env.worker.EnvWorker` (in-process, subprocess or Ray
actor). Results are stacked along a new first axis: observations with one ``np.array`` call
(ragged observations become an object array, dict observations an object array of dicts),
rewards and flags as arrays, infos as an object array of dicts that each carry ``env_id``.

With ``wait_num < env_num`` or a ``timeout`` the vector env is asynchronous: ``step`` returns as
soon as ``wait_num`` of the stepping envs finished (or the timeout passed), and the caller steps
ready envs again while slow ones keep running. ``ready_id`` and ``waiting_id`` say which is which.
"""

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import gymnasium as gym
import numpy as np

from tianshou.env.utils import ENV_TYPE, gym_new_venv_step_type
from tianshou.env.worker import (
    DummyEnvWorker,
    EnvWorker,
    EnvWorkerError,
    RayEnvWorker,
    SubprocEnvWorker,
)

GYM_RESERVED_KEYS = ["metadata", "reward_range", "spec", "action_space", "observation_space"]
"""Attributes that read per-env lists through :meth:`BaseVectorEnv.get_env_attr`."""

IdType = int | list[int] | np.ndarray | None


class EnvStateError(RuntimeError, AssertionError):
    """A vector env was used in a state that forbids it: closed, or an env still stepping.

    Also an ``AssertionError``, since earlier releases signalled these cases with assertions
    and user code may catch that.
    """


def _object_array(items: Sequence[Any]) -> np.ndarray:
    """A 1-d object array holding ``items`` as they are (numpy would try to broadcast them)."""
    out = np.empty(len(items), dtype=object)
    for i, item in enumerate(items):
        out[i] = item
    return out


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


def _reraise_for_env(exc: Exception, env_id: Any) -> NoReturn:
    """Re-raise a worker's exception so that it names the env it came from."""
    if isinstance(exc, EnvWorkerError):
        raise exc.for_env(int(env_id)) from exc.__cause__
    exc.add_note(f"raised by environment {env_id} of the vector env")
    raise exc


class BaseVectorEnv:
    """Runs ``len(env_fns)`` environments and batches their results.

    :param env_fns: callables that each build one environment (``lambda: gym.make(...)``).
    :param worker_fn: builds the worker that will own an env, given its ``env_fn``.
    :param wait_num: in asynchronous mode, ``step`` returns once this many stepping envs are
        done. Defaults to all envs, i.e. synchronous stepping.
    :param timeout: in asynchronous mode, the longest ``step`` waits (seconds) before returning
        whatever envs are ready (at least one). None waits for ``wait_num`` envs.

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
        self.waiting_conn: list[EnvWorker] = []
        self.waiting_id: list[int] = []
        self.ready_id = list(range(self.env_num))
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
    def spec(self) -> list[Any]:
        """The registration spec of each env (None for unregistered envs)."""
        return self.get_env_attr("spec")

    @property
    def metadata(self) -> list[dict[str, Any]]:
        """The metadata dict of each env."""
        return self.get_env_attr("metadata")

    @property
    def reward_range(self) -> list[Any]:
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
        results = self._send_and_receive(ids, None, kwargs)
        for j, result in zip(ids, results, strict=True):
            if not (isinstance(result, tuple | list) and len(result) == 2):
                raise TypeError(
                    f"env.reset() of environment {j} returned {type(result).__name__}; "
                    "vector envs need the gymnasium API, which returns (obs, info)"
                )
            result[1]["env_id"] = j
        return _stack_obs([r[0] for r in results]), _object_array([r[1] for r in results])

    def step(self, action: np.ndarray | None, id: IdType = None) -> gym_new_venv_step_type:
        """Step the envs ``id`` (all by default) with one action each.

        In asynchronous mode, ``action=None`` only collects results of envs already stepping,
        and the returned arrays cover just the envs that finished (see ``info["env_id"]``).

        :return: ``(obs, rew, terminated, truncated, info)``, each stacked over envs.
        """
        if self.is_closed:
            self._assert_is_not_closed()
        ids = self._all_ids if id is None else self._wrap_id(id)
        if self.is_async:
            results = self._step_async(action, ids)
        else:
            if action is None or len(action) != len(ids) or len(ids) == 0:
                count = "no" if action is None else len(action)
                raise ValueError(f"got {count} actions for the {len(ids)} environments {ids}")
            results = self._send_and_receive(ids, action, None)
        try:
            obs, rew, terminated, truncated, info = zip(*results, strict=True)
        except ValueError as exc:
            raise TypeError(
                "env.step() must return (obs, reward, terminated, truncated, info) as in "
                "gymnasium >= 0.26"
            ) from exc
        return (
            _stack_obs(obs),
            np.array(rew),
            np.array(terminated),
            np.array(truncated),
            np.array(info),
        )

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
        actions: Any,
        reset_kwargs: dict[str, Any] | None = None,
    ) -> list[Any]:
        """Start all envs first, then collect each result, adding ``env_id`` to step infos.

        ``actions`` None means reset with ``reset_kwargs``. If an env fails, results of the
        others are still collected (so no stale reply is left in a pipe) before its exception
        is raised, labelled with the env index.
        """
        workers = self.workers
        sent = 0
        try:
            for sent, j in enumerate(ids):  # on failure, ``sent`` indexes the failed env
                if actions is None:
                    workers[j].send(None, **reset_kwargs)  # type: ignore[arg-type]
                else:
                    workers[j].send(actions[sent])
        except Exception as exc:
            self._discard_results(ids[:sent])
            _reraise_for_env(exc, ids[sent])
        results: list[Any] = []
        try:
            if actions is None:
                for j in ids:
                    results.append(workers[j].recv())
            else:
                for j in ids:
                    result = workers[j].recv()
                    result[-1]["env_id"] = j
                    results.append(result)
        except Exception as exc:
            failed = len(results)
            self._discard_results(ids[failed + 1 :])
            _reraise_for_env(exc, ids[failed])
        return results

    def _step_async(self, action: np.ndarray | None, ids: Sequence[int] | np.ndarray) -> list:
        if action is not None:
            self._assert_id(ids)
            if len(action) != len(ids):
                raise ValueError(f"got {len(action)} actions for the {len(ids)} environments {ids}")
            for act, j in zip(action, ids, strict=True):
                worker = self.workers[j]
                try:
                    worker.send(act)
                except Exception as exc:
                    _reraise_for_env(exc, j)
                self.waiting_conn.append(worker)
                self.waiting_id.append(j)
                self.ready_id.remove(j)
        if not self.waiting_conn:
            raise EnvStateError(
                "no environment is stepping, so there is nothing to wait for: "
                "pass actions for (some of) the ready environments"
            )
        ready: list[EnvWorker] = []
        while not ready:
            ready = self.worker_class.wait(self.waiting_conn, self.wait_num, self.timeout)
        results = []
        failure: tuple[Exception, int] | None = None
        for worker in list(ready):  # ``wait`` may hand back ``waiting_conn`` itself
            index = self.waiting_conn.index(worker)
            del self.waiting_conn[index]
            j = self.waiting_id.pop(index)
            self.ready_id.append(j)
            try:
                result = worker.recv()
            except Exception as exc:
                failure = failure or (exc, j)
                continue
            result[-1]["env_id"] = j
            results.append(result)
        if failure is not None:
            _reraise_for_env(*failure)
        return results

    def _discard_results(self, ids: Sequence[int] | np.ndarray) -> None:
        for j in ids:
            with contextlib.suppress(Exception):  # the first failure is the one reported
                self.workers[j].recv()

    def _wrap_id(self, id: IdType) -> Sequence[int] | np.ndarray:
        if id is None:
            return self._all_ids
        if np.isscalar(id):
            return [id]  # type: ignore[list-item]
        return id  # type: ignore[return-value]

    def _assert_id(self, ids: Sequence[int] | np.ndarray) -> None:
        for i in ids:
            if i in self.waiting_id:
                raise EnvStateError(
                    f"Cannot interact with environment {i}, which is still stepping; "
                    f"call step(None) to collect results first (ready: {self.ready_id})"
                )
            if i not in self.ready_id:
                raise EnvStateError(f"Can only interact with ready environments {self.ready_id}")

    def _assert_none_waiting(self, what: str) -> None:
        if self.waiting_id:
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

    Other arguments as in :class:`BaseVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
        share_memory: bool = False,
        context: str | None = None,
    ) -> None:
        def worker_fn(env_fn: Callable[[], gym.Env]) -> SubprocEnvWorker:
            return SubprocEnvWorker(env_fn, share_memory=share_memory, context=context)

        super().__init__(env_fns, worker_fn, wait_num, timeout)


class ShmemVectorEnv(SubprocVectorEnv):
    """A :class:`SubprocVectorEnv` whose observations travel through shared memory.

    Pays off for large observations (images), which are written in place by the env's process
    instead of being pickled through a pipe. Arguments as in :class:`SubprocVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
        context: str | None = None,
    ) -> None:
        super().__init__(env_fns, wait_num, timeout, share_memory=True, context=context)


class RayVectorEnv(BaseVectorEnv):
    """Runs every env in a Ray actor, for more envs than one machine can hold.

    Starts a local Ray instance unless Ray is already initialised; to use a cluster, call
    ``ray.init(address=...)`` before creating this env (or set ``RAY_ADDRESS``).
    Arguments as in :class:`BaseVectorEnv`.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], ENV_TYPE]],
        wait_num: int | None = None,
        timeout: float | None = None,
    ) -> None:
        try:
            import ray
        except ImportError as exc:
            raise ImportError(
                "RayVectorEnv needs ray: pip install 'ray>=2.9' (or the tianshou[ray] extra)"
            ) from exc
        if not ray.is_initialized():
            ray.init()
        super().__init__(env_fns, RayEnvWorker, wait_num, timeout)
