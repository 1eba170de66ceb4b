"""Factories of algorithm wrappers, which add a learning component around an algorithm built by
an algorithm factory (e.g. an intrinsic curiosity module).

For example, ``builder.with_algorithm_wrapper_factory(AlgorithmWrapperFactoryIntrinsicCuriosity(
feature_net_factory=..., hidden_sizes=[64], lr=1e-3, lr_scale=1.0, reward_scale=0.01,
forward_loss_weight=0.2))`` trains a DQN or PPO experiment with a curiosity bonus.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Generic, TypeVar

import torch
from torch import nn

from tianshou.algorithm import Algorithm, OffPolicyAlgorithm, OnPolicyAlgorithm
from tianshou.algorithm.modelbased.icm import ICMOffPolicyWrapper, ICMOnPolicyWrapper
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.module.intermediate import IntermediateModuleFactory
from tianshou.highlevel.params.optim import OptimizerFactoryFactory
from tianshou.utils.net.discrete import IntrinsicCuriosityModule
from tianshou.utils.string import ToStringMixin

TAlgorithmOut = TypeVar("TAlgorithmOut", bound=Algorithm)


class _FeaturesOnly(nn.Module):
    """Adapts an intermediate module, which like the bodies of :mod:`tianshou.utils.net` may
    return ``(features, state)``, to the ICM's ``obs -> features``."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out = self.net(obs)
        return out[0] if isinstance(out, tuple) else out


class AlgorithmWrapperFactory(Generic[TAlgorithmOut], ToStringMixin, ABC):
    """Wraps an algorithm in another one that trains something besides it."""

    @abstractmethod
    def create_wrapped_algorithm(
        self,
        policy: Algorithm,
        envs: Environments,
        optim_factory: OptimizerFactoryFactory,
        device: TDevice,
    ) -> TAlgorithmOut:
        """The wrapping algorithm.

        :param policy: the algorithm to wrap.
        :param envs: the environments it is trained on.
        :param optim_factory: the experiment's default optimizer, for the wrapper's own modules.
        :param device: where the wrapper's modules live.
        """


class AlgorithmWrapperFactoryIntrinsicCuriosity(
    AlgorithmWrapperFactory[ICMOffPolicyWrapper | ICMOnPolicyWrapper]
):
    """Adds an intrinsic curiosity module (ICM, Pathak et al. 2017) to an algorithm with discrete
    actions; its forward-prediction error is added to the rewards as a curiosity bonus.

    :param feature_net_factory: builds the feature net embedding observations.
    :param hidden_sizes: hidden layers of the ICM's forward and inverse models.
    :param lr: learning rate of the ICM.
    :param lr_scale: factor of the ICM's loss (>= 0).
    :param reward_scale: factor of the forward error in the intrinsic reward (>= 0).
    :param forward_loss_weight: weight in [0, 1] of the forward loss against the inverse loss.
    :param optim: the ICM's optimizer; None: the experiment's default optimizer.
    """

    def __init__(
        self,
        *,
        feature_net_factory: IntermediateModuleFactory,
        hidden_sizes: Sequence[int],
        lr: float,
        lr_scale: float,
        reward_scale: float,
        forward_loss_weight: float,
        optim: OptimizerFactoryFactory | None = None,
    ) -> None:
        self.feature_net_factory = feature_net_factory
        self.hidden_sizes = hidden_sizes
        self.lr = lr
        self.lr_scale = lr_scale
        self.reward_scale = reward_scale
        self.forward_loss_weight = forward_loss_weight
        self.optim = optim

    def create_wrapped_algorithm(
        self,
        algorithm: Algorithm,
        envs: Environments,
        optim_factory_default: OptimizerFactoryFactory,
        device: TDevice,
    ) -> ICMOffPolicyWrapper | ICMOnPolicyWrapper:
        envs.get_type().assert_discrete(self)
        feature_net = self.feature_net_factory.create_intermediate_module(envs, device)
        action_dim = envs.get_action_shape()
        assert isinstance(action_dim, int)
        model = IntrinsicCuriosityModule(
            feature_net=_FeaturesOnly(feature_net.module),
            feature_dim=feature_net.output_dim,
            action_dim=action_dim,
            hidden_sizes=self.hidden_sizes,
            device=device,
        ).to(device)
        optim_factory = self.optim if self.optim is not None else optim_factory_default
        wrapper_class: type[ICMOffPolicyWrapper] | type[ICMOnPolicyWrapper]
        if isinstance(algorithm, OffPolicyAlgorithm):
            wrapper_class = ICMOffPolicyWrapper
        elif isinstance(algorithm, OnPolicyAlgorithm):
            wrapper_class = ICMOnPolicyWrapper
        else:
            raise TypeError(
                f"intrinsic curiosity wraps on-policy or off-policy algorithms, got "
                f"{type(algorithm).__name__}"
            )
        return wrapper_class(
            wrapped_algorithm=algorithm,  # type: ignore[arg-type]
            model=model,
            optim=optim_factory.create_optimizer_factory(self.lr),
            lr_scale=self.lr_scale,
            reward_scale=self.reward_scale,
            forward_loss_weight=self.forward_loss_weight,
        )
