"""The core layer: ``Policy`` (observation to action) and ``Algorithm`` (how a policy learns)."""

from tianshou.algorithm.algorithm_base import (
    Algorithm,
    OfflineAlgorithm,
    OffPolicyAlgorithm,
    OffPolicyWrapperAlgorithm,
    OnPolicyAlgorithm,
    OnPolicyWrapperAlgorithm,
    Policy,
    RandomActionPolicy,
    TrainingStats,
)
from tianshou.algorithm.modelfree.a2c import A2C
from tianshou.algorithm.modelfree.ddpg import DDPG
from tianshou.algorithm.modelfree.dqn import DQN
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.reinforce import Reinforce
from tianshou.algorithm.modelfree.sac import SAC
from tianshou.algorithm.modelfree.td3 import TD3

__all__ = [
    "A2C",
    "DDPG",
    "DQN",
    "PPO",
    "SAC",
    "TD3",
    "Algorithm",
    "OffPolicyAlgorithm",
    "OffPolicyWrapperAlgorithm",
    "OfflineAlgorithm",
    "OnPolicyAlgorithm",
    "OnPolicyWrapperAlgorithm",
    "Policy",
    "RandomActionPolicy",
    "Reinforce",
    "TrainingStats",
]
