"""Factories of exploration noise whose scale depends on the environments' action range.

>>> noise_factory = MaxActionScaledGaussian(0.1)  # sigma = 0.1 * max_action
"""

from abc import ABC, abstractmethod

from tianshou.exploration import BaseNoise, GaussianNoise
from tianshou.highlevel.env import ContinuousEnvironments, Environments
from tianshou.utils.string import ToStringMixin


class NoiseFactory(ToStringMixin, ABC):
    """Creates the exploration noise of a policy for given environments."""

    @abstractmethod
    def create_noise(self, envs: Environments) -> BaseNoise:
        """The noise added to the policy's actions during training collection.

        :param envs: the environments (their action space sets the scale).
        """


class NoiseFactoryMaxActionScaledGaussian(NoiseFactory):
    """Gaussian noise with standard deviation ``std_fraction * max_action``.

    :param std_fraction: the standard deviation as a fraction of the largest action bound.
    """

    def __init__(self, std_fraction: float) -> None:
        if std_fraction < 0:
            raise ValueError(f"std_fraction must be non-negative, got {std_fraction}")
        self.std_fraction = std_fraction

    def create_noise(self, envs: Environments) -> GaussianNoise:
        if not isinstance(envs, ContinuousEnvironments):
            raise TypeError(
                f"{self} scales noise by the maximum action and needs continuous environments "
                f"(a Box action space), got {envs.get_type()}"
            )
        return GaussianNoise(sigma=envs.max_action * self.std_fraction)


class MaxActionScaledGaussian(NoiseFactoryMaxActionScaledGaussian):
    """Short name of :class:`NoiseFactoryMaxActionScaledGaussian`."""
