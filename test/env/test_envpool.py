"""make_envpool_env: EnvPool when available, SubprocVectorEnv otherwise."""

import importlib
import sys

import gymnasium as gym
import numpy as np
import pytest

from tianshou.env import BaseVectorEnv, SubprocVectorEnv, make_envpool_env


def test_falls_back_to_subprocesses_without_envpool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "envpool", None)  # makes ``import envpool`` fail
    venv = make_envpool_env("CartPole-v1", 2, seed=5)
    try:
        assert isinstance(venv, SubprocVectorEnv)
        obs, _ = venv.reset()
        for i in range(2):
            env = gym.make("CartPole-v1")
            env.reset(seed=5 + i)
            np.testing.assert_array_equal(obs[i], env.reset()[0])
    finally:
        venv.close()


def test_tasks_envpool_does_not_know_fall_back() -> None:
    importlib.import_module("envpool")  # the project installs it; a missing one must fail
    gym.register("TianshouToyCount-v0", entry_point="test.env.toy_envs:CountEnv")
    try:
        venv = make_envpool_env("TianshouToyCount-v0", 2, size=3)
        try:
            assert isinstance(venv, SubprocVectorEnv)
            assert venv.get_env_attr("size") == [3, 3]
        finally:
            venv.close()
    finally:
        gym.registry.pop("TianshouToyCount-v0")


@pytest.mark.filterwarnings("ignore:.*precision lowered")
def test_envpool_env_has_the_vector_api_a_collector_needs() -> None:
    importlib.import_module("envpool")  # the project installs it; a missing one must fail
    env = make_envpool_env("CartPole-v1", 4, seed=0)
    try:
        assert not isinstance(env, BaseVectorEnv)
        assert len(env) == 4
        obs, info = env.reset()
        assert obs.shape == (4, 4)
        np.testing.assert_array_equal(info["env_id"], [0, 1, 2, 3])
        ids = np.array([1, 3])
        obs, rew, terminated, truncated, info = env.step(np.array([0, 1]), ids)
        assert obs.shape == (2, 4) and rew.shape == terminated.shape == truncated.shape == (2,)
        np.testing.assert_array_equal(info["env_id"], ids)
        obs, info = env.reset(env_id=np.array([3]))
        assert obs.shape == (1, 4) and info["env_id"].tolist() == [3]
    finally:
        env.close()
