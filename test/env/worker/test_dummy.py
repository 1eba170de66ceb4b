"""DummyEnvWorker: in-process stepping with the shared env-side semantics."""

import gymnasium as gym
import numpy as np

from test.env.toy_envs import CountEnv
from tianshou.env.worker import DummyEnvWorker


def test_reset_with_seed_also_seeds_the_action_space() -> None:
    worker = DummyEnvWorker(CountEnv)
    worker.reset(seed=5)
    space = gym.spaces.Discrete(2)
    space.seed(5)
    assert [worker.env.action_space.sample() for _ in range(8)] == [
        space.sample() for _ in range(8)
    ]


def test_send_then_recv_and_wait_returns_all() -> None:
    worker = DummyEnvWorker(CountEnv)
    worker.send(None, seed=0)
    obs, info = worker.recv()
    assert obs[0] == 0 and info == {"size": 5}
    worker.send(np.int64(1))
    assert worker.recv()[0][0] == 1
    assert DummyEnvWorker.wait([worker], wait_num=1) == [worker]


def test_attributes_go_through_wrappers_and_set_on_unwrapped() -> None:
    worker = DummyEnvWorker(lambda: gym.wrappers.TimeLimit(CountEnv(size=3), 10))
    assert worker.get_env_attr("size") == 3
    worker.set_env_attr("size", 4)
    assert worker.env.unwrapped.size == 4  # type: ignore[attr-defined]
    worker.close()
    worker.close()
    assert worker.is_closed
