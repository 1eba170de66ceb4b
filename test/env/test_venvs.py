"""Vector envs: batching semantics, equality across backends, async stepping, faults, cleanup."""

import multiprocessing
import os
import signal
import sys
import time
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from test.env.conftest import MakeVenv
from test.env.toy_envs import (
    CountEnv,
    DictObsEnv,
    FailingEnv,
    RaggedEnv,
    TupleObsEnv,
    UnpicklableInfoEnv,
    unbuildable_env,
)
from tianshou.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    EnvStateError,
    EnvWorkerError,
    RayVectorEnv,
    ShmemVectorEnv,
    SubprocVectorEnv,
)

VENV_CLASSES = [DummyVectorEnv, SubprocVectorEnv, ShmemVectorEnv]
PROCESS_CLASSES = [SubprocVectorEnv, ShmemVectorEnv]


def child_pids() -> set[int]:
    """PIDs whose parent is this process, read from the process table in /proc."""
    me = os.getpid()
    pids = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we were looking
        if int(fields[1]) == me:  # zombies count too: close() must reap its children
            pids.add(int(entry))
    return pids


def rollout(venv: BaseVectorEnv, actions: list[int], seed: int = 3) -> list[tuple]:
    """Seed, reset, then step with the given actions, resetting finished envs."""
    venv.seed(seed)
    trace: list[tuple] = [venv.reset()]
    for action in actions:
        obs, rew, terminated, truncated, info = venv.step([action] * venv.env_num)
        trace.append((obs, rew, terminated, truncated, [i["env_id"] for i in info]))
        done = np.flatnonzero(terminated | truncated)
        if len(done):
            trace.append(venv.reset(done)[0])
    return trace


def assert_same_structure(a: Any, b: Any) -> None:
    """Recursive equality for arrays, object arrays of dicts, tuples and lists."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            assert_same_structure(a[key], b[key])
    elif isinstance(a, tuple | list) or (isinstance(a, np.ndarray) and a.dtype == object):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_same_structure(x, y)
    else:
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


ACTIONS = [1, 1, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0]


@pytest.mark.parametrize("env_cls", [CountEnv, DictObsEnv])
def test_backends_give_identical_data(make_venv: MakeVenv, env_cls: type) -> None:
    env_fns = [partial(env_cls, size=size) for size in (2, 3, 4)]
    traces = [rollout(make_venv(cls, env_fns), ACTIONS) for cls in VENV_CLASSES]
    assert len(traces[0]) > len(ACTIONS) + 3  # some envs finished and were reset
    for other in traces[1:]:
        assert_same_structure(traces[0], other)


def test_step_stacks_results_and_tags_env_id(make_venv: MakeVenv) -> None:
    venv = make_venv(DummyVectorEnv, [partial(CountEnv, size=2) for _ in range(3)])
    obs, info = venv.reset(seed=0)
    assert obs.shape == (3, 2) and obs.dtype == np.float64
    assert info.dtype == object and [i["env_id"] for i in info] == [0, 1, 2]
    assert info[0]["size"] == 2
    obs, rew, terminated, truncated, info = venv.step(np.array([1, 0, 1]))
    np.testing.assert_array_equal(obs[:, 0], [1, 0, 1])
    assert rew.dtype == np.float64 and terminated.dtype == bool and truncated.dtype == bool
    assert [i["env_id"] for i in info] == [0, 1, 2]
    obs, rew, terminated, _, info = venv.step([1, 1], id=[0, 2])
    np.testing.assert_array_equal(rew, [1.0, 1.0])
    np.testing.assert_array_equal(terminated, [True, True])
    assert [i["env_id"] for i in info] == [0, 2]
    obs, info = venv.reset(env_id=2)
    assert obs.shape == (1, 2) and obs[0, 0] == 0 and info[0]["env_id"] == 2


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_ragged_observations_become_object_arrays(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [partial(RaggedEnv, dim) for dim in (1, 2, 3)])
    obs, _ = venv.reset(seed=1)
    assert obs.dtype == object and obs.shape == (3,)
    assert [o.shape for o in obs] == [(1,), (2,), (3,)]
    obs, *_ = venv.step([1, 1, 1])
    assert obs.dtype == object and [o.shape for o in obs] == [(1,), (2,), (3,)]
    assert all(np.all(o >= 1) for o in obs)


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_dict_observations_are_object_arrays_of_dicts(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [DictObsEnv, DictObsEnv])
    obs, _ = venv.reset(seed=0)
    assert obs.dtype == object and obs.shape == (2,)
    assert set(obs[0]) == {"index", "nested"}
    assert isinstance(obs[1]["nested"]["pair"], tuple)
    obs, *_ = venv.step([1, 0])
    np.testing.assert_array_equal([o["index"][0] for o in obs], [1.0, 0.0])


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_tuple_observations_are_rejected(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [TupleObsEnv])
    with pytest.raises(TypeError, match="Tuple observation"):
        venv.reset()


def test_seed_gives_each_env_seed_plus_index(make_venv: MakeVenv) -> None:
    venv = make_venv(SubprocVectorEnv, [CountEnv, CountEnv])
    venv.seed(10)
    obs, _ = venv.reset()
    for i in range(2):
        env = CountEnv()
        env.reset(seed=10 + i)  # what seed() does, so the next reset continues that stream
        expected, _ = env.reset()
        np.testing.assert_array_equal(obs[i], expected)
    # the action-space samplers were seeded the same way
    samples = [space.sample() for space in venv.action_space]
    for i, sample in enumerate(samples):
        space = CountEnv().action_space
        space.seed(10 + i)
        assert sample == space.sample()
    with pytest.raises(ValueError, match="3 seeds for 2"):
        venv.seed([1, 2, 3])


def test_reset_seed_keyword_is_passed_to_every_env(make_venv: MakeVenv) -> None:
    venv = make_venv(DummyVectorEnv, [CountEnv, CountEnv])
    obs, _ = venv.reset(seed=4)
    np.testing.assert_array_equal(obs[0], obs[1])
    obs_again, _ = venv.reset(seed=4)
    np.testing.assert_array_equal(obs, obs_again)


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_env_attributes_and_render(make_venv: MakeVenv, cls: type) -> None:
    env_fns = [lambda: gym.wrappers.TimeLimit(CountEnv(size=4), 50), partial(CountEnv, size=5)]
    venv = make_venv(cls, env_fns)
    assert len(venv) == venv.env_num == 2
    assert venv.get_env_attr("size") == [4, 5]  # found through the TimeLimit wrapper
    assert venv.action_space == [gym.spaces.Discrete(2)] * 2
    assert [space.shape for space in venv.observation_space] == [(2,), (2,)]
    assert venv.metadata[0]["render_modes"] == ["rgb_array"]
    venv.set_env_attr("size", 1, id=0)
    assert venv.get_env_attr("size", id=[0, 1]) == [1, 5]
    venv.reset()
    _, _, terminated, _, _ = venv.step([1, 1])
    np.testing.assert_array_equal(terminated, [True, False])
    frames = venv.render()
    assert [frame[0, 0, 0] for frame in frames] == [1, 1]
    with pytest.raises(AttributeError):
        venv.get_env_attr("no_such_attribute")


def test_spec_of_registered_envs(make_venv: MakeVenv) -> None:
    venv = make_venv(SubprocVectorEnv, [lambda: gym.make("CartPole-v1")] * 2)
    assert [spec.id for spec in venv.spec] == ["CartPole-v1", "CartPole-v1"]


def test_constructor_validation() -> None:
    with pytest.raises(TypeError, match="not a callable"):
        DummyVectorEnv([CountEnv()])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="wait_num"):
        DummyVectorEnv([CountEnv], wait_num=2)
    with pytest.raises(ValueError, match="timeout"):
        DummyVectorEnv([CountEnv], timeout=0)
    with pytest.raises(ValueError, match="empty"):
        DummyVectorEnv([])
    with pytest.raises(ValueError, match="context"):
        SubprocVectorEnv([CountEnv], context="thread")


def test_ray_vector_env_without_ray_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # makes ``import ray`` fail
    with pytest.raises(ImportError, match=r"pip install -c constraints.txt -e '\.\[ray\]'"):
        RayVectorEnv([CountEnv])


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_wrong_number_of_actions(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, CountEnv])
    venv.reset()
    with pytest.raises(ValueError, match="1 actions for the 2 environments"):
        venv.step([1])
    with pytest.raises(ValueError, match="0 actions for the 0 environments"):
        venv.step([], id=[])
    with pytest.raises(ValueError, match="env_id is empty"):
        venv.reset(env_id=[])
    obs, *_ = venv.step([1, 1])  # the failed call left the envs usable
    assert obs.shape == (2, 2)


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_close_is_idempotent_and_later_calls_raise(cls: type) -> None:
    venv = cls([CountEnv, CountEnv])
    venv.reset()
    venv.close()
    venv.close()
    for call in (
        venv.reset,
        lambda: venv.step([0, 0]),
        lambda: venv.seed(0),
        venv.render,
        lambda: venv.action_space,
    ):
        with pytest.raises(EnvStateError, match="after close"):
            call()
    with pytest.raises(AssertionError):  # what code written against assertions expects
        venv.reset()


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_close_leaves_no_child_processes(cls: type) -> None:
    before = child_pids()
    venv = cls([CountEnv] * 3)
    worker_pids = {worker.process.pid for worker in venv.workers}  # type: ignore[attr-defined]
    assert worker_pids <= child_pids()
    venv.reset()
    venv.step([1, 1, 1])
    venv.close()
    assert not worker_pids & child_pids()
    assert child_pids() <= before
    assert not multiprocessing.active_children()


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_env_exception_names_env_and_carries_traceback(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, FailingEnv, CountEnv])
    venv.reset()
    venv.step([1, 1, 1])
    start = time.monotonic()
    with pytest.raises(EnvWorkerError) as excinfo:
        venv.step([1, FailingEnv.POISON, 1])
    assert time.monotonic() - start < 5
    message = str(excinfo.value)
    assert excinfo.value.env_id == 1
    assert "environment 1" in message
    assert "ValueError: toy env exploded on step 2" in message
    assert "explode_with_a_recognisable_frame" in message  # the worker's traceback
    # the results of envs 0 and 2 were lost with the call: stepping them again would make the
    # caller pair their old observations with new ones, so they must be reset first
    with pytest.raises(EnvStateError, match=r"environments \[0, 1, 2\] must be reset"):
        venv.step([1, 1, 1])
    obs, _ = venv.reset()
    np.testing.assert_array_equal(obs[:, 0], [0, 0, 0])
    obs, *_ = venv.step([1, 1, 1])  # the replies still in flight were discarded, not returned
    np.testing.assert_array_equal(obs[:, 0], [1, 1, 1])


def test_dummy_env_exception_keeps_its_type_and_names_env(make_venv: MakeVenv) -> None:
    venv = make_venv(DummyVectorEnv, [CountEnv, FailingEnv])
    venv.reset()
    with pytest.raises(ValueError, match="exploded") as excinfo:
        venv.step([1, FailingEnv.POISON])
    assert "raised by environment 1" in " ".join(excinfo.value.__notes__)


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_env_that_cannot_be_built_reports_on_first_use(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, unbuildable_env])
    with pytest.raises(EnvWorkerError, match="environment 1") as excinfo:
        venv.reset()
    assert "RuntimeError: cannot build this toy env" in str(excinfo.value)
    assert "unbuildable_env" in str(excinfo.value)


def test_unpicklable_step_result_is_reported(make_venv: MakeVenv) -> None:
    venv = make_venv(SubprocVectorEnv, [UnpicklableInfoEnv])
    venv.reset()
    with pytest.raises(EnvWorkerError, match="environment 0"):
        venv.step([1])
    venv.reset()  # the worker survived


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_killed_worker_is_detected(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, CountEnv])
    venv.reset()
    victim = venv.workers[1].process  # type: ignore[attr-defined]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(5)
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match="environment 1") as excinfo:
        venv.step([1, 1])
    assert time.monotonic() - start < 5
    assert "SIGKILL" in str(excinfo.value)
    with pytest.raises(EnvWorkerError, match="environment 1"):
        venv.reset()


def test_killed_worker_is_detected_while_waiting_async(make_venv: MakeVenv) -> None:
    venv = make_venv(SubprocVectorEnv, [CountEnv, partial(CountEnv, sleep=30.0)], wait_num=1)
    venv.reset()
    venv.step([1, 1])  # env 0 returns, env 1 sleeps
    assert venv.waiting_id == [1]
    os.kill(venv.workers[1].process.pid, signal.SIGKILL)  # type: ignore[attr-defined]
    start = time.monotonic()
    with pytest.raises(EnvWorkerError, match=r"environment 1.*SIGKILL"):
        venv.step(None)
    assert time.monotonic() - start < 5


def test_spawn_context(make_venv: MakeVenv) -> None:
    venv = make_venv(ShmemVectorEnv, [partial(CountEnv, size=2), DictObsEnv], context="spawn")
    reference = make_venv(DummyVectorEnv, [partial(CountEnv, size=2), DictObsEnv])
    assert_same_structure(rollout(venv, [1, 1, 0]), rollout(reference, [1, 1, 0]))


@pytest.mark.parametrize("cls", VENV_CLASSES)
def test_async_returns_fast_envs_first(make_venv: MakeVenv, cls: type) -> None:
    sleeps = [0.0, 0.4, 0.0]
    venv = make_venv(cls, [partial(CountEnv, size=50, sleep=s) for s in sleeps], wait_num=2)
    assert venv.is_async
    venv.reset()
    *_, info = venv.step([1, 1, 1])
    if cls is DummyVectorEnv:  # in-process steps are always all done
        assert sorted(i["env_id"] for i in info) == [0, 1, 2]
        return
    assert sorted(i["env_id"] for i in info) == [0, 2]
    assert venv.waiting_id == [1] and sorted(venv.ready_id) == [0, 2]
    with pytest.raises(EnvStateError, match="environment 1, which is still stepping"):
        venv.step([1], id=[1])
    with pytest.raises(EnvStateError, match="still stepping"):
        venv.render()
    with pytest.raises(EnvStateError):
        venv.get_env_attr("size", id=1)
    obs, *_, info = venv.step([1, 1], id=[0, 2])  # env 1 still not among the first two
    assert sorted(i["env_id"] for i in info) == [0, 2]
    np.testing.assert_array_equal(obs[:, 0], [2, 2])
    *_, info = venv.step(None)  # only env 1 is left stepping
    assert [i["env_id"] for i in info] == [1]
    assert sorted(venv.ready_id) == [0, 1, 2] and venv.waiting_id == []
    with pytest.raises(EnvStateError, match="no environment is stepping"):
        venv.step(None)


WAIT_SCENARIO_SLEEPS = (0.4, 0.6, 1.0, 1.4)
"""Seconds per step of the four envs of :func:`check_async_step_returns_every_env_done`."""


def check_async_step_returns_every_env_done(venv: BaseVectorEnv) -> None:
    """Envs sleeping 0.4/0.6/1.0/1.4 s per step, ``wait_num=3, timeout=0.7``; each call steps
    the envs the previous one returned.

    The first call gets envs 0 and 1 once the timeout passes (not before: that is fewer than
    ``wait_num``). The second, started 0.7 s in, gets envs 0 and 1 again and env 2, which
    finished 0.3 s into it, as soon as these three are done (0.6 s in), before env 3 is.
    """
    venv.reset()
    start = time.monotonic()
    obs, *_, info = venv.step([1, 1, 1, 1])
    took = time.monotonic() - start
    assert sorted(i["env_id"] for i in info) == [0, 1]
    assert sorted(venv.waiting_id) == [2, 3]
    assert 0.7 <= took < 1.5
    start = time.monotonic()
    obs, *_, info = venv.step([1, 1], id=[0, 1])
    took = time.monotonic() - start
    index_of = {i["env_id"]: o[0] for i, o in zip(info, obs, strict=True)}
    assert index_of == {0: 2, 1: 2, 2: 1}  # env 2 is handed over as soon as it is done
    assert venv.waiting_id == [3]
    assert 0.6 <= took < 1.2


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_async_step_returns_every_env_done(make_venv: MakeVenv, cls: type) -> None:
    env_fns = [partial(CountEnv, size=50, sleep=s) for s in WAIT_SCENARIO_SLEEPS]
    check_async_step_returns_every_env_done(make_venv(cls, env_fns, wait_num=3, timeout=0.7))


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_async_timeout_returns_whatever_is_ready(make_venv: MakeVenv, cls: type) -> None:
    venv = make_venv(cls, [CountEnv, partial(CountEnv, sleep=0.5)], timeout=0.1)
    venv.reset()
    start = time.monotonic()
    *_, info = venv.step([1, 1])
    assert time.monotonic() - start < 0.45
    assert [i["env_id"] for i in info] == [0]
    *_, info = venv.step(None)
    assert [i["env_id"] for i in info] == [1]


@pytest.mark.parametrize("cls", PROCESS_CLASSES)
def test_async_stepping_overlaps_slow_envs(make_venv: MakeVenv, cls: type) -> None:
    """Envs of different speeds: stepping whoever is ready beats waiting for the slowest."""
    sleeps = [0.01, 0.02, 0.04, 0.08]
    env_fns = [partial(CountEnv, size=1000, sleep=s) for s in sleeps]
    venv = make_venv(cls, env_fns, wait_num=1)
    venv.reset()
    steps = np.zeros(4, dtype=int)
    ids: list[int] = [0, 1, 2, 3]
    start = time.monotonic()
    while time.monotonic() - start < 0.8:
        *_, info = venv.step([1] * len(ids), id=ids)
        ids = [i["env_id"] for i in info]
        steps[ids] += 1
    # a synchronous loop would step every env once per 0.08 s, about 10 times
    assert steps[0] > 2 * steps[3] and steps[0] >= 25
