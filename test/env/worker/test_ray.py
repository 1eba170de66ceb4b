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
from test.env.test_venvs import (
    ACTIONS,
    WAIT_SCENARIO_SLEEPS,
    assert_same_structure,
    check_async_step_returns_every_env_done,
    rollout,
)
from test.env.toy_envs import CountEnv, DictObsEnv, FailingEnv, NoSpacesEnv
from tianshou.env import DummyVectorEnv, EnvStateError, EnvWorkerError, RayVectorEnv
from tianshou.env.worker import ray as ray_module
from tianshou.env.worker.ray import _EnvHost


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    import cloudpickle

    # Ray's worker processes may not have the repository on sys.path: ship the toy envs by value.
    cloudpickle.register_pickle_by_value(toy_envs)
    if ray.is_initialized():  # e.g. left running by a RayVectorEnv test in this worker
        ray.shutdown()
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


def _kill_and_wait(actor: "ray.actor.ActorHandle") -> None:
    """Kill ``actor`` and wait until Ray reports it dead (``ray.kill`` only requests it, so a
    call made right after could still reach the live actor)."""
    ray.kill(actor)
    with pytest.raises(ray.exceptions.RayActorError):
        for _ in range(100):
            ray.get(actor.__ray_ready__.remote(), timeout=10)
            time.sleep(0.05)


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
        with pytest.raises(EnvStateError, match=r"environments \[2\] must be reset"):
            venv.step([1], id=[2])  # its result was lost with the failed call
        _kill_and_wait(venv.workers[2].actor)  # type: ignore[attr-defined]
        with pytest.raises(EnvWorkerError, match="environment 2"):
            venv.reset(env_id=np.array([2]))
    finally:
        venv.close()


def test_async_step_returns_every_env_done() -> None:
    env_fns = [partial(CountEnv, size=50, sleep=s) for s in WAIT_SCENARIO_SLEEPS]
    venv = RayVectorEnv(env_fns, wait_num=3, timeout=0.7)
    try:
        check_async_step_returns_every_env_done(venv)
    finally:
        venv.close()


def test_step_timeout_kills_a_hung_actor() -> None:
    venv = RayVectorEnv([CountEnv, partial(CountEnv, sleep=60.0)], wait_num=1, step_timeout=2.0)
    try:
        venv.reset()
        *_, info = venv.step([1, 1])
        assert [i["env_id"] for i in info] == [0]
        start = time.monotonic()
        with pytest.raises(EnvWorkerError, match=r"environment 1.*step_timeout=2.0 s"):
            while time.monotonic() - start < 20:
                venv.step([1], id=[0])
        assert time.monotonic() - start < 10
        with pytest.raises(EnvWorkerError, match="step_timeout"):
            venv.reset(env_id=1)  # the actor is gone for good
        if venv.waiting_id:  # env 0 may still have been stepping when env 1 failed
            venv.step(None)
        obs, _ = venv.reset(env_id=0)
        obs, *_ = venv.step([1], id=[0])
        assert obs[0, 0] == 1
    finally:
        venv.close()


def test_actor_body_applies_the_shared_env_operations() -> None:
    host = _EnvHost(partial(CountEnv, size=3))
    host.ping()
    assert host.seed(4) == [4]
    obs, info = host.reset({"seed": 4})
    assert obs[0] == 0 and info == {"size": 3}
    assert host.step(np.int64(1))[0][0] == 1
    host.set_env_attr("size", 1)
    assert host.get_env_attr("size") == 1
    assert host.render({}).shape == (2, 2, 3)
    host.close()


def test_envs_without_spaces_step_fine() -> None:
    venv = RayVectorEnv([NoSpacesEnv])
    try:
        venv.seed(1)
        venv.reset(seed=2)
        obs, *_ = venv.step([2])
        assert obs[0, 0] == 2
    finally:
        venv.close()


def test_close_ends_hung_actors_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ray_module, "_CLOSE_TIMEOUT_S", 1.0)
    venv = RayVectorEnv([partial(CountEnv, sleep=60.0)] * 3)
    venv.reset()
    for worker in venv.workers:
        worker.send(np.int64(1))  # all three are now stuck in their step
    start = time.monotonic()
    venv.close()
    assert time.monotonic() - start < 3  # one after another: 3 s
