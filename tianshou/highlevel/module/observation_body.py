"""The network body the default actor and critic factories put on an env's observations.

Flat observations get a :class:`~tianshou.utils.net.common.Net`; ``Dict`` observations a
:class:`~tianshou.utils.net.dict_encoder.DictEncoder`, which concatenates the flat entries and
encodes image entries with a CNN. A masked observation (``{"obs", "mask"}``, see
``docs/spaces.md``) counts as its ``obs`` entry, since that is all the networks read.
"""

from collections.abc import Sequence

import gymnasium as gym

from tianshou.highlevel.env import Environments
from tianshou.utils.net.common import ModuleType, ModuleWithVectorOutput, Net
from tianshou.utils.net.dict_encoder import DictEncoder


def network_observation_space(envs: Environments) -> gym.Space:
    """The observation space the networks read: a masked observation's ``obs`` entry, else
    the env's observation space."""
    space = envs.get_observation_space()
    if isinstance(space, gym.spaces.Dict) and set(space.spaces) == {"obs", "mask"}:
        return space["obs"]
    return space


def reads_dict_observations(envs: Environments) -> bool:
    """Whether the networks for ``envs`` read dict observations (need a :class:`DictEncoder`)."""
    return isinstance(network_observation_space(envs), gym.spaces.Dict)


def create_observation_body(
    envs: Environments, hidden_sizes: Sequence[int], activation: ModuleType
) -> ModuleWithVectorOutput:
    """A body whose output is its last hidden layer: a :class:`DictEncoder` for dict
    observations, else a :class:`Net` on the observation shape."""
    space = network_observation_space(envs)
    if isinstance(space, gym.spaces.Dict):
        return DictEncoder(
            observation_space=space, hidden_sizes=hidden_sizes, activation=activation
        )
    return Net(
        state_shape=envs.get_observation_shape(),
        hidden_sizes=hidden_sizes,
        activation=activation,
    )
