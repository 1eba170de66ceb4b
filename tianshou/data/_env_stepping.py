"""Which envs one collect step acts for and waits for: the one difference between the collectors.

The collect loop (:class:`~tianshou.data._collect_run.CollectRun`) acts for the envs that are
*ready*, sends them their actions and stores the transitions of the envs that *returned*. An
:class:`EnvStepping` decides what ready and returned mean:

* :class:`LockstepStepping` (``Collector``): every active env is ready at every step and every
  one returns; with ``n_episode``, envs beyond those needed are retired (no bias towards short
  episodes).
* :class:`ReadyFirstStepping` (``AsyncCollector``): the vector env returns whichever envs finish
  first (``wait_num``/``timeout``); those are ready next, while the others keep stepping, across
  ``collect`` calls. It remembers the action sent to each env until the env returns.

The named values passed between the loop and the stepping are defined here as well:
:class:`EnvCursor` (where every env stands between calls), :class:`ReadyEnvs` (the envs to act
for next) and :class:`StepActions` (what acting produced).
"""

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from torch.distributions import Distribution

from tianshou.data._rollout import (
    ActRow,
    ActRows,
    EnvActRows,
    HiddenState,
    InfoRows,
    ObsRows,
    Transitions,
    as_obs,
    env_ids_of,
    put_rows,
    replace_rows,
    stack_rows,
    take_rows,
    take_state_rows,
)
from tianshou.data.batch import Batch

if TYPE_CHECKING:
    from tianshou.env.venvs import BaseVectorEnv


class EnvCursor(NamedTuple):
    """Where collection stands, one row per env: the observation to act on next, its info and
    the policy's hidden state."""

    obs: ObsRows
    info: InfoRows
    state: HiddenState


class ReadyEnvs(NamedTuple):
    """The envs to act for next, with their rows."""

    env_ids: np.ndarray
    obs: ObsRows
    info: InfoRows
    state: HiddenState


class StepActions(NamedTuple):
    """What acting produced for the rows of one vector step."""

    act: ActRows
    """Raw actions, as stored in the buffer."""
    act_env: EnvActRows | None
    """Actions sent to the envs (``Policy.map_action`` of ``act``); None for the actions of
    envs that returned later than they were sent (asynchronous collection)."""
    policy_entry: Batch | None
    """The policy's ``policy`` sub-batch (with ``hidden_state``), None when empty."""
    state: HiddenState
    """A recurrent policy's hidden state after acting (None otherwise)."""
    dist: Distribution | None
    """The action distribution, for the statistics and step hooks."""


class EnvStepping(ABC):
    """Which envs a collect step acts for and waits for (see the module docstring).

    :param env: the vector env.
    """

    def __init__(self, env: "BaseVectorEnv") -> None:
        self.env = env
        self.env_num = len(env)
        self.step_envs = env.step
        """``env.step``: it takes the actions as ``Policy.map_action`` made them (an array, or
        a Batch for structured actions, which vector envs pass on row by row)."""

    @abstractmethod
    def begin(self, start: EnvCursor) -> ReadyEnvs:
        """The envs to act for first in a call that starts at ``start``."""

    @abstractmethod
    def step(self, ready: ReadyEnvs, actions: StepActions) -> tuple[Transitions, StepActions]:
        """Send ``actions`` to the ``ready`` envs and wait; return the transitions of the envs
        that returned, and the actions of those rows."""

    @abstractmethod
    def ready_after(self, transitions: Transitions, actions: StepActions) -> ReadyEnvs:
        """The envs to act for after the step that returned ``transitions``, acted on with
        ``actions`` (finished envs not reset yet)."""

    def retire(self, ready: ReadyEnvs, finished: np.ndarray, remaining: int) -> ReadyEnvs:
        """The envs to keep acting for when ``remaining`` episodes are still to be collected
        and the rows ``finished`` of ``ready`` just finished one; all of them by default."""
        return ready

    @abstractmethod
    def end(self, ready: ReadyEnvs) -> EnvCursor:
        """Where every env stands when the call ends with ``ready`` to act for next."""


class LockstepStepping(EnvStepping):
    """All active envs step together and each step waits for every one of them.

    :param env: the vector env.
    :param n_episode: the episodes to collect (None: collect steps); only
        ``min(env_num, n_episode)`` envs start.
    """

    def __init__(self, env: "BaseVectorEnv", n_episode: int | None) -> None:
        super().__init__(env)
        self.active = np.arange(self.env_num if n_episode is None else min(self.env_num, n_episode))
        self.start = EnvCursor(np.empty(0), np.empty(0), None)
        """Every env's rows when the call began (set by :meth:`begin`)."""

    def begin(self, start: EnvCursor) -> ReadyEnvs:
        self.start = start
        active = self.active
        if len(active) == self.env_num:
            return ReadyEnvs(active, start.obs, start.info, start.state)
        return ReadyEnvs(
            active,
            take_rows(start.obs, active),
            take_rows(start.info, active),
            take_state_rows(start.state, active),
        )

    def step(self, ready: ReadyEnvs, actions: StepActions) -> tuple[Transitions, StepActions]:
        ids = ready.env_ids
        step_ids = None if len(ids) == self.env_num else ids
        obs_next, rew, term, trunc, info = self.step_envs(actions.act_env, step_ids)
        entry = actions.policy_entry
        transitions = Transitions(
            ready.obs, actions.act, as_obs(obs_next), rew, term, trunc, info, entry, ids
        )
        return transitions, actions

    def ready_after(self, transitions: Transitions, actions: StepActions) -> ReadyEnvs:
        return ReadyEnvs(transitions.env_ids, transitions.obs_next, transitions.info, actions.state)

    def retire(self, ready: ReadyEnvs, finished: np.ndarray, remaining: int) -> ReadyEnvs:
        """Retire the surplus envs when more envs run than episodes remain: the surplus is taken
        from the envs that just finished, so no running episode is cut short."""
        surplus = len(ready.env_ids) - remaining
        if surplus <= 0:
            return ready
        keep_mask = np.ones(len(ready.env_ids), dtype=bool)
        keep_mask[finished[:surplus]] = False
        keep = np.flatnonzero(keep_mask)
        return ReadyEnvs(
            ready.env_ids[keep],
            take_rows(ready.obs, keep),
            take_rows(ready.info, keep),
            take_state_rows(ready.state, keep),
        )

    def end(self, ready: ReadyEnvs) -> EnvCursor:
        return with_rows(self.start, ready, self.env_num)


class ReadyFirstStepping(EnvStepping):
    """Steps the envs of an asynchronous vector env that are ready and waits only for those that
    return first (the vector env's ``wait_num``/``timeout``); the others keep stepping.

    One object lasts across ``collect`` calls (until the collector is reset), since envs still
    stepping at the end of a call return in the next one: it remembers which envs are ready and
    the action (and policy entry) sent to each env until its transition returns.

    :param env: the asynchronous vector env.
    """

    def __init__(self, env: "BaseVectorEnv") -> None:
        super().__init__(env)
        self.ready_ids = np.arange(self.env_num)
        """The envs ready for an action."""
        self.sent_act: dict[int, ActRow] = {}
        """Per env stepping, the action it is stepping with (one row)."""
        self.sent_policy: dict[int, Batch] = {}
        """Per env stepping with an action that has a policy entry, that entry."""
        self.rows = EnvCursor(np.empty(0), np.empty(0), None)
        """Every env's rows: for a stepping env, what it was acted on (set by :meth:`begin`)."""

    def begin(self, start: EnvCursor) -> ReadyEnvs:
        self.rows = start
        ids = self.ready_ids
        return ReadyEnvs(
            ids,
            take_rows(start.obs, ids),
            take_rows(start.info, ids),
            take_state_rows(start.state, ids),
        )

    def step(self, ready: ReadyEnvs, actions: StepActions) -> tuple[Transitions, StepActions]:
        sent = ReadyEnvs(ready.env_ids, ready.obs, ready.info, actions.state)
        self.rows = with_rows(self.rows, sent, self.env_num)
        self._remember(ready.env_ids, actions)
        obs_next, rew, term, trunc, info = self.step_envs(actions.act_env, ready.env_ids)
        ids = self.ready_ids = env_ids_of(info)
        act = stack_rows([self.sent_act[i] for i in ids])
        # a policy gives a policy entry with all of its actions or with none
        has_entries = ids[0] in self.sent_policy
        entry = stack_rows([self.sent_policy[i] for i in ids]) if has_entries else None
        obs = take_rows(self.rows.obs, ids)
        transitions = Transitions(obs, act, as_obs(obs_next), rew, term, trunc, info, entry, ids)
        return transitions, StepActions(act, None, entry, None, None)

    def _remember(self, env_ids: np.ndarray, actions: StepActions) -> None:
        entry = actions.policy_entry
        for k, i in enumerate(env_ids.tolist()):
            self.sent_act[i] = actions.act[k]
            if entry is None:
                self.sent_policy.pop(i, None)
            else:
                self.sent_policy[i] = entry[k]

    def ready_after(self, transitions: Transitions, actions: StepActions) -> ReadyEnvs:
        ids = transitions.env_ids
        state = take_state_rows(self.rows.state, ids)
        return ReadyEnvs(ids, transitions.obs_next, transitions.info, state)

    def end(self, ready: ReadyEnvs) -> EnvCursor:
        return with_rows(self.rows, ready, self.env_num)


def with_rows(base: EnvCursor, rows: ReadyEnvs, env_num: int) -> EnvCursor:
    """``base`` (one row per env) with the rows of the envs ``rows.env_ids`` taken from
    ``rows``; ``rows.state`` None keeps ``base.state``."""
    env_ids = rows.env_ids
    every_env_in_order = len(env_ids) == env_num and np.array_equal(env_ids, np.arange(env_num))
    if rows.state is None:
        state = base.state
    elif every_env_in_order:
        state = rows.state
    else:
        state = put_rows(base.state, env_ids, rows.state, env_num)
    if every_env_in_order:
        return EnvCursor(rows.obs, rows.info, state)
    return EnvCursor(
        replace_rows(base.obs, env_ids, rows.obs),
        replace_rows(base.info, env_ids, rows.info),
        state,
    )
