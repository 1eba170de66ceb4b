"""Product distributions over structured action spaces, for the policy-gradient family.

A ``MultiDiscrete``, ``MultiBinary``, ``Tuple`` or ``Dict`` action is several independent
choices at once: a joystick direction *and* a button, a discrete move *and* its continuous
strength. The actor outputs one flat vector of distribution parameters; an
:class:`ActionLayout` splits it into one distribution per component, and a
:class:`ProductDistribution` treats them as one: log-probabilities and entropies sum over the
components (they are independent), and a sample or mode is one flat action row.

Columns of the actor's output, per component in the space's order:

* ``Discrete(n)``: ``n`` logits of a categorical (one action column, the index);
* ``MultiDiscrete(nvec)``: the logits of one categorical per entry, ``sum(nvec)`` in all
  (one action column per entry);
* ``MultiBinary(n)``: ``n`` logits of independent Bernoullis (``n`` action columns);
* ``Box(shape)``: the means, then the log standard deviations (clamped to ``[-5, 2]``) of a
  diagonal Gaussian, ``2 * prod(shape)`` in all (``prod(shape)`` action columns).

Actions are stored as one flat row per step: integers when every component is discrete, else
floats (discrete components hold their index as a float).

:func:`actor_output_dim` sizes the actor's last layer for a space and :func:`product_dist_fn`
is the ``dist_fn`` that reads that output;
:class:`~tianshou.algorithm.modelfree.reinforce.DiscreteActorPolicy` uses it by itself for an
all-discrete structured space.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import (
    Bernoulli,
    Categorical,
    Distribution,
    Independent,
    Normal,
    kl_divergence,
    register_kl,
)

LOG_STD_RANGE = (-5.0, 2.0)
"""Bounds of a Gaussian component's log standard deviation, which keep it from collapsing or
exploding."""

_NO_SAMPLE_SHAPE = torch.Size()

STRUCTURED_ACTION_SPACES = (
    gym.spaces.MultiDiscrete,
    gym.spaces.MultiBinary,
    gym.spaces.Tuple,
    gym.spaces.Dict,
)
"""The action spaces that need a product distribution."""


@dataclass(frozen=True)
class ActionComponent:
    """One independent part of a structured action.

    :param kind: ``"categorical"``, ``"bernoulli"`` or ``"gaussian"``.
    :param param_width: columns of the actor's output it reads.
    :param action_width: columns of the flat action it fills.
    """

    kind: str
    param_width: int
    action_width: int


def is_structured_action_space(space: gym.Space) -> bool:
    """Whether ``space`` needs a product distribution (see :data:`STRUCTURED_ACTION_SPACES`)."""
    return isinstance(space, STRUCTURED_ACTION_SPACES)


def _components_of(space: gym.Space, where: str) -> list[ActionComponent]:
    """The components of a non-composite action space (``where`` names it in errors)."""
    if isinstance(space, gym.spaces.Discrete):
        return [ActionComponent("categorical", int(space.n), 1)]
    if isinstance(space, gym.spaces.MultiDiscrete) and space.nvec.ndim == 1:
        return [ActionComponent("categorical", int(n), 1) for n in space.nvec]
    if isinstance(space, gym.spaces.MultiBinary) and len(space.shape) == 1:
        return [ActionComponent("bernoulli", space.shape[0], space.shape[0])]
    if isinstance(space, gym.spaces.Box):
        size = int(np.prod(space.shape))
        return [ActionComponent("gaussian", 2 * size, size)]
    raise ValueError(
        f"{where}{space} has no product distribution: its parts must be "
        "Discrete, one-dimensional MultiDiscrete or MultiBinary, or Box spaces"
    )


class ActionLayout:
    """How a flat actor output and a flat action row map onto a structured action space.

    :param space: a ``MultiDiscrete``, ``MultiBinary``, ``Tuple`` or ``Dict`` action space
        whose parts are ``Discrete``, one-dimensional ``MultiDiscrete``/``MultiBinary`` or
        ``Box`` spaces (no nesting).
    :raises ValueError: for any other space.
    """

    def __init__(self, space: gym.Space) -> None:
        self.space = space
        self.keys: list[Any] | None = None
        if isinstance(space, gym.spaces.Tuple):
            self.keys = list(range(len(space.spaces)))
            parts = list(space.spaces)
        elif isinstance(space, gym.spaces.Dict):
            self.keys = list(space.spaces)
            parts = list(space.spaces.values())
        else:
            parts = [space]
        self.parts = parts
        self.part_components = [
            _components_of(
                part,
                "the action space " if self.keys is None else f"part {key!r} of {space}, ",
            )
            for key, part in zip(self.keys or [None], parts, strict=False)
        ]
        self.components = [comp for comps in self.part_components for comp in comps]
        self.param_width = sum(comp.param_width for comp in self.components)
        """The width of the actor output this layout reads."""
        self.action_width = sum(comp.action_width for comp in self.components)
        """The width of one flat action row."""
        self.is_discrete = all(comp.kind != "gaussian" for comp in self.components)
        """Whether flat actions are integers (no Box part)."""

    @property
    def is_composite(self) -> bool:
        """Whether the env expects a tuple or dict per action (a ``Tuple``/``Dict`` space)."""
        return self.keys is not None

    def distribution(self, params: torch.Tensor) -> "ProductDistribution":
        """The product distribution parameterised by the actor output ``params`` ``(B, width)``."""
        if params.dim() != 2 or params.shape[1] != self.param_width:
            raise ValueError(
                f"the action space {self.space} needs an actor output of shape "
                f"(batch, {self.param_width}), got {tuple(params.shape)}; check the actor's "
                "output layer"
            )
        dists = []
        for comp, chunk in zip(
            self.components,
            params.split([c.param_width for c in self.components], dim=1),
            strict=True,
        ):
            dists.append(_component_distribution(comp.kind, chunk))
        return ProductDistribution(
            dists, [c.action_width for c in self.components], self.is_discrete
        )

    def to_env_actions(self, act: np.ndarray) -> np.ndarray:
        """Flat action rows ``(B, action_width)`` as the env takes them: for ``Tuple``/``Dict``
        spaces an object array of tuples/dicts, Box parts clipped to their bounds and reshaped."""
        if not self.is_composite:
            return act
        rows = np.asarray(act).reshape(len(act), self.action_width)
        columns = np.cumsum(
            [0] + [sum(c.action_width for c in comps) for comps in self.part_components]
        )
        parts = [
            _env_part(space, rows[:, start:end])
            for space, start, end in zip(self.parts, columns[:-1], columns[1:], strict=True)
        ]
        result = np.empty(len(rows), dtype=object)
        for i in range(len(rows)):
            values = [part[i] for part in parts]
            result[i] = (
                tuple(values)
                if isinstance(self.space, gym.spaces.Tuple)
                else dict(zip(self.keys or [], values, strict=True))
            )
        return result

    def from_env_actions(self, act: Any) -> np.ndarray:
        """Invert :meth:`to_env_actions`: env actions (tuples/dicts) as flat rows."""
        if not self.is_composite or (isinstance(act, np.ndarray) and act.dtype != object):
            return np.asarray(act)
        dtype = np.int64 if self.is_discrete else np.float32
        offsets = [int(p.start) if isinstance(p, gym.spaces.Discrete) else 0 for p in self.parts]
        rows = [
            np.concatenate(
                [
                    np.asarray(action[key], dtype=dtype).reshape(-1) - offset
                    for key, offset in zip(self.keys or [], offsets, strict=True)
                ]
            )
            for action in act
        ]
        return np.stack(rows).astype(dtype)


def _component_distribution(kind: str, params: torch.Tensor) -> Distribution:
    if kind == "categorical":
        return Categorical(logits=params)
    if kind == "bernoulli":
        return Independent(Bernoulli(logits=params), 1)
    mu, log_std = params.chunk(2, dim=1)
    return Independent(Normal(mu, log_std.clamp(*LOG_STD_RANGE).exp()), 1)


def _index_moments(dist: Categorical) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance of a categorical's action index (torch gives NaN for both)."""
    probs = dist.probs
    values = torch.arange(probs.shape[-1], device=probs.device, dtype=probs.dtype)
    mean = (probs * values).sum(dim=-1)
    return mean, (probs * (values - mean.unsqueeze(-1)) ** 2).sum(dim=-1)


def _env_part(space: gym.Space, columns: np.ndarray) -> list[Any]:
    """One part's env actions, per row, from its columns of the flat actions."""
    if isinstance(space, gym.spaces.Discrete):
        return [int(v) + int(space.start) for v in columns[:, 0]]
    if isinstance(space, gym.spaces.Box):
        bounded = np.clip(columns, space.low.reshape(-1), space.high.reshape(-1))
        return list(bounded.astype(space.dtype).reshape(len(columns), *space.shape))
    return list(columns.astype(space.dtype))  # MultiDiscrete, MultiBinary


class ProductDistribution(Distribution):
    """Independent distributions over the parts of one flat action row.

    ``log_prob`` and ``entropy`` sum over the parts, ``sample`` and ``mode`` concatenate them;
    the KL divergence of two product distributions with the same layout is the sum of the
    parts' divergences (registered with :func:`torch.distributions.kl_divergence`).

    :param components: one distribution per part, each of batch shape ``(B,)``.
    :param action_widths: the action columns of each part (1 for a categorical).
    :param is_discrete: every part is discrete, so actions are integers.
    """

    arg_constraints: ClassVar[dict[str, Any]] = {}

    def __init__(
        self, components: list[Distribution], action_widths: list[int], is_discrete: bool
    ) -> None:
        self.components = components
        self.action_widths = action_widths
        self.is_discrete = is_discrete
        batch_shape = components[0].batch_shape
        super().__init__(batch_shape, torch.Size([sum(action_widths)]), validate_args=False)

    def _join(self, parts: list[torch.Tensor], dtype: torch.dtype | None = None) -> torch.Tensor:
        """One flat row per distribution: the parts' columns side by side, as integers when
        every part is discrete (unless ``dtype`` says otherwise)."""
        columns = [
            p.unsqueeze(-1) if isinstance(d, Categorical) else p
            for d, p in zip(self.components, parts, strict=True)
        ]
        if dtype is None:
            dtype = torch.long if self.is_discrete else torch.float32
        return torch.cat([c.to(dtype) for c in columns], dim=-1)

    def sample(
        self, sample_shape: torch.Size | list[int] | tuple[int, ...] = _NO_SAMPLE_SHAPE
    ) -> torch.Tensor:
        with torch.no_grad():
            return self._join([d.sample(sample_shape) for d in self.components])

    @property
    def mode(self) -> torch.Tensor:
        return self._join([d.mode for d in self.components])

    @property
    def mean(self) -> torch.Tensor:
        """Per action column; a categorical part's is the mean of its action index."""
        return self._join(
            [
                _index_moments(d)[0] if isinstance(d, Categorical) else d.mean
                for d in self.components
            ],
            torch.float32,
        )

    @property
    def variance(self) -> torch.Tensor:
        """Per action column; a categorical part's is the variance of its action index."""
        return self._join(
            [
                _index_moments(d)[1] if isinstance(d, Categorical) else d.variance
                for d in self.components
            ],
            torch.float32,
        )

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """The summed log-probability of flat action rows ``(B, action_width)``."""
        value = value.reshape(*self.batch_shape, -1)
        total = torch.zeros(self.batch_shape, device=value.device)
        for dist, columns in zip(
            self.components, value.split(self.action_widths, dim=-1), strict=True
        ):
            if isinstance(dist, Categorical):
                total = total + dist.log_prob(columns.squeeze(-1).long())
            else:
                total = total + dist.log_prob(columns.to(dist.mean.dtype))
        return total

    def entropy(self) -> torch.Tensor:
        return torch.stack([d.entropy() for d in self.components]).sum(dim=0)


@register_kl(ProductDistribution, ProductDistribution)
def _kl_product(p: ProductDistribution, q: ProductDistribution) -> torch.Tensor:
    if p.action_widths != q.action_widths:
        raise ValueError("the KL divergence needs two product distributions of the same layout")
    return torch.stack(
        [kl_divergence(a, b) for a, b in zip(p.components, q.components, strict=True)]
    ).sum(dim=0)


def product_dist_fn(action_space: gym.Space) -> Callable[[torch.Tensor], ProductDistribution]:
    """The ``dist_fn`` of a policy over a structured action space: it reads the actor's flat
    output as the parameters of a :class:`ProductDistribution` (layout in the module doc).

    :param action_space: a ``MultiDiscrete``, ``MultiBinary``, ``Tuple`` or ``Dict`` space.
    :raises ValueError: for a space without a product distribution.
    """
    return ActionLayout(action_space).distribution


def actor_output_dim(action_space: gym.Space) -> int:
    """The width of the flat actor output that :func:`product_dist_fn` reads for
    ``action_space`` (build the actor's last layer with it)."""
    return ActionLayout(action_space).param_width
