"""A random opponent for turn-based games: it plays uniformly among the legal moves and never
learns, so it can sit beside a learning agent in a multi-agent algorithm."""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, PolicyState, TrainingStats
from tianshou.algorithm.algorithm_base import Policy as PolicyBase
from tianshou.data.batch import Batch
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import sample_legal_actions


@dataclass(kw_only=True)
class MARLRandomTrainingStats(TrainingStats):
    """The (empty) result of the random agent's update: it learns nothing."""


class MARLRandomDiscreteMaskedOffPolicyAlgorithm(OffPolicyAlgorithm):
    """An agent that picks uniformly among the legal actions of each observation.

    Observations must carry a legal-action mask (``obs.mask``), as
    :class:`~tianshou.env.PettingZooEnv` gives for discrete action spaces. Its update does
    nothing, so in a multi-agent algorithm it is a fixed random opponent.

    :param action_space: the environment's discrete action space; its random generator draws the
        actions (seed it with ``action_space.seed(...)`` for reproducible play).
    """

    class Policy(PolicyBase):
        """Uniform among the actions whose mask entry is true."""

        def __init__(self, action_space: gym.spaces.Space) -> None:
            if not isinstance(action_space, gym.spaces.Discrete):
                raise ValueError(
                    f"the random masked agent needs a Discrete action space, got {action_space}"
                )
            super().__init__(action_space=action_space)

        def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
            """A uniformly random legal action for every row of ``batch.obs.mask``."""
            obs = batch.obs
            if not isinstance(obs, Batch) or "mask" not in obs.__dict__:
                raise ValueError(
                    "the random masked agent needs observations with a legal-action mask "
                    "(obs.mask), as PettingZooEnv gives for discrete action spaces"
                )
            spaces = [self.action_space] * len(obs.mask)
            act = sample_legal_actions(spaces, to_numpy(obs.mask), batch.get("info"))
            return Batch(act=act, state=state)

    def __init__(self, action_space: gym.spaces.Space) -> None:
        super().__init__(policy=self.Policy(action_space))

    def _update_with_batch(self, batch: Batch) -> MARLRandomTrainingStats:
        return MARLRandomTrainingStats()
