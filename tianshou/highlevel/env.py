"""Environments for the high-level API: factories that build them, and the bundle they produce.

An :class:`EnvFactory` builds single envs and vectorised training/test/watch envs;
:meth:`EnvFactory.create_envs` bundles them into an :class:`Environments` object, which also
reports the shapes and spaces that module factories size their networks by.
:class:`EnvFactoryRegistered` covers every task registered with gymnasium (``gym.make``),
optionally through EnvPool (:class:`EnvPoolFactory`).

Seeding (:meth:`EnvFactory.create_envs` with ``seed=s``): training env ``i`` gets seed ``s + i``,
test env ``j`` gets ``s + num_training_envs + j`` and the watch env ``s + num_training_envs +
num_test_envs``, so that no two envs replay the same episodes and a rerun with the same seed
replays all of them. :class:`EnvFactoryRegistered` may fix the base seeds of the training and
the test envs itself (``training_seed``, ``test_seed``); the watch env then follows the test envs.
"""

import logging
import os
import platform
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from enum import Enum
from functools import partial
from typing import Any, TypeAlias

import gymnasium as gym
import numpy as np

from tianshou.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    RayVectorEnv,
    ShmemVectorEnv,
    SubprocVectorEnv,
    make_envpool_env,
)
from tianshou.env.worker.worker_base import seed_env
from tianshou.utils.net.common import TActionShape
from tianshou.utils.optional_dependency import install_hint
from tianshou.utils.string import ToStringMixin

log = logging.getLogger(__name__)

TObservationShape: TypeAlias = int | Sequence[int]
"""The shape of one observation: a tuple of dims, or the number of states of a Discrete space."""


class EnvType(Enum):
    """The kind of action space an environment has, which decides the networks built for it."""

    CONTINUOUS = "continuous"
    """A ``Box`` action space."""
    DISCRETE = "discrete"
    """A ``Discrete`` action space."""

    def is_discrete(self) -> bool:
        return self == EnvType.DISCRETE

    def is_continuous(self) -> bool:
        return self == EnvType.CONTINUOUS

    def assert_continuous(self, requiring_entity: Any) -> None:
        """Raise if the envs are not continuous.

        :param requiring_entity: what needs continuous envs (named in the error).
        """
        if not self.is_continuous():
            raise AssertionError(
                f"{requiring_entity} requires continuous environments (EnvType.CONTINUOUS, a Box "
                f"action space), but the environments are {self}"
            )

    def assert_discrete(self, requiring_entity: Any) -> None:
        """Raise if the envs are not discrete.

        :param requiring_entity: what needs discrete envs (named in the error).
        """
        if not self.is_discrete():
            raise AssertionError(
                f"{requiring_entity} requires discrete environments (EnvType.DISCRETE, a Discrete "
                f"action space), but the environments are {self}"
            )

    @staticmethod
    def from_env(env: Any) -> "EnvType":
        """The type of ``env`` (anything with an ``action_space``), read from its action space."""
        space = env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return EnvType.DISCRETE
        if isinstance(space, gym.spaces.Box):
            return EnvType.CONTINUOUS
        raise ValueError(
            f"unsupported action space {space}: the high-level API handles Discrete "
            f"(EnvType.DISCRETE) and Box (EnvType.CONTINUOUS) action spaces; wrap the env, e.g. "
            f"with tianshou.env.MultiDiscreteToDiscrete"
        )


class EnvMode(Enum):
    """What an env is built for; factories may build it differently per mode (e.g. rendering)."""

    TRAINING = "training"
    TEST = "test"
    WATCH = "watch"


class VectorEnvType(Enum):
    """How the envs of a vectorised env run (see :mod:`tianshou.env.venvs`)."""

    DUMMY = "dummy"
    """One after another in this process (:class:`~tianshou.env.DummyVectorEnv`)."""
    SUBPROC = "subproc"
    """Each in its own process (:class:`~tianshou.env.SubprocVectorEnv`)."""
    SUBPROC_SHARED_MEM_DEFAULT_CONTEXT = "shmem"
    """Own processes, observations through shared memory, the platform's start method."""
    SUBPROC_SHARED_MEM_FORK_CONTEXT = "shmem_fork"
    """Own processes, observations through shared memory, processes forked."""
    RAY = "ray"
    """Each in a Ray actor (:class:`~tianshou.env.RayVectorEnv`)."""
    SUBPROC_SHARED_MEM_AUTO = "subproc_shared_mem_auto"
    """Own processes with shared memory, spawned on macOS (where fork is unsafe), else default."""

    def create_venv(self, factories: Sequence[Callable[[], gym.Env]]) -> BaseVectorEnv:
        """A vectorised env of this type with one env per factory."""
        match self:
            case VectorEnvType.DUMMY:
                return DummyVectorEnv(factories)
            case VectorEnvType.SUBPROC:
                return SubprocVectorEnv(factories)
            case VectorEnvType.SUBPROC_SHARED_MEM_DEFAULT_CONTEXT:
                return ShmemVectorEnv(factories)
            case VectorEnvType.SUBPROC_SHARED_MEM_FORK_CONTEXT:
                return ShmemVectorEnv(factories, context="fork")
            case VectorEnvType.SUBPROC_SHARED_MEM_AUTO:
                context = "spawn" if platform.system() == "Darwin" else None
                return ShmemVectorEnv(factories, context=context)
            case VectorEnvType.RAY:
                return RayVectorEnv(factories)
        raise AssertionError(f"unhandled {self}")


class Environments(ToStringMixin, ABC):
    """An env for reading spaces plus the vectorised training, test and (optional) watch envs.

    :param env: a single env of the task; only its spaces and spec are read.
    :param training_envs: the envs training data is collected from.
    :param test_envs: the envs the policy is evaluated on.
    :param watch_env: a one-env venv for watching the trained policy, or None.
    """

    def __init__(
        self,
        env: gym.Env,
        training_envs: BaseVectorEnv,
        test_envs: BaseVectorEnv,
        watch_env: BaseVectorEnv | None = None,
    ) -> None:
        self.env = env
        self.training_envs = training_envs
        self.test_envs = test_envs
        self.watch_env = watch_env
        self.persistence: Sequence[object] = []
        """The handlers of :meth:`set_persistence`."""

    @staticmethod
    def from_factory_and_type(
        factory_fn: Callable[[EnvMode], gym.Env],
        env_type: EnvType,
        venv_type: VectorEnvType,
        num_training_envs: int,
        num_test_envs: int,
        create_watch_env: bool = False,
    ) -> "Environments":
        """Build unseeded envs from ``factory_fn(mode)``.

        :param factory_fn: builds one env for the given mode.
        :param env_type: the type of the resulting :class:`Environments`.
        :param venv_type: how the training and test envs run (the watch env always runs
            in-process).
        :param num_training_envs: number of training envs.
        :param num_test_envs: number of test envs.
        :param create_watch_env: also build a one-env watch venv.
        """
        training_envs = venv_type.create_venv(
            [partial(factory_fn, EnvMode.TRAINING)] * num_training_envs
        )
        test_envs = venv_type.create_venv([partial(factory_fn, EnvMode.TEST)] * num_test_envs)
        watch_env = (
            VectorEnvType.DUMMY.create_venv([partial(factory_fn, EnvMode.WATCH)])
            if create_watch_env
            else None
        )
        env = factory_fn(EnvMode.TRAINING)
        return _environments_of_type(env_type, env, training_envs, test_envs, watch_env)

    def _tostring_excludes(self) -> list[str]:
        return list(vars(self))  # the envs themselves are not configuration; info() says it all

    def _tostring_additional_entries(self) -> dict[str, Any]:
        return self.info()

    def info(self) -> dict[str, Any]:
        """The shapes networks are built for, for logging."""
        return {
            "action_shape": self.get_action_shape(),
            "state_shape": self.get_observation_shape(),
        }

    def set_persistence(self, *p: object) -> None:
        """Attach persistence handlers for the envs' own state (e.g. observation normalisation).

        The experiment saves and restores them with its policy. They are held as plain objects:
        a handler reads the run's :class:`~tianshou.highlevel.world.World`, which holds these
        envs, so this module cannot name the handlers' type without an import cycle; the
        experiment checks them (:func:`~tianshou.highlevel.persistence.env_state_persistence`).

        :param p: :class:`~tianshou.highlevel.persistence.Persistence` handlers; they replace
            any attached before.
        """
        self.persistence = p

    @abstractmethod
    def get_action_shape(self) -> TActionShape:
        """The action shape: a tuple for continuous envs, the number of actions for discrete."""

    @abstractmethod
    def get_observation_shape(self) -> TObservationShape:
        """The observation shape (the number of states for a Discrete observation space)."""

    def get_action_space(self) -> gym.Space:
        return self.env.action_space

    def get_observation_space(self) -> gym.Space:
        return self.env.observation_space

    @abstractmethod
    def get_type(self) -> EnvType:
        """Whether the envs are continuous or discrete."""


def _observation_shape(space: gym.Space) -> TObservationShape:
    """The shape networks are built for: a masked observation's (``{"obs", "mask"}``) is its
    ``obs`` entry's, which is all the networks read; any other ``Dict`` observation's is its
    flattened size (the default network factories read it through a ``DictEncoder``)."""
    if isinstance(space, gym.spaces.Dict):
        if set(space.spaces) == {"obs", "mask"}:
            return _observation_shape(space["obs"])
        return int(gym.spaces.flatdim(space))
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if space.shape is None:
        raise ValueError(f"observation space {space} has no shape; use a Box or Discrete space")
    return space.shape


def _require_action_space(env: gym.Env, space_type: type, env_class: str) -> None:
    if not isinstance(env.action_space, space_type):
        raise ValueError(
            f"{env_class} needs an env with a {space_type.__name__} action space, got "
            f"{env.action_space}; use {EnvType.from_env(env).name.title()}Environments (or "
            f"EnvFactory.create_envs, which picks the type from the action space)"
        )


class ContinuousEnvironments(Environments):
    """Environments with a ``Box`` action space; also reports :attr:`max_action`.

    Arguments as in :class:`Environments`.
    """

    def __init__(
        self,
        env: gym.Env,
        training_envs: BaseVectorEnv,
        test_envs: BaseVectorEnv,
        watch_env: BaseVectorEnv | None = None,
    ) -> None:
        super().__init__(env, training_envs, test_envs, watch_env)
        _require_action_space(env, gym.spaces.Box, "ContinuousEnvironments")
        self.state_shape = _observation_shape(env.observation_space)
        space = env.action_space
        assert isinstance(space, gym.spaces.Box)
        self.action_shape: tuple[int, ...] = space.shape
        self.max_action = float(np.max(space.high))

    @staticmethod
    def from_factory(
        factory_fn: Callable[[EnvMode], gym.Env],
        venv_type: VectorEnvType,
        num_training_envs: int,
        num_test_envs: int,
        create_watch_env: bool = False,
    ) -> "ContinuousEnvironments":
        """Build unseeded envs; arguments as in :meth:`Environments.from_factory_and_type`."""
        envs = Environments.from_factory_and_type(
            factory_fn,
            EnvType.CONTINUOUS,
            venv_type,
            num_training_envs,
            num_test_envs,
            create_watch_env,
        )
        assert isinstance(envs, ContinuousEnvironments)
        return envs

    def info(self) -> dict[str, Any]:
        return {**super().info(), "max_action": self.max_action}

    def get_action_shape(self) -> TActionShape:
        return self.action_shape

    def get_observation_shape(self) -> TObservationShape:
        return self.state_shape

    def get_type(self) -> EnvType:
        return EnvType.CONTINUOUS


class DiscreteEnvironments(Environments):
    """Environments with a ``Discrete`` action space; the action shape is the number of actions.

    Arguments as in :class:`Environments`.
    """

    def __init__(
        self,
        env: gym.Env,
        training_envs: BaseVectorEnv,
        test_envs: BaseVectorEnv,
        watch_env: BaseVectorEnv | None = None,
    ) -> None:
        super().__init__(env, training_envs, test_envs, watch_env)
        _require_action_space(env, gym.spaces.Discrete, "DiscreteEnvironments")
        self.observation_shape = _observation_shape(env.observation_space)
        space = env.action_space
        assert isinstance(space, gym.spaces.Discrete)
        self.action_shape = int(space.n)

    @staticmethod
    def from_factory(
        factory_fn: Callable[[EnvMode], gym.Env],
        venv_type: VectorEnvType,
        num_training_envs: int,
        num_test_envs: int,
        create_watch_env: bool = False,
    ) -> "DiscreteEnvironments":
        """Build unseeded envs; arguments as in :meth:`Environments.from_factory_and_type`."""
        envs = Environments.from_factory_and_type(
            factory_fn,
            EnvType.DISCRETE,
            venv_type,
            num_training_envs,
            num_test_envs,
            create_watch_env,
        )
        assert isinstance(envs, DiscreteEnvironments)
        return envs

    def get_action_shape(self) -> TActionShape:
        return self.action_shape

    def get_observation_shape(self) -> TObservationShape:
        return self.observation_shape

    def get_type(self) -> EnvType:
        return EnvType.DISCRETE


def _environments_of_type(
    env_type: EnvType,
    env: gym.Env,
    training_envs: BaseVectorEnv,
    test_envs: BaseVectorEnv,
    watch_env: BaseVectorEnv | None,
) -> Environments:
    match env_type:
        case EnvType.CONTINUOUS:
            return ContinuousEnvironments(env, training_envs, test_envs, watch_env)
        case EnvType.DISCRETE:
            return DiscreteEnvironments(env, training_envs, test_envs, watch_env)
    raise AssertionError(f"unhandled {env_type}")


class EnvPoolFactory:
    """Builds EnvPool vector envs (C++-batched, much faster for MuJoCo and Atari).

    Subclasses adapt a gymnasium task and its ``gym.make`` options to EnvPool's by overriding
    :meth:`_transform_task` and :meth:`_transform_kwargs` (as the Atari factory does).
    """

    def _transform_task(self, task: str) -> str:
        """The EnvPool name of the gymnasium ``task`` (unchanged by default)."""
        return task

    def _transform_kwargs(self, kwargs: dict, mode: EnvMode) -> dict:
        """EnvPool options from the ``gym.make`` options ``kwargs`` for ``mode``.

        The default copies them without ``render_mode``, which EnvPool does not take.
        """
        kwargs = dict(kwargs)
        kwargs.pop("render_mode", None)
        return kwargs

    def create_venv(
        self,
        task: str,
        num_envs: int,
        mode: EnvMode,
        seed: int | None,
        kwargs: dict,
    ) -> BaseVectorEnv:
        """An EnvPool env of ``num_envs`` copies of ``task``; env ``i`` is seeded with ``seed + i``.

        :param task: the gymnasium task id (transformed by :meth:`_transform_task`).
        :param num_envs: number of envs.
        :param mode: the mode the envs are for.
        :param seed: base seed; None draws one from numpy's global random generator (EnvPool
            always seeds its envs, by default all with the same fixed seed).
        :param kwargs: the ``gym.make`` options (transformed by :meth:`_transform_kwargs`).
        """
        try:
            import envpool
        except ImportError as exc:
            raise ImportError(
                f"{type(self).__name__} needs envpool (or build the env factory without an "
                f"envpool_factory to use gymnasium); {install_hint('envpool')}"
            ) from exc
        envpool_task = self._transform_task(task)
        known = envpool.list_all_envs()
        if envpool_task not in known:
            raise ValueError(
                f"EnvPool does not know task {envpool_task!r} (from {task!r}); it knows e.g. "
                f"{sorted(known)[:8]}... Build the env factory without an envpool_factory to "
                f"use gymnasium"
            )
        if seed is None:
            seed = int(np.random.randint(2**31 - num_envs))
        return make_envpool_env(
            envpool_task, num_envs, seed, **self._transform_kwargs(kwargs, mode)
        )


class EnvFactory(ToStringMixin, ABC):
    """Builds the envs of an experiment.

    Subclasses implement :meth:`create_env`; vectorised envs and the :class:`Environments`
    bundle are built from it.

    :param venv_type: how training and test envs run; the watch env always runs in-process
        (:attr:`VectorEnvType.DUMMY`), as it renders.
    """

    def __init__(self, venv_type: VectorEnvType) -> None:
        self.venv_type = venv_type

    @abstractmethod
    def create_env(self, mode: EnvMode, seed: int | None = None) -> gym.Env:
        """Build one env for ``mode``.

        :param mode: what the env is for.
        :param seed: seed for the env and its action space; None leaves it unseeded.
        """

    def create_venv(self, num_envs: int, mode: EnvMode, seed: int | None = None) -> BaseVectorEnv:
        """Build ``num_envs`` envs for ``mode`` as one vectorised env.

        :param num_envs: number of envs (a watch venv always has exactly one).
        :param mode: what the envs are for; WATCH envs run in a :class:`DummyVectorEnv`.
        :param seed: env ``i`` gets ``seed + i``; None leaves them unseeded.
        """
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        env_fn = partial(self.create_env, mode)
        if mode == EnvMode.WATCH:
            venv = VectorEnvType.DUMMY.create_venv([env_fn])
        else:
            venv = self.venv_type.create_venv([env_fn] * num_envs)
        if seed is not None:
            venv.seed(seed)
        return venv

    def create_envs(
        self,
        num_training_envs: int,
        num_test_envs: int,
        create_watch_env: bool = False,
        seed: int | None = None,
    ) -> Environments:
        """Build the training, test and (optional) watch envs of an experiment.

        :param num_training_envs: number of training envs.
        :param num_test_envs: number of test envs.
        :param create_watch_env: also build a one-env watch venv.
        :param seed: base seed, spread over the envs as described in this module's docstring;
            None leaves all envs unseeded.
        """
        env = self.create_env(EnvMode.TRAINING)
        env_type = EnvType.from_env(env)
        training_seed, test_seed = self._venv_base_seeds(seed, num_training_envs)
        training_envs = self.create_venv(num_training_envs, EnvMode.TRAINING, training_seed)
        test_envs = self.create_venv(num_test_envs, EnvMode.TEST, test_seed)
        watch_env = None
        if create_watch_env:
            watch_seed = None if test_seed is None else test_seed + num_test_envs
            watch_env = self.create_venv(1, EnvMode.WATCH, watch_seed)
        return _environments_of_type(env_type, env, training_envs, test_envs, watch_env)

    def _venv_base_seeds(
        self, seed: int | None, num_training_envs: int
    ) -> tuple[int | None, int | None]:
        """The seeds of the first training env and of the first test env, spread from the base
        seed ``seed`` as described in this module's docstring (None: unseeded)."""
        if seed is None:
            return None, None
        return seed, seed + num_training_envs


def has_display() -> bool:
    """Whether a human-mode window can open: always off Linux, else only with an X11 or
    Wayland display (a headless machine renders nothing rather than stall)."""
    if sys.platform != "linux":
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


class EnvFactoryRegistered(EnvFactory):
    """Builds envs of a task registered with gymnasium, with ``gym.make`` or through EnvPool.

    >>> factory = EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
    >>> envs = factory.create_envs(num_training_envs=2, num_test_envs=1, seed=0)
    >>> envs.get_type(), envs.get_observation_shape(), envs.get_action_shape()
    (<EnvType.DISCRETE: 'discrete'>, (4,), 2)

    :param task: the registered env id, e.g. ``"Pendulum-v1"``.
    :param venv_type: how training and test envs run (see :class:`EnvFactory`).
    :param envpool_factory: build the training and test envs through EnvPool with this factory
        (the watch env always comes from ``gym.make``, as EnvPool does not render); None uses
        ``gym.make`` for all.
    :param render_mode_training: ``render_mode`` of training envs.
    :param render_mode_test: ``render_mode`` of test envs.
    :param render_mode_watch: ``render_mode`` of the watch env. ``"human"`` needs a display: on
        Linux without ``DISPLAY``/``WAYLAND_DISPLAY`` it is replaced by None (with a warning)
        rather than stalling or failing a headless run.
    :param training_seed: the seed of the first training env (training env ``i`` gets
        ``training_seed + i``), whatever seed :meth:`create_envs` is given; None: spread from
        that seed.
    :param test_seed: the seed of the first test env (test env ``j`` gets ``test_seed + j``, the
        watch env the seed after the last test env's); None: spread from the seed given to
        :meth:`create_envs`.
    :param make_kwargs: further options for ``gym.make`` (or, transformed, for EnvPool).
    """

    def __init__(
        self,
        *,
        task: str,
        venv_type: VectorEnvType,
        envpool_factory: EnvPoolFactory | None = None,
        render_mode_training: str | None = None,
        render_mode_test: str | None = None,
        render_mode_watch: str | None = "human",
        training_seed: int | None = None,
        test_seed: int | None = None,
        **make_kwargs: Any,
    ) -> None:
        super().__init__(venv_type)
        if "train_seed" in make_kwargs:
            raise TypeError(
                "EnvFactoryRegistered got train_seed, which gym.make does not take; the base "
                "seed of the training envs is called training_seed"
            )
        for name, value in (("training_seed", training_seed), ("test_seed", test_seed)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise TypeError(f"{name} must be an int or None, got {value!r}")
        self.task = task
        self.training_seed = training_seed
        self.test_seed = test_seed
        self.envpool_factory = envpool_factory
        self.render_modes = {
            EnvMode.TRAINING: render_mode_training,
            EnvMode.TEST: render_mode_test,
            EnvMode.WATCH: render_mode_watch,
        }
        self.make_kwargs = make_kwargs

    def _venv_base_seeds(
        self, seed: int | None, num_training_envs: int
    ) -> tuple[int | None, int | None]:
        """The factory's own ``training_seed`` and ``test_seed`` where set, else the seeds
        spread from ``seed``."""
        training_seed, test_seed = super()._venv_base_seeds(seed, num_training_envs)
        return (
            training_seed if self.training_seed is None else self.training_seed,
            test_seed if self.test_seed is None else self.test_seed,
        )

    def _create_kwargs(self, mode: EnvMode) -> dict:
        """The ``gym.make`` options for ``mode``: ``make_kwargs`` plus the mode's render mode."""
        render_mode = self.render_modes[mode]
        if render_mode == "human" and not has_display():
            log.warning(
                "render_mode 'human' for %s envs of %s needs a display, but none is set "
                "(DISPLAY/WAYLAND_DISPLAY); rendering is off instead",
                mode.value,
                self.task,
            )
            render_mode = None
        return {**self.make_kwargs, "render_mode": render_mode}

    def create_env(self, mode: EnvMode, seed: int | None = None) -> gym.Env:
        """``gym.make(task, **make_kwargs, render_mode=...)``, seeded if ``seed`` is given.

        :param mode: what the env is for (decides the render mode).
        :param seed: seed of the env (its first reset) and of its action space.
        """
        try:
            env = gym.make(self.task, **self._create_kwargs(mode))
        except gym.error.UnregisteredEnv as exc:
            raise ValueError(
                f"unknown task {self.task!r}: it is not registered with gymnasium (import the "
                f"package that registers it first, e.g. ale_py for Atari; "
                f"gymnasium.pprint_registry() lists the known ones)"
            ) from exc
        if seed is not None:
            seed_env(env, seed)
        return env

    def create_venv(self, num_envs: int, mode: EnvMode, seed: int | None = None) -> BaseVectorEnv:
        """As :meth:`EnvFactory.create_venv`, through EnvPool if an ``envpool_factory`` is set
        (except for WATCH envs).
        """
        if self.envpool_factory is None or mode == EnvMode.WATCH:
            return super().create_venv(num_envs, mode, seed)
        return self.envpool_factory.create_venv(
            self.task, num_envs, mode, seed, self._create_kwargs(mode)
        )
