"""RayEnvWorker / RayVectorEnv against a local Ray instance started (and stopped) by this module.

Every new actor starts a Python process that imports tianshou, which takes seconds on a small
machine, so the tests share two vector envs: a synchronous one for data equality and attribute
access, and an asynchronous one for waiting, env exceptions and dead actors.
"""

import time
from collections.abc import Iterator
from functools import partial

import numpy as np
import pytest
import ray

from test.env import toy_envs
from test.env.test_venvs import ACTIONS, assert_same_structure, rollout
from test.env.toy_envs import CountEnv, DictObsEnv, FailingEnv
from tianshou.env import DummyVectorEnv, EnvStateError, EnvWorkerError, RayVectorEnv


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    import cloudpickle

    # Ray's worker processes may not have the repository on sys.path: ship the toy envs by value.
    cloudpickle.register_pickle_by_value(toy_envs)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    cloudpickle.unregister_pickle_by_value(toy_envs)


def test_same_data_as_dummy_and_attributes() -> None:
    env_fns = [partial(CountEnv, size=2), partial(DictObsEnv, size=3)]
    ray_venv = RayVectorEnv(env_fns)
    dummy_venv = DummyVectorEnv(env_fns)
    try:
        assert_same_structure(rollout(ray_venv, ACTIONS), rollout(dummy_venv, ACTIONS))
        assert ray_venv.get_env_attr("size") == [2, 3]
        ray_venv.set_env_attr("size", 9, id=1)
        assert ray_venv.get_env_attr("size", id=1) == [9]
        with pytest.raises(AttributeError):
            ray_venv.get_env_attr("no_such_attribute")
        assert [frame.shape for frame in ray_venv.render()] == [(2, 2, 3)] * 2
    finally:
        ray_venv.close()
        dummy_venv.close()
    with pytest.raises(EnvStateError):
        ray_venv.step([1, 1])


def test_async_stepping_env_exception_and_dead_actor() -> None:
    env_fns = [CountEnv, partial(CountEnv, sleep=0.5), FailingEnv]
    venv = RayVectorEnv(env_fns, wait_num=1)
    try:
        venv.reset()
        *_, info = venv.step([1, 1], id=[0, 1])
        assert [i["env_id"] for i in info] == [0]
        assert venv.waiting_id == [1]
        with pytest.raises(EnvStateError, match="still stepping"):
            venv.step([1], id=1)
        start = time.monotonic()
        with pytest.raises(EnvWorkerError, match="environment 2") as excinfo:
            venv.step([FailingEnv.POISON], id=[2])
        assert time.monotonic() - start < 5
        assert "toy env exploded on step 1" in str(excinfo.value)
        assert "explode_with_a_recognisable_frame" in str(excinfo.value)
        *_, info = venv.step(None)
        assert [i["env_id"] for i in info] == [1]
        ray.kill(venv.workers[2].actor)  # type: ignore[attr-defined]
        with pytest.raises(EnvWorkerError, match="environment 2"):
            venv.step(np.array([1]), id=np.array([2]))
    finally:
        venv.close()
