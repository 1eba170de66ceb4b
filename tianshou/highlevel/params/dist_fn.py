"""Factories for distribution functions: how a policy turns an actor's output into a
distribution over actions.

The functions returned are module-level (not lambdas), so that policies holding them pickle.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch
from torch.distributions import Categorical, Distribution, Independent, Normal

from tianshou.algorithm.modelfree.reinforce import TDistFnContinuous, TDistFnDiscrete
from tianshou.highlevel.env import Environments
from tianshou.utils.net.discrete import dist_fn_categorical_from_logits
from tianshou.utils.string import ToStringMixin


def _dist_fn_categorical_from_probs(probs: torch.Tensor) -> Categorical:
    return Categorical(probs=probs)


def _dist_fn_independent_gaussians(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


class DistributionFunctionFactory(ToStringMixin, ABC):
    """Builds the distribution function for given environments."""

    @abstractmethod
    def create_dist_fn(self, envs: Environments) -> Callable[[Any], Distribution]:
        """The function mapping the actor's output to a distribution over actions.

        :param envs: the environments; factories check that they suit the distribution.
        """


class DistributionFunctionFactoryCategorical(DistributionFunctionFactory):
    """A categorical distribution over discrete actions.

    :param is_probs_input: the actor outputs probabilities (e.g. a
        :class:`~tianshou.utils.net.discrete.DiscreteActor` with ``softmax_output=True``);
        False: it outputs logits.
    """

    def __init__(self, is_probs_input: bool = True) -> None:
        self.is_probs_input = is_probs_input

    def create_dist_fn(self, envs: Environments) -> TDistFnDiscrete:
        envs.get_type().assert_discrete(self)
        if self.is_probs_input:
            return _dist_fn_categorical_from_probs
        return dist_fn_categorical_from_logits


class DistributionFunctionFactoryIndependentGaussians(DistributionFunctionFactory):
    """A diagonal Gaussian over continuous actions from the actor's ``(mean, std)`` output."""

    def create_dist_fn(self, envs: Environments) -> TDistFnContinuous:
        envs.get_type().assert_continuous(self)
        return _dist_fn_independent_gaussians
