"""VectorEnvWrapper forwarding and VectorEnvNormObs statistics."""

import pickle
from functools import partial

import numpy as np
import pytest

from test.env.toy_envs import CountEnv
from tianshou.env import DummyVectorEnv, EnvStateError, VectorEnvNormObs, VectorEnvWrapper


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
