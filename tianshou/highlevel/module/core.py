"""The base of all module factories, and the device type they take."""

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from tianshou.highlevel.env import Environments

TDevice: TypeAlias = str | torch.device
"""A torch device, or its name (e.g. ``"cpu"``, ``"cuda:0"``)."""


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
