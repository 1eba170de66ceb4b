"""Simultaneous-move PettingZoo (Parallel API) environments as one gymnasium env per game.

Every agent acts at every step, so a step's data is naturally aligned across agents: the
observation is one array with a row per agent, the action one row per agent, the reward one
entry per agent. Vector envs, collectors and replay buffers then work unchanged, and each
stored transition holds every agent's part of the same moment. Importing this module imports
``pettingzoo``; ``tianshou.env`` only does so when ``PettingZooParallelEnv`` is first accessed.
"""

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from pettingzoo.utils.env import ParallelEnv


class PettingZooParallelEnv(gym.Env):
    """Wraps a PettingZoo ``ParallelEnv`` whose agents share one observation and one action
    space, in the fixed order of ``possible_agents``.

    * observation: ``(n_agents, *obs_shape)``; an agent that has left the game sees zeros;
    * action: ``(n_agents, *act_shape)`` (one discrete action per agent for ``Discrete``
      spaces); the actions of agents that have left are ignored;
    * reward: a float array ``(n_agents,)`` (zero for agents that have left);
    * the episode ends when no agent is left; it counts as terminated if an agent terminated
      in that last step, else as truncated;
    * info: ``{"alive": bool array (n_agents,)}``, which agents were still in the game after
      the step (the agents' own info dicts are not carried, as their keys may differ).

    :param env: the PettingZoo parallel environment, e.g. ``simple_spread_v3.parallel_env()``.
    """

    def __init__(self, env: ParallelEnv) -> None:
        super().__init__()
        self.env = env
        self.agents: list[str] = list(env.possible_agents)
        self.agent_idx = {agent: i for i, agent in enumerate(self.agents)}
        agent_obs_space = env.observation_space(self.agents[0])
        agent_act_space = env.action_space(self.agents[0])
        for agent in self.agents[1:]:
            if env.observation_space(agent) != agent_obs_space:
                raise ValueError(
                    f"agent {agent!r} has another observation space than {self.agents[0]!r}; "
                    "all agents must share one (pad them, e.g. with SuperSuit's pad_observations)"
                )
            if env.action_space(agent) != agent_act_space:
                raise ValueError(
                    f"agent {agent!r} has another action space than {self.agents[0]!r}; "
                    "all agents must share one (pad them, e.g. with SuperSuit's pad_action_space)"
                )
        if not isinstance(agent_obs_space, spaces.Box):
            raise ValueError(f"agents' observations must be Box arrays, got {agent_obs_space}")
        self.agent_observation_space = agent_obs_space
        self.agent_action_space = agent_act_space
        self.observation_space = _stacked(agent_obs_space, len(self.agents))
        self.action_space = _stacked(agent_act_space, len(self.agents))
        self.metadata = getattr(env, "metadata", {})
        self.render_mode = getattr(env, "render_mode", None)

    @property
    def num_agents(self) -> int:
        return len(self.agents)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        observations, _ = self.env.reset(seed=seed, options=options)
        if seed is not None:
            for i, agent in enumerate(self.agents):
                self.env.action_space(agent).seed(seed + i)
        return self._stack(observations), {"alive": self._alive()}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool, bool, dict]:
        """Play one row of ``action`` per agent, all at once."""
        action = np.asarray(action)
        if len(action) != self.num_agents:
            raise ValueError(
                f"expected one action per agent ({self.num_agents}, in the order {self.agents}), "
                f"got an array of shape {action.shape}"
            )
        live = [agent for agent in self.agents if agent in self.env.agents]
        actions = {agent: self._agent_action(action[self.agent_idx[agent]]) for agent in live}
        observations, rewards, terminations, _, _ = self.env.step(actions)
        reward = np.zeros(self.num_agents, dtype=np.float32)
        for agent, value in rewards.items():
            reward[self.agent_idx[agent]] = value
        over = not self.env.agents
        terminated = over and any(terminations.get(agent, False) for agent in live)
        truncated = over and not terminated
        return self._stack(observations), reward, terminated, truncated, {"alive": self._alive()}

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()

    def _agent_action(self, row: np.ndarray) -> Any:
        if isinstance(self.agent_action_space, spaces.Discrete):
            return int(row)
        return row

    def _alive(self) -> np.ndarray:
        return np.array([agent in self.env.agents for agent in self.agents])

    def _stack(self, observations: dict[str, Any]) -> np.ndarray:
        space = self.agent_observation_space
        stacked = np.zeros((self.num_agents, *space.shape), dtype=space.dtype)
        for agent, obs in observations.items():
            stacked[self.agent_idx[agent]] = obs
        return stacked


def _stacked(space: spaces.Space, n: int) -> spaces.Space:
    """The space of ``n`` agents' values of ``space``, one row per agent."""
    if isinstance(space, spaces.Box):
        low = np.broadcast_to(space.low, (n, *space.shape))
        high = np.broadcast_to(space.high, (n, *space.shape))
        return spaces.Box(low=low, high=high, dtype=space.dtype)
    if isinstance(space, spaces.Discrete):
        return spaces.MultiDiscrete(np.full(n, space.n), start=np.full(n, space.start))
    raise ValueError(f"agents' actions must be Discrete or Box, got {space}")
