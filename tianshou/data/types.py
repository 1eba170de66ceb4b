"""Typing Protocols over :class:`~tianshou.data.Batch`: the Batch interface and the key sets
that the algorithms exchange.

The Protocols only document (and let type checkers verify) which keys a batch is expected to
carry at a given point, e.g. a :class:`RolloutBatchProtocol` has ``obs``, ``act``, ``rew``,
``terminated``, ``truncated``, ``obs_next`` and ``info``. At runtime every one of them is a plain
:class:`~tianshou.data.Batch`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, KeysView, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeAlias, TypeVar, runtime_checkable

import numpy as np
import torch

_IndexPart = slice | int | np.ndarray | list[int] | torch.Tensor | EllipsisType | None
IndexType = _IndexPart | tuple[_IndexPart, ...]
"""What ``Batch.__getitem__`` accepts besides a key: anything numpy/torch accept as an index."""

TArr = torch.Tensor | np.ndarray
"""A leaf array: numpy or torch."""

TObsArr = TArr
"""An observation array (one row per env or transition): numpy or torch."""

TNestedDictValue = np.ndarray | dict[str, "TNestedDictValue"]
"""A value of a nested dict of arrays, e.g. the ``obs`` a gymnasium ``Dict`` space returns."""

TBatch = TypeVar("TBatch", bound="BatchProtocol")


class ProtocolCalledException(Exception):
    """Raised when a method of a Protocol (not of a class implementing it) is called.

    The static methods of :class:`BatchProtocol` are declared with a body so that type checkers
    know them; calling them on the Protocol instead of on :class:`~tianshou.data.Batch` is a bug.
    """


@runtime_checkable
class BatchProtocol(Protocol):
    """The interface of :class:`Batch`, used to type batches that carry known keys.

    ``isinstance(x, BatchProtocol)`` inspects every member and is slow; hot paths should test
    ``isinstance(x, Batch)`` instead.
    """

    @property
    def shape(self) -> list[int]: ...

    def __getattr__(self, key: str) -> Any: ...

    def __setattr__(self, key: str, value: object) -> None: ...

    def __contains__(self, key: str) -> bool: ...

    def __getitem__(self, index: str | IndexType) -> Any: ...

    def __setitem__(self, index: str | IndexType, value: object) -> None: ...

    def __iter__(self) -> Iterator[Self]: ...

    def __len__(self) -> int: ...

    def __iadd__(self, other: BatchOperand) -> Self: ...

    def __add__(self, other: BatchOperand) -> Self: ...

    def __imul__(self, value: BatchOperand) -> Self: ...

    def __mul__(self, value: BatchOperand) -> Self: ...

    def __itruediv__(self, value: BatchOperand) -> Self: ...

    def __truediv__(self, value: BatchOperand) -> Self: ...

    def __repr__(self) -> str: ...

    def __eq__(self, other: object) -> bool: ...

    def get_keys(self) -> KeysView[str]: ...

    def get(self, key: str, default: object = None) -> Any: ...

    def pop(self, key: str, default: object = None) -> Any: ...

    def update(self, batch: dict | BatchProtocol | None = None, **kwargs: object) -> None: ...

    def is_empty(self, recurse: bool = False) -> bool: ...

    if TYPE_CHECKING:
        # Batch.to_dict calls this parameter ``recursive`` (``recurse`` is its keyword-only
        # alias), as published; type checkers see it positional-only so that Batch conforms.
        def to_dict(self, recurse: bool = True, /) -> dict[str, Any]: ...

    else:

        def to_dict(self, recurse: bool = True) -> dict[str, Any]: ...

    def to_list_of_dicts(self) -> list[dict[str, Any]]: ...

    def to_numpy(self) -> Self: ...

    def to_numpy_(self) -> None: ...

    def to_torch(
        self, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
    ) -> Self: ...

    def to_torch_(
        self, dtype: torch.dtype | None = None, device: str | int | torch.device = "cpu"
    ) -> None: ...

    def cat_(self, batches: BatchProtocol | Sequence[dict | BatchProtocol]) -> None: ...

    @staticmethod
    def cat(batches: Sequence[dict | TBatch]) -> TBatch:
        raise ProtocolCalledException

    def stack_(self, batches: Sequence[dict | BatchProtocol], axis: int = 0) -> None: ...

    @staticmethod
    def stack(batches: Sequence[dict | TBatch], axis: int = 0) -> TBatch:
        raise ProtocolCalledException

    def empty_(self, index: IndexType | None = None) -> Self: ...

    @staticmethod
    def empty(batch: TBatch, index: IndexType | None = None) -> TBatch:
        raise ProtocolCalledException

    def split(
        self, size: int, shuffle: bool = True, merge_last: bool = False
    ) -> Iterator[Self]: ...

    def apply_values_transform(
        self, values_transform: Callable[[Any], object], inplace: bool = False
    ) -> Self | None: ...

    def to_at_least_2d(self) -> Self: ...

    def set_array_at_key(
        self,
        seq: np.ndarray,
        key: str,
        index: IndexType | None = None,
        default_value: float | None = None,
    ) -> None: ...

    def isnull(self) -> Self: ...

    def hasnull(self) -> bool: ...

    def dropnull(self) -> Self: ...

    def replace_empty_batches_by_none(self) -> None: ...


BatchOperand: TypeAlias = BatchProtocol | complex | np.number | np.bool_
"""What Batch arithmetic accepts: a number, or a Batch with the same keys."""

TObs = TArr | BatchProtocol
"""An observation: an array, or a Batch of arrays for dict observation spaces."""


class ObsBatchProtocol(BatchProtocol, Protocol):
    """Observations and the environment's info, the input of ``Policy.forward``."""

    obs: TArr | BatchProtocol
    info: TArr | BatchProtocol


class RolloutBatchProtocol(ObsBatchProtocol, Protocol):
    """One transition per row, as stored in and sampled from a replay buffer."""

    obs_next: TArr | BatchProtocol
    act: TArr
    rew: np.ndarray
    terminated: TArr
    truncated: TArr


class BatchWithReturnsProtocol(RolloutBatchProtocol, Protocol):
    """Transitions with computed (n-step or Monte Carlo) returns."""

    returns: TArr


class PrioBatchProtocol(RolloutBatchProtocol, Protocol):
    """Transitions sampled from a prioritized buffer, with importance-sampling weights."""

    weight: np.ndarray | torch.Tensor


class RecurrentStateBatch(BatchProtocol, Protocol):
    """The hidden state of a recurrent (LSTM) network."""

    hidden: torch.Tensor
    cell: torch.Tensor


class ActBatchProtocol(BatchProtocol, Protocol):
    """The actions a policy chose."""

    act: TArr | BatchProtocol


class ActStateBatchProtocol(ActBatchProtocol, Protocol):
    """Actions plus the hidden state of a recurrent policy (None for feed-forward ones)."""

    state: dict | BatchProtocol | np.ndarray | None


class ModelOutputBatchProtocol(ActStateBatchProtocol, Protocol):
    """Actions, state and the raw network output they were derived from."""

    logits: torch.Tensor


class FQFBatchProtocol(ModelOutputBatchProtocol, Protocol):
    """Output of a fully parameterized quantile function network (FQF)."""

    fractions: torch.Tensor
    quantiles_tau: torch.Tensor


class BatchWithAdvantagesProtocol(BatchWithReturnsProtocol, Protocol):
    """Transitions with advantages and state values (GAE-based algorithms)."""

    adv: torch.Tensor
    v_s: torch.Tensor


class DistBatchProtocol(ModelOutputBatchProtocol, Protocol):
    """Output of a stochastic policy, including its action distribution."""

    dist: torch.distributions.Distribution


class DistLogProbBatchProtocol(DistBatchProtocol, Protocol):
    """Stochastic policy output with the log-probability of the chosen actions."""

    log_prob: torch.Tensor


class LogpOldProtocol(BatchWithAdvantagesProtocol, Protocol):
    """Transitions with the behaviour policy's log-probabilities (PPO-style ratios)."""

    logp_old: torch.Tensor


class QuantileRegressionBatchProtocol(ModelOutputBatchProtocol, Protocol):
    """Output of a quantile network together with its quantile fractions."""

    taus: torch.Tensor


class ImitationBatchProtocol(ModelOutputBatchProtocol, Protocol):
    """Output of an imitation policy: action values and the imitation logits."""

    q_value: torch.Tensor
    imitation_logits: torch.Tensor
