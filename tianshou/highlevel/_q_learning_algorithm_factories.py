"""The factories of the Q-learning algorithms on discrete actions (DQN, IQN), whose only network
is the Q-model and whose policy acts greedily on it (epsilon-greedily while exploring).
"""

from abc import abstractmethod
from typing import Generic, TypeVar

from torch import nn

from tianshou.algorithm import DQN, IQN
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy, QLearningOffPolicyAlgorithm
from tianshou.algorithm.modelfree.iqn import IQNPolicy
from tianshou.highlevel._algorithm_factory_base import (
    OffPolicyAlgorithmFactory,
    algorithm_kwargs,
    policy_spaces,
)
from tianshou.highlevel.config import OffPolicyTrainingConfig
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import ModuleFactory, TDevice
from tianshou.highlevel.params.algorithm_params import (
    DQNParams,
    IQNParams,
    QLearningOffPolicyParams,
)
from tianshou.highlevel.params.optim import OptimizerFactoryFactory
from tianshou.utils.net.discrete import ImplicitQuantileNetwork

TDiscreteCriticOnlyParams = TypeVar("TDiscreteCriticOnlyParams", bound=QLearningOffPolicyParams)
TAlgorithm = TypeVar("TAlgorithm", bound=QLearningOffPolicyAlgorithm)


class DiscreteCriticOnlyOffPolicyAlgorithmFactory(
    OffPolicyAlgorithmFactory, Generic[TDiscreteCriticOnlyParams, TAlgorithm]
):
    """Base of the factories of Q-learning algorithms on discrete envs (DQN, IQN).

    A subclass names the algorithm class in ``_algorithm_class`` and builds the policy from the
    model and its parameters in :meth:`_create_policy`.

    :param params: the algorithm's parameters.
    :param training_config: the training configuration.
    :param model_factory: builds the Q-model (for IQN an implicit quantile network, e.g. by
        :class:`~tianshou.highlevel.module.special.ImplicitQuantileNetworkFactory`).
    :param optim_factory: the default optimizer factory factory.
    """

    _algorithm_class: type[TAlgorithm]

    def __init__(
        self,
        params: TDiscreteCriticOnlyParams,
        training_config: OffPolicyTrainingConfig,
        model_factory: ModuleFactory,
        optim_factory: OptimizerFactoryFactory,
    ) -> None:
        super().__init__(training_config, optim_factory)
        self.params = params
        self.model_factory = model_factory

    @abstractmethod
    def _create_policy(self, model: nn.Module, envs: Environments) -> DiscreteQLearningPolicy:
        """The policy acting (epsilon-)greedily on ``model``'s Q-values for ``envs``."""

    def _create_algorithm(self, envs: Environments, device: TDevice) -> TAlgorithm:
        envs.get_type().assert_discrete(self)
        model = self.model_factory.create_module(envs, device)
        data = self._transformer_data(envs, device)
        kwargs = algorithm_kwargs(self._algorithm_class, self.params, data)
        return self._algorithm_class(policy=self._create_policy(model, envs), **kwargs)


class DQNAlgorithmFactory(DiscreteCriticOnlyOffPolicyAlgorithmFactory[DQNParams, DQN]):
    """Builds :class:`~tianshou.algorithm.DQN` with a :class:`DiscreteQLearningPolicy`;
    arguments as in the base class.
    """

    _algorithm_class = DQN

    def _create_policy(self, model: nn.Module, envs: Environments) -> DiscreteQLearningPolicy:
        return DiscreteQLearningPolicy(
            model=model,
            eps_training=self.params.eps_training,
            eps_inference=self.params.eps_inference,
            **policy_spaces(envs),
        )


class IQNAlgorithmFactory(DiscreteCriticOnlyOffPolicyAlgorithmFactory[IQNParams, IQN]):
    """Builds :class:`~tianshou.algorithm.IQN` with an :class:`IQNPolicy`; the model factory must
    build an :class:`~tianshou.utils.net.discrete.ImplicitQuantileNetwork`. Arguments as in the
    base class.
    """

    _algorithm_class = IQN

    def _create_policy(self, model: nn.Module, envs: Environments) -> IQNPolicy:
        if not isinstance(model, ImplicitQuantileNetwork):
            raise TypeError(
                f"IQN needs an ImplicitQuantileNetwork (e.g. from ImplicitQuantileNetworkFactory), "
                f"but the model factory built a {type(model).__name__}"
            )
        params = self.params
        return IQNPolicy(
            model=model,
            sample_size=params.sample_size,
            online_sample_size=params.online_sample_size,
            target_sample_size=params.target_sample_size,
            eps_training=params.eps_training,
            eps_inference=params.eps_inference,
            **policy_spaces(envs),
        )
