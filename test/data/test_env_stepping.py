"""Which envs a collect step acts for and waits for (tianshou/data/_env_stepping.py): lockstep
stepping of the active envs, retiring surplus envs, and ready-first stepping that remembers the
action sent to each env until the env returns."""

from typing import cast

import numpy as np

from tianshou.data._env_stepping import (
    EnvCursor,
    LockstepStepping,
    ReadyEnvs,
    ReadyFirstStepping,
    StepActions,
    with_rows,
)
from tianshou.env.venvs import BaseVectorEnv


class ScriptedVectorEnv:
    """A stand-in vector env of ``env_num`` envs whose steps return the envs listed in
    ``returns`` (one list per step), each with observation ``10 * env_id + step index``."""

    def __init__(self, env_num: int, returns: list[list[int]]) -> None:
        self.env_num = env_num
        self.returns = returns
        self.sent: list[tuple[np.ndarray, np.ndarray | None]] = []

    def __len__(self) -> int:
        return self.env_num

    def step(
        self, action: np.ndarray, env_id: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        self.sent.append((action, env_id))
        t = len(self.sent)
        ids = np.arange(self.env_num) if env_id is None else env_id
        if self.returns:
            ids = np.array(self.returns[t - 1])
        n = len(ids)
        obs = (10 * ids + t).astype(float).reshape(n, 1)
        info = np.array([{"env_id": int(i)} for i in ids])
        return obs, np.zeros(n), np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), info


def as_venv(env: ScriptedVectorEnv) -> BaseVectorEnv:
    return cast(BaseVectorEnv, env)


def start_rows(env_num: int) -> EnvCursor:
    info = np.array([{"env_id": i} for i in range(env_num)])
    return EnvCursor(np.arange(env_num, dtype=float).reshape(env_num, 1), info, None)


def actions_for(ready: ReadyEnvs) -> StepActions:
    act = 100 + ready.env_ids
    return StepActions(act, act, None, None, None)


def test_lockstep_acts_for_the_first_envs_with_n_episode_and_puts_their_rows_back() -> None:
    env = ScriptedVectorEnv(4, [])
    stepping = LockstepStepping(as_venv(env), n_episode=2)
    ready = stepping.begin(start_rows(4))
    np.testing.assert_array_equal(ready.env_ids, [0, 1])
    transitions, returned_actions = stepping.step(ready, actions_for(ready))
    np.testing.assert_array_equal(env.sent[0][1], [0, 1])  # only the active envs step
    np.testing.assert_array_equal(transitions.obs[:, 0], [0, 1])
    np.testing.assert_array_equal(transitions.obs_next[:, 0], [1, 11])
    np.testing.assert_array_equal(transitions.act, [100, 101])
    ready = stepping.ready_after(transitions, returned_actions)
    cursor = stepping.end(ready)
    np.testing.assert_array_equal(cursor.obs[:, 0], [1, 11, 2, 3])


def test_lockstep_steps_every_env_without_ids_and_retires_only_finished_envs() -> None:
    env = ScriptedVectorEnv(3, [])
    stepping = LockstepStepping(as_venv(env), n_episode=None)
    ready = stepping.begin(start_rows(3))
    stepping.step(ready, actions_for(ready))
    assert env.sent[0][1] is None  # every env: the vector env's fast path
    finished = np.array([0, 2])
    kept = stepping.retire(ready, finished, remaining=2)
    np.testing.assert_array_equal(kept.env_ids, [1, 2])  # one finished env retired
    np.testing.assert_array_equal(kept.obs[:, 0], [1, 2])
    assert stepping.retire(ready, finished, remaining=3) is ready


def test_ready_first_stores_each_env_with_the_observation_and_action_it_was_sent() -> None:
    env = ScriptedVectorEnv(3, [[1], [0, 2]])
    stepping = ReadyFirstStepping(as_venv(env))
    ready = stepping.begin(start_rows(3))
    np.testing.assert_array_equal(ready.env_ids, [0, 1, 2])
    transitions, returned_actions = stepping.step(ready, actions_for(ready))
    np.testing.assert_array_equal(transitions.env_ids, [1])
    np.testing.assert_array_equal(transitions.obs[:, 0], [1])
    np.testing.assert_array_equal(transitions.act, [101])
    assert returned_actions.act_env is None  # sent earlier, not recorded per env
    ready = stepping.ready_after(transitions, returned_actions)
    np.testing.assert_array_equal(ready.obs[:, 0], [11])
    transitions, _ = stepping.step(ready, StepActions(np.array([7]), None, None, None, None))
    # envs 0 and 2 were sent their actions in the first step and return now
    np.testing.assert_array_equal(transitions.env_ids, [0, 2])
    np.testing.assert_array_equal(transitions.obs[:, 0], [0, 2])
    np.testing.assert_array_equal(transitions.act, [100, 102])
    np.testing.assert_array_equal(stepping.ready_ids, [0, 2])
    cursor = stepping.end(stepping.ready_after(transitions, returned_actions))
    # env 1 is still stepping: the cursor keeps the observation it was sent
    np.testing.assert_array_equal(cursor.obs[:, 0], [2, 11, 22])


def test_with_rows_keeps_the_base_state_unless_rows_bring_one() -> None:
    base = EnvCursor(np.zeros((3, 1)), np.zeros(3), np.zeros((3, 2)))
    rows = ReadyEnvs(np.array([1]), np.ones((1, 1)), np.ones(1), None)
    merged = with_rows(base, rows, 3)
    np.testing.assert_array_equal(merged.obs[:, 0], [0, 1, 0])
    assert merged.state is base.state
    with_state = with_rows(base, rows._replace(state=np.ones((1, 2))), 3)
    assert with_state.state is not None
    np.testing.assert_array_equal(np.asarray(with_state.state)[:, 0], [0, 1, 0])
    assert not base.state.any()  # the base rows are left untouched
