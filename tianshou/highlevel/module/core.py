"""The base of all module factories, and the device type they take (:data:`TDevice`, defined in
:mod:`tianshou.utils.torch_utils` so that the persistence layer can use it without importing
the module factories)."""

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

import numpy as np
from torch import nn

from tianshou.utils.torch_utils import TDevice

if TYPE_CHECKING:
    from tianshou.highlevel.env import Environments


def init_linear_orthogonal(module: nn.Module) -> None:
    """Initialise every ``nn.Linear`` in ``module`` orthogonally with gain ``sqrt(2)`` and zero
    bias, the initialisation on-policy methods train best with (Andrychowicz et al. 2021, "What
    matters in on-policy RL").

    :param module: the module whose linear layers (at any depth) are re-initialised in place.
    """
    for layer in module.modules():
        if isinstance(layer, nn.Linear):
            nn.init.orthogonal_(layer.weight, gain=np.sqrt(2))
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)


class ModuleFactory(ABC):
    """Builds a torch module sized for given environments."""

    @abstractmethod
    def create_module(self, envs: "Environments", device: TDevice) -> nn.Module:
        """Build the module for ``envs``' observation and action shapes, on ``device``.

        :param envs: the environments the module will act in.
        :param device: where the module's parameters live.
        """
