"""The interfaces networks offer to policies: an observation goes in, an action representation
(logits, Q-values, distribution parameters) and the next recurrent state come out. Also
:class:`RandomActor`, the trivial actor that implements them by acting at random.
"""

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.layers import ModuleWithVectorOutput

if TYPE_CHECKING:
    from gymnasium import spaces

    from tianshou.utils.space_info import ActionSpaceInfo

TRecurrentState = TypeVar("TRecurrentState", bound=Any)


class ActionReprNet(Generic[TRecurrentState], nn.Module, ABC):
    """A network mapping observations to an action representation (logits, Q-values, ...).

    ``forward(obs, state=None, info=None)`` returns ``(output, state)``, where ``state`` is the
    recurrent state to feed into the next call (None for feed-forward networks).
    """

    @abstractmethod
    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: TRecurrentState | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[Any, TRecurrentState | None]:
        """Map a batch of observations (and the recurrent state) to the output and next state."""


class ActionReprNetWithVectorOutput(ActionReprNet[TRecurrentState], ModuleWithVectorOutput):
    """An :class:`ActionReprNet` whose output is a vector per sample of width ``output_dim``."""


class Actor(ActionReprNetWithVectorOutput[TRecurrentState], ABC):
    """An actor network: a preprocessing body followed by an action head."""

    @abstractmethod
    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """The body that turns observations into features for the action head."""


class AbstractContinuousActorProbabilistic(Actor[TRecurrentState], ABC):
    """An actor for continuous actions whose output parameterises a distribution."""


class AbstractDiscreteActor(Actor[TRecurrentState], ABC):
    """An actor for discrete actions whose output is per-action logits or probabilities."""


class RandomActor(AbstractContinuousActorProbabilistic[Any], AbstractDiscreteActor[Any]):
    """An untrained actor that acts uniformly at random; a baseline and a placeholder.

    For a Box space the output is a batch of sampled actions; for a Discrete space it is a batch
    of uniform action probabilities.

    :param action_space: a Box or Discrete action space.
    """

    def __init__(self, action_space: "spaces.Box | spaces.Discrete") -> None:
        from tianshou.utils.space_info import ActionSpaceInfo

        info = ActionSpaceInfo.from_space(action_space)
        super().__init__(info.action_dim)
        self._action_space = action_space
        self._space_info = info

    @property
    def action_space(self) -> "spaces.Box | spaces.Discrete":
        return self._action_space

    @property
    def space_info(self) -> "ActionSpaceInfo":
        return self._space_info

    @property
    def is_discrete(self) -> bool:
        from gymnasium import spaces

        return isinstance(self._action_space, spaces.Discrete)

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No body: an identity declaring the action width."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Random actions (Box) or uniform probabilities (Discrete), one row per observation."""
        batch_size = len(obs)
        if self.is_discrete:
            probs = np.full((batch_size, self.output_dim), 1.0 / self.output_dim)
            return torch.as_tensor(probs, dtype=torch.float32), state
        actions = np.stack([self._action_space.sample() for _ in range(batch_size)])
        return torch.as_tensor(actions, dtype=torch.float32), state

    def compute_action_batch(self, obs: np.ndarray | torch.Tensor) -> np.ndarray | torch.Tensor:
        """Sampled actions: action indices for a Discrete space, action vectors for a Box."""
        if self.is_discrete:
            return np.array([self._action_space.sample() for _ in range(len(obs))])
        return self.forward(obs)[0]
