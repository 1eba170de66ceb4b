"""Checks at the collector's boundaries: actions on their way to the envs, and what the envs
return on its way to the buffer.

A wrong action shape or a NaN action would otherwise reach the env silently (an env reading
``action[0]`` of a ``(3,)`` action for a ``Box(1,)`` space runs on) and the buffer, and
surface an epoch later as an unrelated "loss is nan". Every check here looks at a whole vector
step with a few array operations, never element by element, and names the offending env ids.
"""

import math

import gymnasium as gym
import numpy as np
import torch

from tianshou.data._rollout import ActRows, ObsRows
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import MalformedBufferError

_FLOAT_KINDS = frozenset("fc")


class InvalidActionError(ValueError):
    """A policy's action batch does not fit the envs' action space (shape, or NaN/inf)."""


class NonFiniteEnvOutputError(MalformedBufferError):
    """An env returned NaN or inf in an observation or reward while the collector checks for
    them (``raise_on_nan_in_buffer=True``).

    A :class:`~tianshou.data.buffer.buffer_base.MalformedBufferError`, the error the same
    option raises when the buffer holds NaN after a collection.
    """


class ActionCheck:
    """Checks the env actions of a collection against an action space.

    Only ``Box``, ``Discrete``, ``MultiDiscrete`` and ``MultiBinary`` spaces are checked
    (composite spaces pass). The per-env shape must be the space's shape (``Discrete`` also
    accepts one trailing axis of size 1): a policy's output shape does not change from step to
    step, so collectors check it on the first step of each call. ``Box`` actions must be finite,
    which collectors check every step (:attr:`values_need_checks`).

    :param space: the action space every env shares.
    """

    def __init__(self, space: gym.Space) -> None:
        self.space = space
        self.shapes: tuple[tuple[int, ...], ...] = ()
        if isinstance(space, gym.spaces.Discrete):
            self.shapes = ((), (1,))
        elif isinstance(space, gym.spaces.Box | gym.spaces.MultiDiscrete | gym.spaces.MultiBinary):
            self.shapes = (tuple(space.shape),)
        self.values_need_checks = isinstance(space, gym.spaces.Box)
        """Whether action values can be invalid (NaN or inf in a ``Box``)."""

    @classmethod
    def for_spaces(cls, spaces: list[gym.Space]) -> "ActionCheck | None":
        """A check for envs with these action spaces; None when they differ (nothing to check
        against once per step)."""
        first = spaces[0]
        if any(space != first for space in spaces[1:]):
            return None
        return cls(first)

    def check_shape(self, act_env: ActRows | None, env_ids: np.ndarray) -> None:
        """Raise :class:`InvalidActionError` unless ``act_env`` holds one action of the space's
        shape per env of ``env_ids``."""
        if not self.shapes or not isinstance(act_env, np.ndarray | torch.Tensor):
            return
        shape = tuple(act_env.shape)
        if len(shape) == 0 or shape[0] != len(env_ids) or shape[1:] not in self.shapes:
            expected = " or ".join(str((len(env_ids), *s)) for s in self.shapes)
            raise InvalidActionError(
                f"the policy's actions for envs {env_ids.tolist()} have shape {shape}, but the "
                f"action space {self.space} needs shape {expected} (one action per env); check "
                "the output size of the policy's network"
            )

    def check_values(self, act: ActRows, act_env: ActRows | None, env_ids: np.ndarray) -> None:
        """Raise :class:`InvalidActionError` if the stored actions ``act`` or the env actions
        ``act_env`` hold NaN or inf (for a ``Box`` space), naming the envs."""
        if not self.values_need_checks or (
            _surely_finite(act_env) and (act is act_env or _surely_finite(act))
        ):
            return
        bad = _non_finite_rows(act) | _non_finite_rows(act_env)
        if bad.any():
            raise InvalidActionError(
                f"the policy returned NaN or inf actions for envs {env_ids[bad].tolist()} "
                f"(action space {self.space}); the policy's network has probably diverged"
            )


def _surely_finite(values: object) -> bool:
    """Whether an array or tensor holds no NaN or inf, fast for the common float32 actions:
    their sum in float64 cannot overflow, so it is finite exactly when every value is."""
    if isinstance(values, torch.Tensor):
        return bool(torch.isfinite(values).all())
    if not isinstance(values, np.ndarray) or values.dtype.kind != "f":
        return True
    if values.dtype.itemsize < 8:
        return math.isfinite(np.add.reduce(values, axis=None, dtype=np.float64))
    return bool(np.isfinite(values).all())


def _non_finite_rows(values: object) -> np.ndarray:
    """Per row (first axis), whether a float array or tensor holds NaN or inf."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    rows = np.atleast_1d(np.asarray(values))
    if rows.dtype.kind not in _FLOAT_KINDS:
        return np.zeros(len(rows), dtype=bool)
    finite = np.isfinite(rows)
    if finite.all():
        return np.zeros(len(rows), dtype=bool)
    return np.asarray(~finite.reshape(len(rows), -1).all(axis=1))


def non_finite_keys(value: object, prefix: str) -> list[tuple[str, np.ndarray]]:
    """``(key, row mask)`` for each float array in ``value`` (an array or a Batch of arrays)
    that holds NaN or inf; the mask marks the rows (first axis) that do."""
    if isinstance(value, Batch):
        found: list[tuple[str, np.ndarray]] = []
        for key, sub in value.items():
            found.extend(non_finite_keys(sub, f"{prefix}.{key}"))
        return found
    if not isinstance(value, np.ndarray | torch.Tensor):
        return []
    rows = _non_finite_rows(value)
    return [(prefix, rows)] if rows.any() else []


def check_env_output(
    obs: ObsRows, rew: np.ndarray | None, env_ids: np.ndarray, source: str
) -> None:
    """Raise :class:`NonFiniteEnvOutputError` if observations or rewards hold NaN or inf.

    :param obs: one observation per env of ``env_ids`` (array or Batch).
    :param rew: one reward per env, or None for a reset (which has no reward).
    :param env_ids: the env of each row.
    :param source: what produced the values, for the message (e.g. ``"step"``).
    """
    found = non_finite_keys(obs, "obs")
    if rew is not None:
        found += non_finite_keys(np.asarray(rew), "rew")
    if not found:
        return
    details = "; ".join(f"{key} from envs {env_ids[rows].tolist()}" for key, rows in found)
    raise NonFiniteEnvOutputError(
        f"env {source} returned NaN or inf values: {details}. Fix the environment (or wrap it "
        "to clean its output); set raise_on_nan_in_buffer=False to store such values anyway"
    )
