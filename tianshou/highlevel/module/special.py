"""Factories for special-purpose networks (IQN's implicit quantile network)."""

from collections.abc import Sequence

from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import ModuleFactory, TDevice
from tianshou.highlevel.module.intermediate import IntermediateModuleFactory
from tianshou.utils.net.discrete import ImplicitQuantileNetwork
from tianshou.utils.string import ToStringMixin


class ImplicitQuantileNetworkFactory(ModuleFactory, ToStringMixin):
    """An :class:`ImplicitQuantileNetwork` (IQN) on a body built by ``preprocess_net_factory``.

    :param preprocess_net_factory: builds the body mapping observations to features.
    :param hidden_sizes: hidden layers of the quantile head.
    :param num_cosines: number of cosine basis functions embedding the quantile fractions.
    """

    def __init__(
        self,
        preprocess_net_factory: IntermediateModuleFactory,
        hidden_sizes: Sequence[int] = (),
        num_cosines: int = 64,
    ) -> None:
        self.preprocess_net_factory = preprocess_net_factory
        self.hidden_sizes = hidden_sizes
        self.num_cosines = num_cosines

    def create_module(self, envs: Environments, device: TDevice) -> ImplicitQuantileNetwork:
        envs.get_type().assert_discrete(self)
        body = self.preprocess_net_factory.create_intermediate_module(envs, device)
        return ImplicitQuantileNetwork(
            preprocess_net=body.get_module_with_vector_output(),
            action_shape=envs.get_action_shape(),
            hidden_sizes=self.hidden_sizes,
            num_cosines=self.num_cosines,
        ).to(device)
