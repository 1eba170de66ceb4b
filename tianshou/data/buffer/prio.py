"""Prioritized experience replay (Schaul et al. 2016, arXiv:1511.05952).

Transitions are sampled with probability proportional to ``priority ** alpha`` instead of
uniformly, so the learner revisits surprising transitions (large TD error) more often. Because
that skews the data distribution, each sampled transition carries an importance-sampling
``weight`` the loss should be multiplied by. The priorities live in a
:class:`~tianshou.data.utils.segtree.SegmentTree` over the buffer's rows, which makes drawing a
batch and updating its priorities ``O(batch_size * log(size))``.
"""

from typing import Any

import numpy as np
import torch

from tianshou.data.batch import Batch
from tianshou.data.buffer._storage import null_rows
from tianshou.data.buffer.buffer_base import MalformedBufferError, ReplayBuffer
from tianshou.data.utils.segtree import InvalidValueError, SegmentTree, compile_kernel

__all__ = ["PrioritizedReplayBuffer"]

_EPS = float(np.finfo(np.float32).eps)
"""Added to every updated priority so that no stored transition becomes impossible to sample."""


def _priorities(raw: np.ndarray, eps: float, out: np.ndarray, extremes: np.ndarray) -> int:
    """``out = |raw| + eps`` and ``extremes = [min, max]`` of it, in one pass.

    Returns ``j + 1`` for the first non-finite ``raw[j]`` (``out`` is then incomplete), else 0.
    """
    low, high = np.inf, 0.0
    for j in range(raw.shape[0]):
        priority = abs(raw[j]) + eps
        if not priority < np.inf:
            return j + 1
        low = min(low, priority)
        high = max(high, priority)
        out[j] = priority
    extremes[0] = low
    extremes[1] = high
    return 0


def _check_alpha(alpha: float) -> float:
    if not alpha > 0.0:
        raise InvalidValueError(f"alpha (the prioritization exponent) must be > 0, got {alpha!r}")
    return float(alpha)


def _check_beta(beta: float) -> float:
    if not beta >= 0.0:
        raise InvalidValueError(
            f"beta (the importance-sampling exponent) must be >= 0, got {beta!r}"
        )
    return float(beta)


class PrioritizedReplayBuffer(ReplayBuffer):
    """A replay buffer that samples transitions in proportion to their priority.

    New transitions get the largest priority seen so far, so every transition is likely to be
    replayed at least once; afterwards the algorithm reports fresh priorities (usually the
    absolute TD errors of a sampled batch) through :meth:`update_weight`. Sampled batches carry
    ``weight = (p_i / p_min) ** (-beta)``, where ``p_i`` is the stored (alpha-scaled) priority and
    ``p_min`` the smallest priority reported so far (not alpha-scaled, as in the published
    library); with ``weight_norm`` (the default) they are divided by their maximum within the
    batch, so the largest weight is 1 and ``p_min`` cancels out.

    >>> buf = PrioritizedReplayBuffer(size=8, alpha=0.6, beta=0.4)
    >>> for i in range(4):
    ...     step = Batch(obs=i, act=i, rew=1.0, terminated=False, truncated=False, obs_next=i + 1)
    ...     _ = buf.add(step)
    >>> batch, idx = buf.sample(2)
    >>> batch.weight.shape
    (2,)
    >>> buf.update_weight(idx, np.array([0.5, 2.0]))

    :param size: number of transitions kept.
    :param alpha: prioritization exponent (> 0): 0 would be uniform sampling, 1 fully
        proportional to the reported priorities.
    :param beta: importance-sampling exponent (>= 0): how strongly the sampling bias is corrected;
        1 corrects it fully. Usually annealed towards 1 with :meth:`set_beta`.
    :param weight_norm: divide the weights of a batch by their maximum (stabilises the loss scale).
    :param kwargs: the :class:`~tianshou.data.ReplayBuffer` options.
    """

    weight: SegmentTree

    def __init__(
        self,
        size: int,
        alpha: float,
        beta: float,
        weight_norm: bool = True,
        **kwargs: Any,
    ) -> None:
        alpha, beta = _check_alpha(alpha), _check_beta(beta)
        super().__init__(size, alpha=alpha, beta=beta, weight_norm=weight_norm, **kwargs)
        self._init_priorities(alpha, beta, weight_norm)

    def _init_priorities(self, alpha: float, beta: float, weight_norm: bool) -> None:
        """Set the exponents and an all-zero priority tree over every row."""
        self._alpha = _check_alpha(alpha)
        self._beta = _check_beta(beta)
        self._weight_norm = bool(weight_norm)
        self._max_prio = self._min_prio = 1.0
        self.weight = SegmentTree(self.maxsize)

    def _tree(self) -> SegmentTree | None:
        """The priority tree, or None for a sub-buffer whose manager keeps the priorities."""
        return self.__dict__.get("weight")

    # ------------------------------------------------------------------ writing
    def init_weight(self, index: int | np.ndarray) -> None:
        """Give the transitions at ``index`` the largest priority seen so far."""
        value = self._max_prio**self._alpha
        if type(index) is np.ndarray and index.dtype == np.int64 and index.ndim == 1:
            self.weight._write(index, np.full(len(index), value))
        else:
            self.weight[index] = value

    def add(
        self,
        batch: Batch,
        buffer_ids: np.ndarray | list[int] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Store transitions like :meth:`ReplayBuffer.add`, at the current maximal priority."""
        rows, ep_return, ep_len, ep_start = super().add(batch, buffer_ids)
        self.init_weight(rows)
        return rows, ep_return, ep_len, ep_start

    def update(self, buffer: ReplayBuffer) -> np.ndarray:
        """Append ``buffer``'s transitions (see :meth:`ReplayBuffer.update`) at maximal priority."""
        rows = super().update(buffer)
        self.init_weight(rows)
        return rows

    def reset(self, keep_statistics: bool = False) -> None:
        """Forget all transitions and their priorities (the running maximum/minimum priority,
        which scale new priorities and weights, are kept)."""
        tree = self._tree()
        if tree is not None:
            tree._clear()
        super().reset(keep_statistics=keep_statistics)

    def dropnull(self) -> None:
        """Drop transitions holding NaN or None; the others keep their priorities."""
        tree = self._tree()
        if tree is None:
            super().dropnull()
            return
        order = self._chronological()
        kept = order[~null_rows(self._meta, order)]
        priorities = tree[kept]
        super().dropnull()
        tree._clear()
        tree._write(self._chronological(), priorities)

    def update_weight(self, index: np.ndarray, new_weight: np.ndarray | torch.Tensor) -> None:
        """Set the priorities of the transitions at ``index`` to ``|new_weight| + eps``.

        :param index: rows, typically those returned by :meth:`sample`.
        :param new_weight: one new priority per row (usually the absolute TD error), or a scalar
            for all of them; a tensor is detached and moved to the CPU.
        :raises ValueError: if ``new_weight`` has a different number of entries than ``index``,
            or contains NaN or infinity (nothing is changed then).
        :raises IndexError: for a row outside ``[0, maxsize)``.
        """
        if isinstance(new_weight, torch.Tensor):
            new_weight = new_weight.detach().cpu().numpy()
        raw = np.asarray(new_weight, dtype=np.float64)
        count = np.size(index)
        if raw.ndim == 0:
            raw = np.full(count, raw)
        elif raw.size != count:
            raise ValueError(
                f"update_weight got {raw.size} weights for {count} indices; pass one weight "
                f"per index",
            )
        if count == 0:
            return
        priority = np.empty(count)
        extremes = np.empty(2)
        bad = compile_kernel(_priorities)(raw.reshape(-1), _EPS, priority, extremes)
        if bad:
            raise ValueError(
                f"update_weight got a non-finite weight {raw.reshape(-1)[bad - 1]} at position "
                f"{bad - 1}; weights must be finite (NaN or inf would break sampling)",
            )
        self.weight[index] = np.power(priority, self._alpha, out=priority)
        self._min_prio = min(self._min_prio, float(extremes[0]))
        self._max_prio = max(self._max_prio, float(extremes[1]))

    def set_beta(self, beta: float) -> None:
        """Change the importance-sampling exponent (e.g. to anneal it towards 1)."""
        self._beta = _check_beta(beta)

    # ------------------------------------------------------------------ reading
    def sample_indices(self, batch_size: int | None) -> np.ndarray:
        """Random rows drawn with probability proportional to their priority for
        ``batch_size > 0`` (``None``: as many draws as stored transitions); otherwise as
        :meth:`ReplayBuffer.sample_indices` (0 gives all rows in chronological order)."""
        if batch_size is None:
            batch_size = len(self)
        tree = self._tree()
        # only written rows have a positive priority, so a positive sum means data is stored
        if tree is not None and batch_size > 0 and tree.reduce() > 0.0:
            return tree.sample(self._random_state.random_sample(batch_size))
        return super().sample_indices(batch_size)

    def sample(self, batch_size: int | None) -> tuple[Batch, np.ndarray]:
        """Draw ``sample_indices(batch_size)`` and return ``(self[indices], indices)``.

        When drawing by priority, the tree search also returns the drawn rows' priorities (already
        divided by ``p_min``), so the importance weights need no second pass over the (cache-cold)
        tree; subclasses that change how rows are drawn or read get the plain two-step path.
        """
        tree = self._tree()
        count = len(self) if batch_size is None else batch_size
        kind = type(self)
        if (
            tree is None
            or count <= 0
            or not tree.reduce() > 0.0
            or kind.sample_indices is not PrioritizedReplayBuffer.sample_indices
            or kind._rows_to_batch is not PrioritizedReplayBuffer._rows_to_batch
            or kind.__getitem__ is not ReplayBuffer.__getitem__
        ):
            return super().sample(batch_size)
        # the search divides the drawn priorities by p_min as `_importance_weights` would
        indices, ratios = tree._sample_with_values(
            self._random_state.random_sample(count), self._min_prio
        )
        batch = super()._rows_to_batch(indices)
        self._attach_weight(batch, ratios ** (-self._beta))
        return batch, indices

    def get_weight(self, index: int | np.ndarray) -> float | np.ndarray:
        """Importance-sampling weights ``(p / p_min) ** (-beta)`` of the rows at ``index``
        (not normalised; negative indices count from the end of the storage)."""
        return self._importance_weights(self.weight._leaf_values()[index])

    def _importance_weights(self, priorities: Any) -> Any:
        """``(p / p_min) ** (-beta)`` for stored (alpha-scaled) priorities ``p``."""
        return (priorities / self._min_prio) ** (-self._beta)

    def _rows_to_batch(self, index: Any) -> Batch:
        """Transitions at ``index`` plus their importance-sampling ``weight``."""
        batch = super()._rows_to_batch(index)
        if self._tree() is not None and batch.__dict__:  # else a manager's sub-buffer, or empty
            self._attach_weight(batch, self.get_weight(index))
        return batch

    def _attach_weight(self, batch: Batch, weight: Any) -> None:
        """Store ``weight`` (normalised to a maximum of 1 with ``weight_norm``) in ``batch``."""
        if isinstance(weight, np.ndarray) and weight.ndim:
            if self._weight_norm and weight.size:
                weight /= weight.max()
            batch.__dict__["weight"] = weight  # a fresh float array: nothing to parse
        else:
            batch.weight = weight / np.max(weight) if self._weight_norm else weight

    @classmethod
    def _state_markers(cls) -> frozenset[str]:
        return super()._state_markers() | {"weight"}

    def _check_state(self) -> None:
        """Also check that the priority tree has one leaf per row and the exponents are valid."""
        super()._check_state()
        tree = self._tree()
        if tree is not None and len(tree) != self.maxsize:
            raise MalformedBufferError(
                f"the priority tree has {len(tree)} leaves for a buffer of size {self.maxsize}",
            )
        _check_alpha(self._alpha)
        _check_beta(self._beta)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Also accept states pickled by the published library (different private names)."""
        state = dict(state)
        state.pop("_PrioritizedReplayBuffer__eps", None)
        state.setdefault("_weight_norm", True)
        super().__setstate__(state)
