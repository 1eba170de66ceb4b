"""Checkpoints in both directions between ours and code written for the published library.

``published_load`` does what the published ``Algorithm.load_state_dict`` does: it takes the
``"_optimizers"`` entry for the optimizers and loads everything else with
``nn.Module.load_state_dict(strict=True)``, so any key beyond the published ones fails it.
"""

import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from tianshou.algorithm import DQN, PPO, TD3, Algorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

from examples.mujoco import mujoco_ppo, mujoco_td3


def published_load(algorithm: Algorithm, state: dict[str, Any]) -> None:
    state = dict(state)
    for optimizer, optimizer_state in zip(
        algorithm._optimizers, state.pop("_optimizers"), strict=True
    ):
        optimizer._optim.load_state_dict(optimizer_state)
    nn.Module.load_state_dict(algorithm, state, strict=True)


def saved_and_loaded(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` through ``torch.save`` and ``torch.load(weights_only=True)``."""
    stream = io.BytesIO()
    torch.save(state, stream)
    stream.seek(0)
    return torch.load(stream, weights_only=True)


def build_ppo() -> PPO:
    torch.manual_seed(0)
    args = mujoco_ppo.get_args(["--return-scaling"])
    return mujoco_ppo.build_ppo(args, gym.make("Pendulum-v1"))


def build_td3() -> TD3:
    torch.manual_seed(0)
    return mujoco_td3.build_td3(mujoco_td3.get_args([]), gym.make("Pendulum-v1"))


def build_dqn() -> DQN:
    torch.manual_seed(0)
    env = gym.make("CartPole-v1")
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[16])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space)
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3), target_update_freq=3)


BUILDERS = {"ppo": build_ppo, "td3": build_td3, "dqn": build_dqn}
TASKS = {"ppo": "Pendulum-v1", "td3": "Pendulum-v1", "dqn": "CartPole-v1"}


def trained(kind: str) -> Algorithm:
    """The algorithm after two collections and updates, so that its extras are not initial."""
    algorithm = BUILDERS[kind]()
    envs = DummyVectorEnv([lambda: gym.make(TASKS[kind]) for _ in range(2)])
    envs.seed(0)
    collector = Collector(algorithm.policy, envs, VectorReplayBuffer(400, 2))
    collector.reset()
    with policy_within_training_step(algorithm.policy):
        for _ in range(2):
            collector.collect(n_step=100)
            if kind == "ppo":
                algorithm.update(buffer=collector.buffer, batch_size=50, repeat=1)
                collector.reset_buffer(keep_statistics=True)
            else:
                for _ in range(5):
                    algorithm.update(sample_size=32, buffer=collector.buffer)
    return algorithm


def extras_of(algorithm: Algorithm) -> dict[str, Any]:
    if isinstance(algorithm, PPO):
        rms = algorithm.ret_rms
        return {"ret_rms": (rms.count, np.copy(rms.mean), np.copy(rms.var))}
    return {"counter": algorithm._cnt if isinstance(algorithm, TD3) else algorithm._iter}


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_a_checkpoint_of_ours_loads_strictly_as_the_published_library_loads(kind: str) -> None:
    source = trained(kind)
    state = saved_and_loaded(source.state_dict())
    fresh = BUILDERS[kind]()
    published_keys = set(nn.Module.state_dict(fresh)) | {"_optimizers"}
    assert set(state) == published_keys
    published_load(fresh, state)
    for name, value in source.state_dict().items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(fresh.state_dict()[name], value), name


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_ours_restores_the_extras_from_the_same_file(kind: str) -> None:
    source = trained(kind)
    expected = extras_of(source)
    assert expected != extras_of(BUILDERS[kind]())  # training changed them
    resumed = BUILDERS[kind]()
    resumed.load_state_dict(saved_and_loaded(source.state_dict()))
    actual = extras_of(resumed)
    assert actual.keys() == expected.keys()
    for key, value in expected.items():
        if isinstance(value, tuple):
            assert actual[key][0] == value[0]
            np.testing.assert_array_equal(actual[key][1], value[1])
            np.testing.assert_array_equal(actual[key][2], value[2])
        else:
            assert actual[key] == value


def test_a_published_checkpoint_loads_into_ours() -> None:
    """What the published library writes: the published keys, no extras."""
    source = trained("ppo")
    state = dict(source.state_dict())  # a plain dict, as the published library's can be
    resumed = build_ppo()
    resumed.ret_rms.update(np.array([3.0]))
    resumed.load_state_dict(state)
    assert resumed.ret_rms.count == 1  # left as it was
    assert torch.equal(next(resumed.policy.parameters()), next(source.policy.parameters()))
