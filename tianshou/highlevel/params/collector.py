"""Factories of the collectors that gather training and test data, so that experiments can use
custom collectors (e.g. with hooks) without changing the algorithm factories.
"""

from abc import ABC, abstractmethod

from tianshou.algorithm import Algorithm
from tianshou.data import BaseCollector, Collector, ReplayBuffer
from tianshou.env import BaseVectorEnv


class CollectorFactory(ABC):
    """Creates a collector of an algorithm's policy on vectorised environments."""

    @abstractmethod
    def create_collector(
        self,
        algorithm: Algorithm,
        vector_env: BaseVectorEnv,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
    ) -> BaseCollector:
        """The collector.

        :param algorithm: the algorithm whose policy acts.
        :param vector_env: the environments to collect from.
        :param buffer: where transitions are stored (None: a buffer is created for the envs).
        :param exploration_noise: add the policy's exploration noise to the actions (training).
        """


class CollectorFactoryDefault(CollectorFactory):
    """Creates a plain :class:`~tianshou.data.Collector`."""

    def create_collector(
        self,
        algorithm: Algorithm,
        vector_env: BaseVectorEnv,
        buffer: ReplayBuffer | None = None,
        exploration_noise: bool = False,
    ) -> Collector:
        return Collector(algorithm, vector_env, buffer, exploration_noise=exploration_noise)
