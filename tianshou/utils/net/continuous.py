"""Actor and critic heads for continuous (Box) action spaces.

Each head sits on a preprocessing network with the ``(obs, state) -> (features, state)``
interface (usually a :class:`~tianshou.utils.net.common.Net` without ``action_shape``) and adds
a small :class:`~tianshou.utils.net.common.MLP` mapping the features to actions or values.
"""

from abc import ABC
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.common import (
    MLP,
    AbstractContinuousActorProbabilistic,
    Actor,
    InputDeviceMixin,
    ModuleWithVectorOutput,
    TActionShape,
    TLinearLayer,
)

SIGMA_MIN = -20
"""Lower clamp of a state-conditioned log standard deviation."""
SIGMA_MAX = 2
"""Upper clamp of a state-conditioned log standard deviation."""


def _action_dim(action_shape: TActionShape) -> int:
    return int(np.prod(action_shape))


class AbstractContinuousActorDeterministic(Actor[Any], ABC):
    """An actor for continuous actions that outputs the action itself."""


class ContinuousActorDeterministic(AbstractContinuousActorDeterministic):
    """A deterministic actor (DDPG, TD3): ``action = max_action * tanh(head(features))``.

    :param preprocess_net: body mapping observations to features (``(obs, state) -> (x, state)``).
    :param action_shape: shape of the action; the output width is its product.
    :param hidden_sizes: hidden layers of the head between the body and the output layer.
    :param max_action: scale of the tanh output, so actions lie in ``[-max_action, max_action]``.
    """

    def __init__(
        self,
        *,
        preprocess_net: ModuleWithVectorOutput,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        max_action: float = 1.0,
    ) -> None:
        super().__init__(output_dim=_action_dim(action_shape))
        self.preprocess = preprocess_net
        self.last = MLP(
            input_dim=preprocess_net.get_output_dim(),
            output_dim=self.output_dim,
            hidden_sizes=hidden_sizes,
        )
        self.max_action = max_action

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        return self.preprocess

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Map observations to ``(actions (batch, action_dim), state)``."""
        features, hidden = self.preprocess(obs, state)
        return self.max_action * torch.tanh(self.last(features)), hidden


class AbstractContinuousCritic(ModuleWithVectorOutput, ABC):
    """A critic for continuous actions: ``forward(obs, act=None, info=None) -> values``."""


class ContinuousCritic(InputDeviceMixin, AbstractContinuousCritic):
    """A value head: ``Q(s, a)`` when given actions, ``V(s)`` when ``act`` is None.

    >>> from tianshou.utils.net.common import Net
    >>> q = ContinuousCritic(preprocess_net=Net(state_shape=3, action_shape=2, concat=True,
    ...                                         hidden_sizes=[8]))
    >>> q(np.zeros((5, 3)), np.zeros((5, 2))).shape
    torch.Size([5, 1])

    :param preprocess_net: body; for ``Q(s, a)`` a :class:`~tianshou.utils.net.common.Net` with
        ``concat=True`` that takes observations and actions concatenated.
    :param hidden_sizes: hidden layers of the head.
    :param linear_layer: factory for the head's affine layers.
    :param flatten_input: flatten the head's input after the batch dim.
    :param apply_preprocess_net_to_obs_only: feed only the observations to the body (e.g. a CNN
        on images) and concatenate the actions to its features; the head's input width is then
        the body's output width, so the body must leave room for the actions.
    """

    def __init__(
        self,
        *,
        preprocess_net: ModuleWithVectorOutput,
        hidden_sizes: Sequence[int] = (),
        linear_layer: TLinearLayer = nn.Linear,
        flatten_input: bool = True,
        apply_preprocess_net_to_obs_only: bool = False,
    ) -> None:
        super().__init__(output_dim=1)
        self.preprocess = preprocess_net
        self.apply_preprocess_net_to_obs_only = apply_preprocess_net_to_obs_only
        self.last = MLP(
            input_dim=preprocess_net.get_output_dim(),
            output_dim=1,
            hidden_sizes=hidden_sizes,
            linear_layer=linear_layer,
            flatten_input=flatten_input,
        )
        self._refresh_input_device()

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        act: np.ndarray | torch.Tensor | None = None,
        info: dict[str, Any] | None = None,
    ) -> torch.Tensor:
        """Values of shape ``(batch, 1)`` for ``obs`` (and ``act``, if given)."""
        device = self._input_device
        x = torch.as_tensor(obs, device=device, dtype=torch.float32)
        if self.apply_preprocess_net_to_obs_only:
            x, _ = self.preprocess(x)
        else:
            x = x.flatten(1)
        if act is not None:
            act_flat = torch.as_tensor(act, device=device, dtype=torch.float32).flatten(1)
            try:
                x = torch.cat([x, act_flat], dim=1)
            except RuntimeError as error:
                raise ValueError(
                    f"ContinuousCritic needs as many actions as observations; got obs of shape "
                    f"{tuple(np.shape(obs))} and act of shape {tuple(np.shape(act))}"
                ) from error
        if not self.apply_preprocess_net_to_obs_only:
            x, _ = self.preprocess(x)
        return self.last(x)


class ContinuousActorProbabilistic(AbstractContinuousActorProbabilistic[Any]):
    """A Gaussian actor (PPO, SAC): outputs the mean and standard deviation of each action dim.

    >>> from tianshou.utils.net.common import Net
    >>> actor = ContinuousActorProbabilistic(preprocess_net=Net(state_shape=3, hidden_sizes=[8]),
    ...                                      action_shape=2)
    >>> (mu, sigma), _ = actor(np.zeros((5, 3)))
    >>> mu.shape, sigma.shape
    (torch.Size([5, 2]), torch.Size([5, 2]))

    :param preprocess_net: body mapping observations to features.
    :param action_shape: shape of the action; the output width is its product.
    :param hidden_sizes: hidden layers of the mean (and sigma) heads.
    :param max_action: scale of the tanh-squashed mean.
    :param unbounded: leave the mean unsquashed (SAC squashes the sampled action instead; PPO
        clips or squashes it in the policy's ``map_action``).
    :param conditioned_sigma: compute the log standard deviation from the features with its own
        head, clamped to ``[SIGMA_MIN, SIGMA_MAX]`` (SAC); otherwise it is a free parameter per
        action dim, ``sigma_param`` of shape ``(action_dim, 1)`` initialised to 0 (PPO).
    """

    def __init__(
        self,
        *,
        preprocess_net: ModuleWithVectorOutput,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        max_action: float = 1.0,
        unbounded: bool = False,
        conditioned_sigma: bool = False,
    ) -> None:
        output_dim = _action_dim(action_shape)
        super().__init__(output_dim)
        self.preprocess = preprocess_net
        input_dim = preprocess_net.get_output_dim()
        self.mu = MLP(input_dim=input_dim, output_dim=output_dim, hidden_sizes=hidden_sizes)
        self._c_sigma = conditioned_sigma
        if conditioned_sigma:
            self.sigma = MLP(input_dim=input_dim, output_dim=output_dim, hidden_sizes=hidden_sizes)
        else:
            self.sigma_param = nn.Parameter(torch.zeros(output_dim, 1))
        self.max_action = max_action
        self._unbounded = unbounded

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        return self.preprocess

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Any]:
        """Map observations to ``((mu, sigma), state)``, both of shape ``(batch, action_dim)``."""
        features, hidden = self.preprocess(obs, state)
        mu = self.mu(features)
        if not self._unbounded:
            mu = self.max_action * torch.tanh(mu)
        if self._c_sigma:
            sigma = torch.clamp(self.sigma(features), min=SIGMA_MIN, max=SIGMA_MAX).exp()
        else:
            sigma = self.sigma_param.view(1, -1).expand_as(mu).exp()
        return (mu, sigma), hidden
