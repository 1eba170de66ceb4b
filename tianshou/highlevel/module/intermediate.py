"""Factories for intermediate modules: networks whose output (of known width) feeds a head."""

from abc import ABC, abstractmethod
from dataclasses import dataclass

from torch import nn

from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import ModuleFactory, TDevice
from tianshou.utils.net.common import ModuleWithVectorOutput
from tianshou.utils.string import ToStringMixin


@dataclass
class IntermediateModule:
    """A module computing an intermediate representation, with the width of its output.

    :param module: the module.
    :param output_dim: the width of the vector it outputs per sample.
    """

    module: nn.Module
    output_dim: int

    def get_module_with_vector_output(self) -> ModuleWithVectorOutput:
        """The module as a :class:`ModuleWithVectorOutput` (wrapped if it is not one), as the
        heads of :mod:`tianshou.utils.net` require.
        """
        if isinstance(self.module, ModuleWithVectorOutput):
            return self.module
        return ModuleWithVectorOutput.from_module(self.module, self.output_dim)


class IntermediateModuleFactory(ToStringMixin, ModuleFactory, ABC):
    """Builds an :class:`IntermediateModule`, e.g. the body that a quantile head sits on."""

    @abstractmethod
    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        """Build the module and report its output width.

        :param envs: the environments the module will process observations of.
        :param device: where the module's parameters live.
        """

    def create_module(self, envs: Environments, device: TDevice) -> nn.Module:
        return self.create_intermediate_module(envs, device).module
