"""Mixins giving an algorithm lagged (target) networks; re-exported by ``algorithm_base``.

Usage inside an algorithm's constructor, after ``super().__init__(policy=...)``::

    LaggedNetworkPolyakUpdateAlgorithmMixin.__init__(self, tau=0.005)
    self.critic_old = self._add_lagged_network(self.critic)

and, after each gradient step, ``self._update_lagged_network_weights()``.
"""

from abc import ABC, abstractmethod

from torch import nn

from tianshou.utils.lagged_network import EvalModeModuleWrapper, LaggedNetworkCollection


class LaggedNetworkAlgorithmMixin(ABC):
    """Keeps lagged copies of some of the algorithm's networks.

    The mixin's ``__init__`` must be called explicitly (``Mixin.__init__(self, ...)``) after the
    ``nn.Module`` has been initialised; it does not call ``super().__init__``.
    """

    def __init__(self) -> None:
        self._lagged_networks = LaggedNetworkCollection()

    def _add_lagged_network(self, src: nn.Module) -> EvalModeModuleWrapper:
        """Create a lagged copy of ``src`` (a deep copy, kept in eval mode, not trained).

        Assign the result to an attribute so that it is part of the algorithm's state dict.
        """
        return self._lagged_networks.add_lagged_network(src)

    @abstractmethod
    def _update_lagged_network_weights(self) -> None:
        """Move the lagged networks towards their sources."""


class LaggedNetworkFullUpdateAlgorithmMixin(LaggedNetworkAlgorithmMixin):
    """Lagged networks refreshed by a full copy of their sources (e.g. DQN's target network,
    which the algorithm copies every ``target_update_freq`` updates)."""

    def _update_lagged_network_weights(self) -> None:
        """Copy every source network's parameters and buffers into its lagged copy."""
        self._lagged_networks.full_parameter_update()


class LaggedNetworkPolyakUpdateAlgorithmMixin(LaggedNetworkAlgorithmMixin):
    """Lagged networks that trail their sources by Polyak averaging after every update.

    :param tau: weight of the source in ``target <- (1 - tau) * target + tau * source``;
        small values (e.g. 0.005) make slowly moving, stable targets.
    """

    def __init__(self, tau: float) -> None:
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"tau must be in [0, 1], got {tau}")
        super().__init__()
        self.tau = tau

    def _update_lagged_network_weights(self) -> None:
        """Polyak-average every lagged network towards its source with weight ``tau``."""
        self._lagged_networks.polyak_parameter_update(self.tau)
