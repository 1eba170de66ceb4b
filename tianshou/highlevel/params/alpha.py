"""Factories of SAC's learned entropy coefficient (for SAC, DiscreteSAC and REDQ), which need
the environments to set the target entropy.

>>> factory = AutoAlphaFactoryDefault(lr=3e-4)  # target entropy -action_dim or -log(n)
"""

from abc import ABC, abstractmethod

import numpy as np

from tianshou.algorithm.modelfree.sac import AutoAlpha
from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.params.optim import OptimizerFactoryFactory
from tianshou.utils.string import ToStringMixin


class AutoAlphaFactory(ToStringMixin, ABC):
    """Creates a learned entropy coefficient for given environments."""

    @abstractmethod
    def create_auto_alpha(self, envs: Environments, device: TDevice) -> AutoAlpha:
        """The coefficient, to be passed as ``alpha`` to SAC, DiscreteSAC or REDQ.

        :param envs: the environments; their action space sets the target entropy.
        :param device: where the coefficient's parameter lives (the algorithm's device).
        """


class AutoAlphaFactoryDefault(AutoAlphaFactory):
    """An :class:`~tianshou.algorithm.modelfree.entropy_coefficient.AutoAlpha` tracking a target
    entropy.

    The target entropy is ``target_entropy_coefficient`` times a measure of the action space's
    size: ``action_dim`` for continuous actions, ``log(num_actions)`` for discrete ones (the
    entropy of the uniform distribution over them).

    :param lr: learning rate of ``log(alpha)``.
    :param target_entropy_coefficient: the factor of the target entropy. The default -1.0 gives
        ``-action_dim`` for continuous actions (Haarnoja et al. 2018, "Soft Actor-Critic
        Algorithms and Applications") and ``-log(num_actions)`` for discrete ones, a target
        below any categorical entropy, so that alpha keeps shrinking and the policy can become
        nearly deterministic. A positive factor below 1 (e.g. 0.98, Christodoulou 2019, "Soft
        Actor-Critic for Discrete Action Settings") keeps a discrete policy exploring; 1.0
        asks for full entropy.
    :param log_alpha: initial ``log(alpha)`` (0: alpha starts at 1).
    :param optim: the optimizer of ``log(alpha)``; None: Adam.
    """

    def __init__(
        self,
        lr: float = 3e-4,
        target_entropy_coefficient: float = -1.0,
        log_alpha: float = 0.0,
        optim: OptimizerFactoryFactory | None = None,
    ) -> None:
        self.lr = lr
        self.target_entropy_coefficient = target_entropy_coefficient
        self.log_alpha = log_alpha
        self.optim = optim

    def _target_entropy(self, envs: Environments) -> float:
        action_shape = envs.get_action_shape()
        if envs.get_type().is_discrete():
            size = float(np.log(int(action_shape)))  # type: ignore[arg-type]
        else:
            size = float(np.prod(action_shape))
        return self.target_entropy_coefficient * size

    def create_auto_alpha(self, envs: Environments, device: TDevice) -> AutoAlpha:
        optim = self.optim if self.optim is not None else OptimizerFactoryFactory.default()
        alpha = AutoAlpha(
            target_entropy=self._target_entropy(envs),
            log_alpha=self.log_alpha,
            optim=optim.create_optimizer_factory(self.lr),
        )
        return alpha.to(device)
