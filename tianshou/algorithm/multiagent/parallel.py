"""Simultaneous-move multi-agent learning (PettingZoo's Parallel API): all agents act at once.

With :class:`~tianshou.env.PettingZooParallelEnv` every transition holds one row per agent
(observation, action, reward), so the agents' data stay aligned by construction. Agents are
trained by *groups*: give one on-policy algorithm per agent, and pass the same algorithm object
for several agents to make them share its parameters (a parameter-shared policy, which sees
each of its agents' rows as separate samples), or distinct objects for independent learners.

How this differs from the turn-based path (:mod:`tianshou.algorithm.multiagent.marl`): there
one agent acts per step and each row belongs to one agent, found through ``obs.agent_id``; here
every row belongs to every agent, and an agent's view of a row is its slice of it.
"""

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from tianshou.algorithm.algorithm_base import OnPolicyAlgorithm, Policy, PolicyState, TrainingStats
from tianshou.algorithm.multiagent.marl import AgentId, MapTrainingStats, _agent_rewards
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.utils.converter import to_numpy

if TYPE_CHECKING:
    from tianshou.env.pettingzoo_parallel_env import PettingZooParallelEnv


class _Groups:
    """Agents grouped by the object that serves them, in order of first appearance."""

    def __init__(self, agents: Sequence[str], members: Sequence[Any]) -> None:
        if len(members) != len(agents):
            raise ValueError(
                f"got {len(members)} entries for the {len(agents)} agents {list(agents)}; give "
                "one per agent in the order of env.agents (the same object for shared parameters)"
            )
        self.names: list[str] = []
        self.members: list[Any] = []
        self.columns: list[np.ndarray] = []
        for column, (agent, member) in enumerate(zip(agents, members, strict=True)):
            for i, known in enumerate(self.members):
                if known is member:
                    self.columns[i] = np.append(self.columns[i], column)
                    break
            else:
                self.names.append(agent)
                self.members.append(member)
                self.columns.append(np.array([column]))

    def __iter__(self) -> Iterator[tuple[str, Any, np.ndarray]]:
        return iter(zip(self.names, self.members, self.columns, strict=True))


def _fold(values: Any, columns: np.ndarray) -> Any:
    """The agents ``columns`` of per-agent rows ``(B, n_agents, ...)`` as ``(B * k, ...)``
    samples, agent-major (all steps of the first agent, then of the second, ...)."""
    part = values[:, columns]
    moved = part.transpose(0, 1) if isinstance(part, torch.Tensor) else np.swapaxes(part, 0, 1)
    return moved.reshape(-1, *part.shape[2:])


def _unfold(values: np.ndarray, k: int) -> np.ndarray:
    """Invert :func:`_fold`: ``(k * B, ...)`` agent-major samples back to ``(B, k, ...)``."""
    return np.swapaxes(values.reshape(k, -1, *values.shape[1:]), 0, 1)


class ParallelMultiAgentPolicy(Policy):
    """Acts for all agents at once: each group's policy acts on its agents' rows.

    :param policies: one policy per agent, in the env's agent order; the same policy object for
        several agents makes them share it (it is called once on all their observations).
    :param env: the wrapped parallel environment (for the agents' order and the action space).
    """

    def __init__(self, policies: Sequence[Policy], env: "PettingZooParallelEnv") -> None:
        super().__init__(
            action_space=env.action_space,
            observation_space=env.observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.groups = _Groups(env.agents, list(policies))
        self._policy_modules = nn.ModuleList(self.groups.members)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "is_within_training_step" and "groups" in self.__dict__:
            for policy in self.groups.members:
                policy.is_within_training_step = value

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Actions ``(B, n_agents, ...)`` for observations ``(B, n_agents, ...)``.

        :raises ValueError: for recurrent policies (a hidden state), which are not supported.
        """
        if state is not None:
            raise ValueError("recurrent policies are not supported for simultaneous moves")
        obs = batch.obs
        act: np.ndarray | None = None
        for _, policy, columns in self.groups:
            out = policy(Batch(obs=_fold(obs, columns), info=Batch()), **kwargs)
            group_act = _unfold(to_numpy(out.act), len(columns))
            if act is None:
                shape = (len(obs), self.num_agents, *group_act.shape[2:])
                act = np.zeros(shape, group_act.dtype)
            act[:, columns] = group_act
        return Batch(act=act)

    @property
    def num_agents(self) -> int:
        return sum(len(c) for c in self.groups.columns)

    def add_exploration_noise(self, act: np.ndarray | Batch, batch: Batch) -> np.ndarray | Batch:
        """Each group's policy adds its own noise to its agents' actions."""
        if not isinstance(act, np.ndarray):
            return act
        noisy = act.copy()
        for _, policy, columns in self.groups:
            view = Batch(obs=_fold(batch.obs, columns), info=Batch())
            folded = policy.add_exploration_noise(_fold(act, columns), view)
            noisy[:, columns] = _unfold(np.asarray(folded), len(columns))
        return noisy

    def map_action(self, act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
        """Each group's policy maps (bounds, rescales) its agents' actions."""
        return self._per_group(act, lambda policy, part: policy.map_action(part))

    def map_action_inverse(self, act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
        return self._per_group(act, lambda policy, part: policy.map_action_inverse(part))

    def _per_group(self, act: Any, fn: Any) -> np.ndarray | Batch:
        act = to_numpy(act)
        if not isinstance(act, np.ndarray):
            return act
        mapped = np.array(act)
        for _, policy, columns in self.groups:
            mapped[:, columns] = _unfold(np.asarray(fn(policy, _fold(act, columns))), len(columns))
        return mapped


class ParallelMultiAgentOnPolicyAlgorithm(OnPolicyAlgorithm[ParallelMultiAgentPolicy]):
    """Trains the agents of a simultaneous-move game with on-policy algorithms, by groups.

    Each agent's slice of the rollout (its observations, actions, its own rewards) is
    preprocessed by its group's algorithm as a separate sequence (returns and advantages never
    mix agents); a group then updates once on all its agents' samples together.

    :param algorithms: one on-policy algorithm per agent, in the order of ``env.agents``; pass
        the same algorithm object for several agents to share its parameters.
    :param env: the wrapped parallel environment (one instance, for the agents' order).
    """

    def __init__(
        self, *, algorithms: Sequence[OnPolicyAlgorithm], env: "PettingZooParallelEnv"
    ) -> None:
        groups = _Groups(env.agents, list(algorithms))
        policy = ParallelMultiAgentPolicy([a.policy for a in algorithms], env)
        super().__init__(policy=policy)
        self.groups = groups
        self._algorithm_modules = nn.ModuleList(groups.members)
        self._algorithm_of_agent = dict(zip(env.agents, algorithms, strict=True))

    def get_algorithm(self, agent_id: str) -> OnPolicyAlgorithm:
        """The algorithm training the agent ``agent_id``."""
        if agent_id not in self._algorithm_of_agent:
            raise KeyError(
                f"no agent {agent_id!r}; the agents are {list(self._algorithm_of_agent)}"
            )
        return self._algorithm_of_agent[agent_id]

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        per_group: dict[str, Batch] = {}
        for name, algorithm, columns in self.groups:
            views = []
            for column in columns:
                view = self._agent_view(batch, int(column))
                with _agent_rewards(buffer, int(column)):
                    views.append(algorithm._preprocess_batch(view, buffer, indices))
            per_group[name] = Batch.cat(views)
        return Batch(per_group)

    @staticmethod
    def _agent_view(batch: Batch, column: int) -> Batch:
        """One agent's slice of every row: its observation, action and reward."""
        return Batch(
            obs=batch.obs[:, column],
            act=batch.act[:, column],
            rew=np.asarray(batch.rew)[:, column],
            terminated=batch.terminated,
            truncated=batch.truncated,
            obs_next=batch.obs_next[:, column],
            info=Batch(),
        )

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> MapTrainingStats:
        stats: dict[AgentId, TrainingStats] = {
            name: algorithm._update_with_batch(batch[name], batch_size=batch_size, repeat=repeat)
            for name, algorithm, _ in self.groups
        }
        return MapTrainingStats(stats)
