"""Several agents of a turn-based (PettingZoo AEC) game, each with its own policy and algorithm.

:class:`~tianshou.env.PettingZooEnv` tells in every observation which agent is to act
(``obs.agent_id``); a :class:`MultiAgentPolicy` hands each row of a batch to that agent's policy,
and :class:`MultiAgentOffPolicyAlgorithm` / :class:`MultiAgentOnPolicyAlgorithm` hand each
agent the transitions it made, with its own column of the reward vector, to learn from. An agent
that should not learn (a fixed or random opponent) is simply an algorithm whose update does
nothing, e.g. :class:`~tianshou.algorithm.random.MARLRandomDiscreteMaskedOffPolicyAlgorithm`.

A transition stored for an agent leads to the observation of whoever moves next (in a
two-player game, the opponent), and its reward is the agent's latest reward at that point: the
data layout of the published turn-based API, which these classes keep.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

import numpy as np
from torch import nn

from tianshou.algorithm.algorithm_base import (
    Algorithm,
    OffPolicyAlgorithm,
    OnPolicyAlgorithm,
    Policy,
    PolicyState,
    TrainingStats,
)
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.types import RolloutBatchProtocol
from tianshou.data.utils.converter import to_numpy

if TYPE_CHECKING:
    # importing it imports pettingzoo, which importing tianshou.algorithm must not
    from tianshou.env.pettingzoo_env import PettingZooEnv

AgentId = str | int
TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)


class MAPRolloutBatchProtocol(RolloutBatchProtocol, Protocol):
    """Transitions of a multi-agent game, keyed by agent id after dispatching: each agent's
    entry (``batch[agent_id]``) holds the rows that agent made, preprocessed by its own
    algorithm."""


@dataclass(kw_only=True, init=False)
class MapTrainingStats(TrainingStats):
    """The training stats of every learning agent of one multi-agent update.

    :param agent_id_to_stats: each agent's stats (agents without data in the update are absent).
    :param train_time_aggregator: how the agents' update times combine into ``train_time``.
    """

    agent_id_to_stats: dict[AgentId, TrainingStats] = field(default_factory=dict)

    def __init__(
        self,
        agent_id_to_stats: dict[AgentId, TrainingStats],
        train_time_aggregator: Literal["min", "max", "mean"] = "max",
    ) -> None:
        aggregators: dict[str, Callable[[list[float]], float]] = {
            "min": min,
            "max": max,
            "mean": lambda times: sum(times) / len(times),
        }
        if train_time_aggregator not in aggregators:
            raise ValueError(
                f"train_time_aggregator must be one of {sorted(aggregators)}, "
                f"got {train_time_aggregator!r}"
            )
        self.agent_id_to_stats = agent_id_to_stats
        times = [stats.train_time for stats in agent_id_to_stats.values()]
        self.train_time = aggregators[train_time_aggregator](times) if times else 0.0
        self.smoothed_loss = {}

    def get_loss_stats_dict(self) -> dict[str, float]:
        """Every agent's losses, named ``"<agent_id>/<loss>"``."""
        return {
            f"{agent_id}/{name}": value
            for agent_id, stats in self.agent_id_to_stats.items()
            for name, value in stats.get_loss_stats_dict().items()
        }


class MultiAgentPolicy(Policy):
    """Acts for whichever agent each observation belongs to, with that agent's policy.

    Observations are those of :class:`~tianshou.env.PettingZooEnv`: Batches with ``agent_id``,
    ``obs`` and, for discrete actions, ``mask``. Each agent's policy receives the rows of its
    agent; where there is a legal-action mask the policy gets the whole observation Batch (a
    mask-aware policy such as DQN's reads ``obs.obs`` and ``obs.mask``), otherwise just
    ``obs.obs``. Whether the policy acts within a training step is passed on to every agent's
    policy.

    :param policies: each agent's policy, keyed by agent id; they share one action space.
    """

    def __init__(self, policies: dict[AgentId, Policy]) -> None:
        if not policies:
            raise ValueError("MultiAgentPolicy needs at least one agent's policy")
        first = next(iter(policies.values()))
        super().__init__(
            action_space=first.action_space,
            observation_space=first.observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.policies: dict[AgentId, Policy] = dict(policies)
        self._policy_modules = nn.ModuleDict({str(k): p for k, p in self.policies.items()})
        for agent_id, policy in self.policies.items():
            policy.set_agent_id(agent_id)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "is_within_training_step" and "policies" in self.__dict__:
            for policy in self.policies.values():
                policy.is_within_training_step = value

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Each agent's actions for its rows of ``batch``.

        :param batch: observations of several agents (``batch.obs.agent_id`` says whose).
        :param state: the agents' hidden states, keyed by agent id (None: stateless).
        :return: a Batch with ``act`` (one action per row, in the rows' order), ``state`` (each
            acting agent's next hidden state, keyed by agent id) and ``out`` (each acting
            agent's whole policy output).
        """
        acts: list[tuple[np.ndarray, np.ndarray]] = []
        states: dict[str, Any] = {}
        outs: dict[str, Batch] = {}
        for agent_id, rows, agent_batch in self._split(batch):
            agent_state = None if state is None else _get(state, agent_id)
            out = self.policies[agent_id](agent_batch, state=agent_state, **kwargs)
            acts.append((rows, to_numpy(out.act)))
            outs[str(agent_id)] = out
            if out.get("state") is not None:
                states[str(agent_id)] = out.state
        return Batch(act=_merge_rows(acts, len(batch)), state=states or None, out=outs)

    def add_exploration_noise(self, act: np.ndarray | Batch, batch: Batch) -> np.ndarray | Batch:
        """Each agent's policy adds its own exploration noise to the actions of its rows."""
        if not isinstance(act, np.ndarray):
            return act
        noisy = act.copy()
        for agent_id, rows, agent_batch in self._split(batch):
            noisy[rows] = self.policies[agent_id].add_exploration_noise(act[rows], agent_batch)
        return noisy

    def _split(self, batch: Batch) -> Iterator[tuple[AgentId, np.ndarray, Batch]]:
        """``(agent_id, rows, the agent's view of those rows)`` for every agent with rows."""
        agent_of_row = np.asarray(batch.obs.agent_id)
        for agent_id in self.policies:
            rows = np.flatnonzero(agent_of_row == agent_id)
            if len(rows):
                yield agent_id, rows, _agent_view(batch[rows])


class MARLDispatcher(Generic[TAlgorithm]):
    """Routes the work of a multi-agent algorithm to the agents' own algorithms.

    :param algorithms: one algorithm per agent, in the order of ``env.agents``.
    :param env: the PettingZoo environment (one instance, for its agent ids and their order).
    """

    def __init__(self, algorithms: list[TAlgorithm], env: "PettingZooEnv") -> None:
        agents = list(env.agents)
        if len(algorithms) != len(agents):
            raise ValueError(
                f"got {len(algorithms)} algorithms for the {len(agents)} agents {agents}; "
                "give one algorithm per agent, in the order of env.agents"
            )
        self.algorithms: dict[AgentId, TAlgorithm] = dict(zip(agents, algorithms, strict=True))
        self.agent_idx: dict[AgentId, int] = dict(env.agent_idx)

    def create_policy(self) -> MultiAgentPolicy:
        """The policy acting for all agents, made of the agents' algorithms' policies."""
        return MultiAgentPolicy({k: a.policy for k, a in self.algorithms.items()})

    def dispatch_process_fn(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Preprocess each agent's rows of ``batch`` with its own algorithm.

        Each agent sees its own column of the reward vector, in the batch and (for n-step or
        episodic returns computed from the buffer) in the buffer, which gets its full rewards
        back afterwards.

        :return: a Batch with one entry per agent id (empty for agents without rows).
        """
        agent_of_row = np.asarray(batch.obs.agent_id)
        per_agent: dict[str, Batch] = {}
        for agent_id, algorithm in self.algorithms.items():
            rows = np.flatnonzero(agent_of_row == agent_id)
            if not len(rows):
                per_agent[str(agent_id)] = Batch()
                continue
            agent_batch = _agent_view(batch[rows])
            column = self.agent_idx[agent_id]
            if np.ndim(agent_batch.rew) == 2:
                agent_batch.rew = agent_batch.rew[:, column]
            with _agent_rewards(buffer, column):
                per_agent[str(agent_id)] = algorithm._preprocess_batch(
                    agent_batch, buffer, indices[rows]
                )
        return Batch(per_agent)

    def dispatch_update_with_batch(
        self,
        batch: Batch,
        algorithm_update_with_batch_fn: Callable[[TAlgorithm, Batch], TrainingStats],
    ) -> MapTrainingStats:
        """Update every agent that has rows in the dispatched ``batch``.

        :param batch: the output of :meth:`dispatch_process_fn`.
        :param algorithm_update_with_batch_fn: ``(algorithm, its batch) -> stats``, one agent's
            update.
        """
        stats: dict[AgentId, TrainingStats] = {}
        for agent_id, algorithm in self.algorithms.items():
            agent_batch = batch.__dict__.get(str(agent_id))
            if agent_batch is None or agent_batch.is_empty():
                continue
            stats[agent_id] = algorithm_update_with_batch_fn(algorithm, agent_batch)
        return MapTrainingStats(stats)


class MultiAgentOffPolicyAlgorithm(OffPolicyAlgorithm[MultiAgentPolicy]):
    """Trains each agent of a turn-based game with its own off-policy algorithm.

    :param algorithms: one off-policy algorithm per agent, in the order of ``env.agents``.
    :param env: the PettingZoo environment (for its agent ids).
    """

    def __init__(self, *, algorithms: list[OffPolicyAlgorithm], env: "PettingZooEnv") -> None:
        self._dispatcher = MARLDispatcher[OffPolicyAlgorithm](algorithms, env)
        super().__init__(policy=self._dispatcher.create_policy())
        self.algorithms = self._dispatcher.algorithms
        self._algorithm_modules = nn.ModuleDict({str(k): a for k, a in self.algorithms.items()})

    def get_algorithm(self, agent_id: AgentId) -> OffPolicyAlgorithm:
        """The algorithm training the agent ``agent_id``."""
        return self.algorithms[agent_id]

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        return self._dispatcher.dispatch_process_fn(batch, buffer, indices)

    def _update_with_batch(self, batch: Batch) -> MapTrainingStats:
        return self._dispatcher.dispatch_update_with_batch(
            batch, lambda algorithm, agent_batch: algorithm._update_with_batch(agent_batch)
        )


class MultiAgentOnPolicyAlgorithm(OnPolicyAlgorithm[MultiAgentPolicy]):
    """Trains each agent of a turn-based game with its own on-policy algorithm.

    :param algorithms: one on-policy algorithm per agent, in the order of ``env.agents``.
    :param env: the PettingZoo environment (for its agent ids).
    """

    def __init__(self, *, algorithms: list[OnPolicyAlgorithm], env: "PettingZooEnv") -> None:
        self._dispatcher = MARLDispatcher[OnPolicyAlgorithm](algorithms, env)
        super().__init__(policy=self._dispatcher.create_policy())
        self.algorithms = self._dispatcher.algorithms
        self._algorithm_modules = nn.ModuleDict({str(k): a for k, a in self.algorithms.items()})

    def get_algorithm(self, agent_id: AgentId) -> OnPolicyAlgorithm:
        """The algorithm training the agent ``agent_id``."""
        return self.algorithms[agent_id]

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        return self._dispatcher.dispatch_process_fn(batch, buffer, indices)

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> MapTrainingStats:
        return self._dispatcher.dispatch_update_with_batch(
            batch,
            lambda algorithm, agent_batch: algorithm._update_with_batch(
                agent_batch, batch_size=batch_size, repeat=repeat
            ),
        )


def _agent_view(batch: Batch) -> Batch:
    """What one agent's policy and algorithm see of its rows: without a legal-action mask, the
    observations are the bare ``obs`` arrays (with one, the whole Batch stays for mask-aware
    policies)."""
    for key in ("obs", "obs_next"):
        value = batch.__dict__.get(key)
        if isinstance(value, Batch) and "mask" not in value.__dict__ and "obs" in value.__dict__:
            batch.__dict__[key] = value.obs
    return batch


@contextmanager
def _agent_rewards(buffer: ReplayBuffer, column: int) -> Iterator[None]:
    """Let ``buffer.rew`` read as one agent's rewards while the block runs."""
    storage = buffer._meta.__dict__
    full = storage.get("rew")
    if full is None or np.ndim(full) != 2:
        yield
        return
    storage["rew"] = np.ascontiguousarray(full[:, column])
    try:
        yield
    finally:
        storage["rew"] = full


def _get(state: Any, agent_id: AgentId) -> Any:
    """One agent's entry of a per-agent state (a dict or a Batch keyed by agent id)."""
    if isinstance(state, Batch):
        return state.__dict__.get(str(agent_id))
    return state.get(agent_id, state.get(str(agent_id)))


def _merge_rows(parts: list[tuple[np.ndarray, np.ndarray]], size: int) -> np.ndarray:
    """Scatter each agent's actions back to the rows they belong to."""
    if not parts:
        return np.zeros(size, dtype=np.int64)
    first = parts[0][1]
    merged = np.zeros((size, *first.shape[1:]), dtype=np.result_type(*(p[1] for p in parts)))
    for rows, values in parts:
        merged[rows] = values
    return merged
