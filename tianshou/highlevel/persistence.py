"""Saving and restoring what an experiment produces: the trained policy and extra state.

Files are written atomically (to a temporary file that then replaces the target), so that a run
killed while saving leaves the previous file intact. Restoring reads weights only
(``torch.load(..., weights_only=True)``): a file can never run code when loaded.
"""

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any

import torch

from tianshou.highlevel.world import World
from tianshou.utils.torch_utils import TDevice

log = logging.getLogger(__name__)


class PersistEvent(Enum):
    """Events at which :class:`Persistence` handlers save state."""

    PERSIST_POLICY = "persist_policy"
    """The policy was saved (e.g. a new best test score)."""


class RestoreEvent(Enum):
    """Events at which :class:`Persistence` handlers restore state."""

    RESTORE_POLICY = "restore_policy"
    """The policy's parameters were restored."""


class Persistence(ABC):
    """Saves and restores some state of an experiment (e.g. observation normalisation)."""

    @abstractmethod
    def persist(self, event: PersistEvent, world: World) -> None:
        """Save state at ``event``, into ``world.persist_directory``."""

    @abstractmethod
    def restore(self, event: RestoreEvent, world: World) -> None:
        """Restore state at ``event``, from ``world.restore_directory``."""


def env_state_persistence(handlers: Iterable[object]) -> list[Persistence]:
    """The handlers attached by :meth:`~tianshou.highlevel.env.Environments.set_persistence`,
    checked to be :class:`Persistence` objects.

    :class:`~tianshou.highlevel.env.Environments` holds them untyped: a handler reads the run's
    :class:`World`, which holds the envs, so the env module does not import this one. The
    experiment checks them here, where their type is known, before it persists anything.

    :raises TypeError: naming the first handler that is not a :class:`Persistence`.
    """
    checked = []
    for handler in handlers:
        if not isinstance(handler, Persistence):
            raise TypeError(
                "Environments.set_persistence takes Persistence handlers "
                f"(tianshou.highlevel.persistence.Persistence), got {handler!r}"
            )
        checked.append(handler)
    return checked


class PersistenceGroup(Persistence):
    """Applies several handlers in order.

    :param p: the handlers.
    :param enabled: False turns saving off (restoring still happens).
    """

    def __init__(self, *p: Persistence, enabled: bool = True) -> None:
        self.items = p
        self.enabled = enabled

    def persist(self, event: PersistEvent, world: World) -> None:
        if not self.enabled:
            return
        for item in self.items:
            item.persist(event, world)

    def restore(self, event: RestoreEvent, world: World) -> None:
        for item in self.items:
            item.restore(event, world)


def _save_atomically(obj: Any, path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp_path = f"{path}.tmp"
    try:
        torch.save(obj, tmp_path)
        os.replace(tmp_path, path)
    finally:
        if os.path.exists(tmp_path):
            os.remove(tmp_path)


class PolicyPersistence:
    """Saves the policy (in the 2.x API: the algorithm, whose state includes the optimizers) and
    restores its parameters into a structurally equal one.

    :param additional_persistence: also saved/restored with the policy.
    :param enabled: False turns saving off (restoring still works).
    :param mode: what is saved; either way the parameters go to ``policy_state_dict.pt``, from
        which :meth:`restore` reads them.
    """

    class Mode(Enum):
        POLICY_STATE_DICT = "policy_state_dict"
        """Save the parameters only; restoring needs an equal policy built first."""
        POLICY = "policy"
        """Also pickle the whole policy to ``policy.pt``, to be loaded without building envs
        (``torch.load(path, weights_only=False)``: only for files you trust, as unpickling runs
        code; it also breaks when the policy's classes move). The policy must be picklable;
        if it is not, only the parameters are saved (with a warning).
        """

        def get_filename(self) -> str:
            return self.value + ".pt"

    def __init__(
        self,
        additional_persistence: Persistence | None = None,
        enabled: bool = True,
        mode: Mode = Mode.POLICY,
    ) -> None:
        self.additional_persistence = additional_persistence
        self.enabled = enabled
        self.mode = mode

    def persist(self, policy: torch.nn.Module, world: World) -> None:
        """Save ``policy`` (and the additional persistence) into ``world.persist_directory``."""
        if not self.enabled:
            return
        path = world.persist_path(self.Mode.POLICY_STATE_DICT.get_filename())
        log.info("saving the policy's parameters to %s", path)
        _save_atomically(policy.state_dict(), path)
        if self.mode == self.Mode.POLICY:
            self._persist_object(policy, world.persist_path(self.mode.get_filename()))
        if self.additional_persistence is not None:
            self.additional_persistence.persist(PersistEvent.PERSIST_POLICY, world)

    @staticmethod
    def _persist_object(policy: torch.nn.Module, path: str) -> None:
        try:
            _save_atomically(policy, path)
        except (AttributeError, TypeError) as exc:  # pickle's errors for unpicklable objects
            log.warning(
                "could not pickle the whole %s (%s); only its parameters were saved",
                type(policy).__name__,
                exc,
            )

    def restore(self, policy: torch.nn.Module, world: World, device: TDevice) -> None:
        """Load the saved parameters from ``world.restore_directory`` into ``policy``.

        :param policy: a policy structurally equal to the saved one.
        :param world: gives the directory to restore from.
        :param device: where the loaded tensors are placed.
        """
        path = world.restore_path(self.Mode.POLICY_STATE_DICT.get_filename())
        if not os.path.exists(path):
            raise FileNotFoundError(
                f"no saved policy parameters at {path}; a directory written by "
                f"PolicyPersistence holds {self.Mode.POLICY_STATE_DICT.get_filename()} (a pickled "
                f"{self.Mode.POLICY.get_filename()} alone is not loaded, as unpickling runs code)"
            )
        log.info("restoring the policy's parameters from %s", path)
        state_dict = torch.load(path, map_location=device, weights_only=True)
        policy.load_state_dict(state_dict)
        if self.additional_persistence is not None:
            self.additional_persistence.restore(RestoreEvent.RESTORE_POLICY, world)

    def get_save_best_fn(self, world: World) -> Callable[[torch.nn.Module], None] | None:
        """The trainer's ``save_best_fn``: persists the policy; None when disabled."""
        if not self.enabled:
            return None

        def save_best_fn(policy: torch.nn.Module) -> None:
            self.persist(policy, world)

        return save_best_fn

    def get_save_checkpoint_fn(self, world: World) -> Callable[[int, int, int], str] | None:
        """The trainer's ``save_checkpoint_fn``: saves the state of ``world.algorithm``
        (parameters and optimizers) to ``checkpoint.pt`` and returns its path; None when
        disabled.
        """
        if not self.enabled:
            return None

        def save_checkpoint_fn(epoch: int, env_step: int, gradient_step: int) -> str:
            path = world.persist_path("checkpoint.pt")
            _save_atomically(world.algorithm.state_dict(), path)
            return path

        return save_checkpoint_fn
