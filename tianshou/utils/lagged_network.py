"""Lagged (target) networks: slowly moving copies of a network that supply stable TD targets.

A lagged network starts as a deep copy of its source and is refreshed either by a full copy
every few updates (DQN) or by Polyak averaging after every update (DDPG, TD3, SAC). The copy is
always kept in eval mode, even while the algorithm that owns it switches to train mode.
"""

from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn


def polyak_parameter_update(tgt: nn.Module, src: nn.Module, tau: float) -> None:
    """Move ``tgt``'s parameters towards ``src``'s: ``tgt <- (1 - tau) * tgt + tau * src``.

    :param tgt: the lagged network (updated in place).
    :param src: the trained network with the same architecture.
    :param tau: weight of the source, in [0, 1]; 1 copies it.
    """
    _polyak(list(tgt.parameters()), list(src.parameters()), tau)


def _polyak(tgt: list[torch.Tensor], src: list[torch.Tensor], tau: float) -> None:
    if len(tgt) != len(src):
        raise ValueError(f"lagged network has {len(tgt)} parameters but its source has {len(src)}")
    with torch.no_grad():
        torch._foreach_lerp_(tgt, src, tau)


class EvalModeModuleWrapper(nn.Module):
    """Wraps a module so that it stays in eval mode whatever mode its owner is switched to.

    Target networks must not, for instance, apply dropout while computing targets even though
    the algorithm owning them runs its update in train mode.

    :param m: the module to wrap (put into eval mode now).
    """

    def __init__(self, m: nn.Module) -> None:
        super().__init__()
        m.eval()
        self.module = m

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def train(self, mode: bool = True) -> "EvalModeModuleWrapper":
        """Ignore ``mode``: the wrapper and the wrapped module stay in eval mode."""
        return super().train(False)

    def __getattr__(self, name: str) -> Any:
        """Fall back to the wrapped module's attributes, so the wrapper can stand in for it."""
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("module"), name)


@dataclass
class LaggedNetworkPair:
    """A network being trained (``source``) and its lagged copy (``target``).

    The parameter and buffer lists are read once, when the pair is made, so that every update
    walks ready lists instead of the module trees.
    """

    target: nn.Module
    """The lagged copy, updated only from ``source``."""
    source: nn.Module
    """The network the optimizer trains."""
    target_params: list[torch.Tensor] = field(init=False, repr=False)
    source_params: list[torch.Tensor] = field(init=False, repr=False)
    target_buffers: list[torch.Tensor] = field(init=False, repr=False)
    source_buffers: list[torch.Tensor] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.target_params = list(self.target.parameters())
        self.source_params = list(self.source.parameters())
        self.target_buffers = list(self.target.buffers())
        self.source_buffers = list(self.source.buffers())


class LaggedNetworkCollection:
    """The lagged copies of an algorithm's networks, updated together."""

    def __init__(self) -> None:
        self._pairs: list[LaggedNetworkPair] = []
        self._target_params: list[torch.Tensor] = []
        self._source_params: list[torch.Tensor] = []

    def __len__(self) -> int:
        return len(self._pairs)

    def add_lagged_network(self, source: nn.Module) -> EvalModeModuleWrapper:
        """Create and register a lagged copy of ``source``; returns it wrapped in eval mode."""
        target = deepcopy(source)
        for param in target.parameters():
            param.requires_grad_(False)
        pair = LaggedNetworkPair(target=target, source=source)
        self._pairs.append(pair)
        self._target_params += pair.target_params
        self._source_params += pair.source_params
        return EvalModeModuleWrapper(target)

    def polyak_parameter_update(self, tau: float) -> None:
        """Polyak-average every lagged network's parameters towards its source (weight ``tau``)."""
        if self._pairs:
            _polyak(self._target_params, self._source_params, tau)

    def full_parameter_update(self) -> None:
        """Copy every source network's parameters and buffers into its lagged network."""
        with torch.no_grad():
            for pair in self._pairs:
                torch._foreach_copy_(
                    pair.target_params + pair.target_buffers,
                    pair.source_params + pair.source_buffers,
                )
