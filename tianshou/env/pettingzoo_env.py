"""Turn-based PettingZoo (AEC) environments seen through the single-agent gymnasium API.

Importing this module imports ``pettingzoo``; ``tianshou.env`` only does so when
``PettingZooEnv`` is first accessed.
"""

from abc import ABC
from typing import Any

from gymnasium import spaces
from pettingzoo.utils.env import AECEnv


class PettingZooEnv(AECEnv, ABC):
    """Wraps a turn-based PettingZoo env so that vector envs and collectors can drive it.

    Each observation is a dict ``{"agent_id": <agent to act>, "obs": <its observation>,
    "mask": <legal actions>}``; a multi-agent policy dispatches on ``agent_id``. The mask comes
    from the env's ``action_mask`` when it provides one, else every discrete action is legal
    (and there is no ``mask`` for non-discrete actions). The reward of a step is a list holding
    every agent's latest reward, in the order of ``possible_agents``.

    All agents must share one observation space and one action space (pad them otherwise,
    e.g. with SuperSuit's ``pad_observations`` / ``pad_action_space``).

    :param env: a PettingZoo AEC environment.
    """

    def __init__(self, env: AECEnv) -> None:
        super().__init__()
        self.env = env
        self.agents = list(env.possible_agents)
        self.agent_idx = {agent: i for i, agent in enumerate(self.agents)}
        self.rewards = [0] * len(self.agents)
        self.observation_space: spaces.Space = env.observation_space(self.agents[0])
        self.action_space: spaces.Space = env.action_space(self.agents[0])
        if any(env.observation_space(agent) != self.observation_space for agent in self.agents):
            raise ValueError(
                "all agents must share one observation space; pad them first, e.g. with "
                "supersuit.aec_wrappers.pad_observations(env)"
            )
        if any(env.action_space(agent) != self.action_space for agent in self.agents):
            raise ValueError(
                "all agents must share one action space; pad them first, e.g. with "
                "supersuit.aec_wrappers.pad_action_space(env)"
            )
        self.reset()

    def reset(self, *args: Any, **kwargs: Any) -> tuple[dict, dict]:
        """Reset the game; return the first acting agent's observation dict and info."""
        self.env.reset(*args, **kwargs)
        observation, _, _, _, info = self.env.last()
        return self._observation_dict(observation), info

    def step(self, action: Any) -> tuple[dict, list, bool, bool, dict]:
        """Play ``action`` for the current agent; return what the next agent to act sees."""
        self.env.step(action)
        observation, _, terminated, truncated, info = self.env.last()
        for agent, reward in self.env.rewards.items():
            self.rewards[self.agent_idx[agent]] = reward
        return self._observation_dict(observation), list(self.rewards), terminated, truncated, info

    def close(self) -> None:
        self.env.close()

    def seed(self, seed: int | None = None) -> None:
        """Seed the game (legacy ``env.seed`` if it has one, else through ``reset``)."""
        try:
            self.env.seed(seed)
        except (NotImplementedError, AttributeError):
            self.env.reset(seed=seed)

    def render(self) -> Any:
        return self.env.render()

    def _observation_dict(self, observation: Any) -> dict[str, Any]:
        agent = self.env.agent_selection
        if isinstance(observation, dict) and "action_mask" in observation:
            mask = [flag == 1 for flag in observation["action_mask"]]
            return {"agent_id": agent, "obs": observation["observation"], "mask": mask}
        if isinstance(self.action_space, spaces.Discrete):
            mask = [True] * self.env.action_space(agent).n
            return {"agent_id": agent, "obs": observation, "mask": mask}
        return {"agent_id": agent, "obs": observation}
