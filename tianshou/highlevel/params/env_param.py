"""Factories of algorithm parameters whose values depend on the environments, such as TD3's
noise bounds, which are fractions of the action range.

>>> noise_clip = MaxActionScaled(0.5)  # 0.5 * max_action
"""

from abc import ABC, abstractmethod
from typing import Generic, TypeVar

from tianshou.highlevel.env import ContinuousEnvironments, Environments
from tianshou.utils.string import ToStringMixin

TValue = TypeVar("TValue")
TEnvs = TypeVar("TEnvs", bound=Environments)


class EnvValueFactory(Generic[TValue, TEnvs], ToStringMixin, ABC):
    """Creates a parameter value for given environments."""

    @abstractmethod
    def create_value(self, envs: TEnvs) -> TValue:
        """The value for ``envs``.

        :param envs: the environments the algorithm is built for.
        """


class FloatEnvValueFactory(EnvValueFactory[float, TEnvs], Generic[TEnvs], ABC):
    """Creates a float parameter value for given environments."""


class FloatEnvValueFactoryMaxActionScaled(FloatEnvValueFactory[ContinuousEnvironments]):
    """``value * max_action`` of continuous environments.

    :param value: the fraction of the largest action bound.
    """

    def __init__(self, value: float) -> None:
        self.value = value

    def create_value(self, envs: ContinuousEnvironments) -> float:
        if not isinstance(envs, ContinuousEnvironments):
            raise TypeError(
                f"{self} scales by the maximum action and needs continuous environments (a Box "
                f"action space), got {envs.get_type()}"
            )
        return envs.max_action * self.value


class MaxActionScaled(FloatEnvValueFactoryMaxActionScaled):
    """Short name of :class:`FloatEnvValueFactoryMaxActionScaled`."""
