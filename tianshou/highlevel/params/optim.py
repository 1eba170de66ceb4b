"""Factories of optimizer factories: the high-level parameter objects choose an optimizer type
and its hyper-parameters, while the learning rate is a separate parameter of each algorithm
(``lr``, ``actor_lr``, ...). Given the learning rate, they create the
:class:`~tianshou.algorithm.optim.OptimizerFactory` that the procedural algorithms take.

>>> factory = OptimizerFactoryFactoryRMSprop(eps=1e-5).create_optimizer_factory(lr=7e-4)
>>> type(factory).__name__, factory.lr, factory.eps
('RMSpropOptimizerFactory', 0.0007, 1e-05)
"""

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Protocol, TypeAlias

import torch

from tianshou.algorithm.optim import (
    AdamOptimizerFactory,
    OptimizerFactory,
    RMSpropOptimizerFactory,
    TorchOptimizerFactory,
)
from tianshou.utils.string import ToStringMixin

TParams: TypeAlias = Iterable[torch.Tensor] | Iterable[dict[str, Any]]
"""What a torch optimizer's constructor takes: tensors, or parameter groups."""


class OptimizerWithLearningRateProtocol(Protocol):
    """A torch optimizer class (or any callable like it) taking the learning rate as ``lr``."""

    def __call__(self, params: TParams, lr: float) -> torch.optim.Optimizer:
        pass


class OptimizerFactoryFactory(ABC, ToStringMixin):
    """Creates optimizer factories for a given learning rate."""

    @staticmethod
    def default() -> "OptimizerFactoryFactory":
        """The default optimizer of the high-level API: Adam with torch's hyper-parameters."""
        return OptimizerFactoryFactoryAdam()

    @abstractmethod
    def create_optimizer_factory(self, lr: float) -> OptimizerFactory:
        """The optimizer factory with learning rate ``lr``.

        :param lr: the (initial) learning rate.
        """


class OptimizerFactoryFactoryTorch(OptimizerFactoryFactory):
    """Any torch optimizer class, with fixed keyword arguments besides the learning rate.

    :param optim_class: e.g. ``torch.optim.SGD``.
    :param kwargs: further arguments of its constructor (e.g. ``momentum=0.9``); not ``lr``,
        which each algorithm parameter object sets.
    """

    def __init__(self, optim_class: OptimizerWithLearningRateProtocol, **kwargs: Any) -> None:
        if "lr" in kwargs:
            raise ValueError(
                "pass the learning rate through the algorithm's parameters (e.g. lr=...), not as "
                "an optimizer keyword argument"
            )
        self.optim_class = optim_class
        self.kwargs = kwargs

    def create_optimizer_factory(self, lr: float) -> OptimizerFactory:
        return TorchOptimizerFactory(self.optim_class, lr=lr, **self.kwargs)  # type: ignore[arg-type]


class OptimizerFactoryFactoryAdam(OptimizerFactoryFactory):
    """Adam (``torch.optim.Adam``); arguments as there.

    :param betas: coefficients of the running averages of the gradient and its square.
    :param eps: term added to the denominator for numerical stability.
    :param weight_decay: L2 penalty.
    """

    def __init__(
        self,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-08,
        weight_decay: float = 0,
    ) -> None:
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay

    def create_optimizer_factory(self, lr: float) -> AdamOptimizerFactory:
        return AdamOptimizerFactory(
            lr=lr, betas=self.betas, eps=self.eps, weight_decay=self.weight_decay
        )


class OptimizerFactoryFactoryRMSprop(OptimizerFactoryFactory):
    """RMSprop (``torch.optim.RMSprop``); arguments as there.

    :param alpha: smoothing constant of the running average of the squared gradient.
    :param eps: term added to the denominator for numerical stability.
    :param weight_decay: L2 penalty.
    :param momentum: momentum factor.
    :param centered: normalise by the estimated variance of the gradient instead of its second
        moment.
    """

    def __init__(
        self,
        alpha: float = 0.99,
        eps: float = 1e-08,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
    ) -> None:
        self.alpha = alpha
        self.eps = eps
        self.weight_decay = weight_decay
        self.momentum = momentum
        self.centered = centered

    def create_optimizer_factory(self, lr: float) -> RMSpropOptimizerFactory:
        return RMSpropOptimizerFactory(
            lr=lr,
            alpha=self.alpha,
            eps=self.eps,
            weight_decay=self.weight_decay,
            momentum=self.momentum,
            centered=self.centered,
        )
