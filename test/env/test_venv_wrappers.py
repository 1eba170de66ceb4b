"""VectorEnvWrapper forwarding and VectorEnvNormObs statistics."""

import pickle
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from test.env.toy_envs import CountEnv
from tianshou.env import DummyVectorEnv, EnvStateError, VectorEnvNormObs, VectorEnvWrapper
from tianshou.utils.statistics import RunningMeanStd


def test_wrapper_forwards_everything() -> None:
    venv = DummyVectorEnv([partial(CountEnv, size=2), partial(CountEnv, size=3)], wait_num=1)
    wrapper = VectorEnvWrapper(venv)
    assert len(wrapper) == wrapper.env_num == 2
    assert wrapper.is_async and wrapper.workers is venv.workers
    assert wrapper.get_env_attr("size") == [2, 3]
    assert wrapper.action_space == venv.action_space
    wrapper.set_env_attr("size", 1, id=[0])
    assert wrapper.seed(0) == [[0], [1]]
    obs, info = wrapper.reset()
    assert obs.shape == (2, 2) and info[1]["env_id"] == 1
    _, _, terminated, _, _ = wrapper.step(np.array([1, 1]))
    assert terminated.tolist() == [True, False]
    assert len(wrapper.render()) == 2
    wrapper.close()
    assert venv.is_closed
    with pytest.raises(EnvStateError):
        wrapper.reset()


def test_dropping_a_wrapper_does_not_close_the_wrapped_env() -> None:
    venv = DummyVectorEnv([CountEnv])
    wrapper = VectorEnvWrapper(venv)
    del wrapper
    assert not venv.is_closed
    venv.close()


def test_norm_obs_matches_statistics_of_all_observations_seen() -> None:
    venv = VectorEnvNormObs(DummyVectorEnv([CountEnv] * 3))
    seen = []
    normed = []
    obs, _ = venv.reset(seed=0)
    normed.append(obs)
    for action in [1, 1, 0, 1]:
        obs, *_ = venv.step(np.full(3, action))
        normed.append(obs)
    raw = DummyVectorEnv([CountEnv] * 3)
    obs, _ = raw.reset(seed=0)
    seen.append(obs)
    for action in [1, 1, 0, 1]:
        seen.append(raw.step(np.full(3, action))[0])
    rms = venv.get_obs_rms()
    everything = np.concatenate(seen)
    np.testing.assert_allclose(rms.mean, everything.mean(axis=0))
    np.testing.assert_allclose(rms.var, everything.var(axis=0))
    assert rms.count == len(everything)
    # the last batch was normalised with the statistics including it
    np.testing.assert_allclose(normed[-1], (seen[-1] - rms.mean) / np.sqrt(rms.var + rms.eps))


def test_frozen_test_envs_use_training_statistics() -> None:
    train = VectorEnvNormObs(DummyVectorEnv([CountEnv] * 2))
    train.reset(seed=0)
    train.step(np.array([1, 1]))
    test = VectorEnvNormObs(DummyVectorEnv([CountEnv] * 2), update_obs_rms=False)
    test.set_obs_rms(pickle.loads(pickle.dumps(train.get_obs_rms())))  # as from a checkpoint
    before = (test.get_obs_rms().mean.copy(), test.get_obs_rms().count)
    obs, _ = test.reset(seed=0)
    raw_obs, _ = DummyVectorEnv([CountEnv] * 2).reset(seed=0)
    rms = train.get_obs_rms()
    np.testing.assert_allclose(obs, (raw_obs - rms.mean) / np.sqrt(rms.var + rms.eps))
    np.testing.assert_array_equal(test.get_obs_rms().mean, before[0])
    assert test.get_obs_rms().count == before[1]


class DictObsEnv(gym.Env):
    """Dict observations with a float entry, a uint8 image and a Discrete index, all growing
    with the step count."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict(
            {
                "pos": gym.spaces.Box(-100.0, 100.0, (2,)),
                "image": gym.spaces.Box(0, 255, (2, 2, 1), dtype=np.uint8),
                "goal": gym.spaces.Discrete(10),
            }
        )
        self.action_space = gym.spaces.Discrete(2)
        self.count = 0

    def _observe(self) -> dict[str, Any]:
        return {
            "pos": np.array([self.count, 3.0 * self.count], dtype=np.float32),
            "image": np.full((2, 2, 1), 10 * self.count, dtype=np.uint8),
            "goal": self.count % 10,
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.count = int(self.np_random.integers(3))
        return self._observe(), {}

    def step(self, action: int) -> tuple[dict, float, bool, bool, dict]:
        self.count += int(action) + 1
        return self._observe(), 0.0, False, False, {}


def test_norm_obs_normalises_dict_observations_per_float_key() -> None:
    venv = VectorEnvNormObs(DummyVectorEnv([DictObsEnv] * 3))
    raw = DummyVectorEnv([DictObsEnv] * 3)
    seen, normed = [raw.reset(seed=0)[0]], [venv.reset(seed=0)[0]]
    for action in [1, 0, 1]:
        seen.append(raw.step(np.full(3, action))[0])
        normed.append(venv.step(np.full(3, action))[0])
    stats = venv.get_obs_rms()
    assert isinstance(stats, dict) and list(stats) == ["pos"]  # integer entries keep no stats
    positions = np.stack([o["pos"] for batch in seen for o in batch])
    np.testing.assert_allclose(stats["pos"].mean, positions.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(stats["pos"].var, positions.var(axis=0), rtol=1e-5)
    last_raw, last_normed = seen[-1], normed[-1]
    for raw_obs, obs in zip(last_raw, last_normed, strict=True):
        expected = (raw_obs["pos"] - stats["pos"].mean) / np.sqrt(stats["pos"].var + 1e-7)
        np.testing.assert_allclose(obs["pos"], expected, rtol=1e-4)
        assert obs["pos"].dtype == np.float32
        np.testing.assert_array_equal(obs["image"], raw_obs["image"])
        assert obs["goal"] == raw_obs["goal"]


def test_frozen_dict_statistics_carry_over_to_test_envs() -> None:
    train = VectorEnvNormObs(DummyVectorEnv([DictObsEnv] * 2))
    train.reset(seed=0)
    train.step(np.array([1, 1]))
    test = VectorEnvNormObs(DummyVectorEnv([DictObsEnv] * 2), update_obs_rms=False)
    test.set_obs_rms(pickle.loads(pickle.dumps(train.get_obs_rms())))
    count = test.get_obs_rms()["pos"].count
    obs, _ = test.reset(seed=0)
    raw_obs, _ = DummyVectorEnv([DictObsEnv] * 2).reset(seed=0)
    rms = train.get_obs_rms()["pos"]
    expected = (raw_obs[0]["pos"] - rms.mean) / np.sqrt(rms.var + rms.eps)
    np.testing.assert_allclose(obs[0]["pos"], expected, rtol=1e-5)
    assert test.get_obs_rms()["pos"].count == count


def test_norm_obs_rejects_statistics_of_the_other_kind() -> None:
    flat = VectorEnvNormObs(DummyVectorEnv([CountEnv]))
    flat.reset(seed=0)
    venv = VectorEnvNormObs(DummyVectorEnv([DictObsEnv]))
    venv.set_obs_rms(flat.get_obs_rms())
    with pytest.raises(TypeError, match="dict observations"):
        venv.reset(seed=0)
    flat.set_obs_rms({"pos": RunningMeanStd()})
    with pytest.raises(TypeError, match="per-key statistics"):
        flat.reset(seed=0)
