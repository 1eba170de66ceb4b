"""Tests of IntermediateModule and IntermediateModuleFactory."""

import torch
from torch import nn

from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.module.intermediate import IntermediateModule, IntermediateModuleFactory
from tianshou.utils.net.common import ModuleWithVectorOutput, Net


class LinearBodyFactory(IntermediateModuleFactory):
    def __init__(self, width: int) -> None:
        self.width = width

    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        return IntermediateModule(nn.Linear(4, self.width).to(device), self.width)


def test_plain_module_is_wrapped_with_its_declared_width() -> None:
    linear = nn.Linear(4, 7)
    wrapped = IntermediateModule(linear, 7).get_module_with_vector_output()
    assert isinstance(wrapped, ModuleWithVectorOutput)
    assert wrapped.get_output_dim() == 7
    x = torch.ones(2, 4)
    torch.testing.assert_close(wrapped(x), linear(x))


def test_module_with_vector_output_is_returned_as_is() -> None:
    net = Net(state_shape=4, hidden_sizes=[8])
    assert IntermediateModule(net, 8).get_module_with_vector_output() is net


def test_create_module_returns_the_intermediate_module(cartpole: Environments) -> None:
    factory = LinearBodyFactory(width=5)
    module = factory.create_module(cartpole, "cpu")
    assert isinstance(module, nn.Linear)
    assert module.out_features == 5
    assert str(factory) == "LinearBodyFactory[width=5]"
