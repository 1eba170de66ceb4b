"""Actor and critic heads for continuous (Box) action spaces.

Each head sits on a preprocessing network with the ``(obs, state) -> (features, state)``
interface (usually a :class:`~tianshou.utils.net.common.Net` without ``action_shape``) and adds
a small :class:`~tianshou.utils.net.common.MLP` mapping the features to actions or values.
"""

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.action_repr import AbstractContinuousActorProbabilistic, Actor
from tianshou.utils.net.layers import (
    MLP,
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

    @abstractmethod
    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        act: np.ndarray | torch.Tensor | None = None,
        info: dict[str, Any] | None = None,
    ) -> torch.Tensor:
        """Values of shape ``(batch, 1)``: ``Q(s, a)`` for observations ``obs`` and actions
        ``act``, or ``V(s)`` when ``act`` is None (for critics built without actions).

        :param obs: a batch of observations.
        :param act: the matching batch of actions, or None.
        :param info: the environments' info for the batch (unused by the built-in critics).
        """


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


def _gaussian_parameters(
    features: torch.Tensor,
    mu_head: nn.Module,
    sigma_source: nn.Module | nn.Parameter,
    max_action: float,
    unbounded: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean and standard deviation of a diagonal Gaussian actor, from its body's features.

    :param mu_head: maps features to the mean; tanh-squashed to ``max_action`` unless
        ``unbounded``.
    :param sigma_source: a head mapping features to the log std (clamped to
        ``[SIGMA_MIN, SIGMA_MAX]``), or a parameter of state-independent log stds
        (shape ``(action_dim, 1)``).
    """
    mu = mu_head(features)
    if not unbounded:
        mu = max_action * torch.tanh(mu)
    if isinstance(sigma_source, nn.Parameter):
        sigma = sigma_source.view(1, -1).expand_as(mu).exp()
    else:
        sigma = torch.clamp(sigma_source(features), min=SIGMA_MIN, max=SIGMA_MAX).exp()
    return mu, sigma


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
        mu, sigma = _gaussian_parameters(
            features,
            self.mu,
            self.sigma if self._c_sigma else self.sigma_param,
            self.max_action,
            self._unbounded,
        )
        return (mu, sigma), hidden


def _run_lstm(
    lstm: nn.LSTM,
    obs: torch.Tensor,
    state: dict[str, torch.Tensor] | None,
    owner: str,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Run ``lstm`` over ``obs`` and return its output at the last time step and the next state.

    ``obs`` is ``(batch, obs_dim)`` for one step or ``(batch, seq_len, obs_dim)`` for a sequence.
    ``state`` holds batch-first ``hidden`` and ``cell`` tensors of shape
    ``(batch, num_layers, hidden_size)``, the layout a replay buffer stores per transition; the
    LSTM itself wants them layer-first, hence the transposes. The returned state is detached, so
    gradients never flow back into earlier calls.
    """
    if obs.dim() not in (2, 3) or obs.shape[-1] != lstm.input_size:
        raise ValueError(
            f"{owner} expects obs of shape (batch, {lstm.input_size}) or "
            f"(batch, seq_len, {lstm.input_size}), got {tuple(obs.shape)}"
        )
    if obs.dim() == 2:
        obs = obs.unsqueeze(-2)
    lstm.flatten_parameters()
    if state is None:
        out, (hidden, cell) = lstm(obs)
    else:
        expected = (obs.shape[0], lstm.num_layers, lstm.hidden_size)
        for key in ("hidden", "cell"):
            if key not in state or tuple(state[key].shape) != expected:
                got = tuple(state[key].shape) if key in state else "missing"
                raise ValueError(
                    f"{owner} expects state[{key!r}] of shape (batch, layer_num, "
                    f"hidden_layer_size) = {expected}, got {got}"
                )
        initial = (
            state["hidden"].transpose(0, 1).contiguous(),
            state["cell"].transpose(0, 1).contiguous(),
        )
        out, (hidden, cell) = lstm(obs, initial)
    next_state = {
        "hidden": hidden.transpose(0, 1).detach(),
        "cell": cell.transpose(0, 1).detach(),
    }
    return out[:, -1], next_state


class RecurrentActorProb(
    InputDeviceMixin, AbstractContinuousActorProbabilistic[dict[str, torch.Tensor]]
):
    """A Gaussian actor on an LSTM, for partially observable tasks with continuous actions.

    The observations go straight into the LSTM; the mean and standard deviation heads read its
    output at the last time step. Observations are ``(batch, obs_dim)`` when acting (one step,
    the state carrying the history) or ``(batch, seq_len, obs_dim)`` when training on stacked
    sequences. The state is ``{"hidden": h, "cell": c}``, batch-first tensors of shape
    ``(batch, layer_num, hidden_layer_size)``, returned detached.

    >>> actor = RecurrentActorProb(layer_num=1, state_shape=3, action_shape=2,
    ...                            hidden_layer_size=8)
    >>> (mu, sigma), state = actor(np.zeros((5, 3)))
    >>> mu.shape, sigma.shape, state["hidden"].shape
    (torch.Size([5, 2]), torch.Size([5, 2]), torch.Size([5, 1, 8]))

    :param layer_num: number of stacked LSTM layers.
    :param state_shape: shape of one observation; its product is the LSTM's input width.
    :param action_shape: shape of the action; the output width is its product.
    :param hidden_layer_size: width of the LSTM state.
    :param max_action: scale of the tanh-squashed mean.
    :param unbounded: leave the mean unsquashed (when the policy squashes or clips the sample).
    :param conditioned_sigma: compute the log standard deviation from the LSTM output with its
        own linear head, clamped to ``[SIGMA_MIN, SIGMA_MAX]``; otherwise it is a free parameter
        per action dim, ``sigma_param`` of shape ``(action_dim, 1)`` initialised to 0.
    """

    def __init__(
        self,
        *,
        layer_num: int,
        state_shape: TActionShape,
        action_shape: TActionShape,
        hidden_layer_size: int = 128,
        max_action: float = 1.0,
        unbounded: bool = False,
        conditioned_sigma: bool = False,
    ) -> None:
        output_dim = _action_dim(action_shape)
        super().__init__(output_dim)
        self.nn = nn.LSTM(
            input_size=_action_dim(state_shape),
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        self.mu = nn.Linear(hidden_layer_size, output_dim)
        self._c_sigma = conditioned_sigma
        if conditioned_sigma:
            self.sigma = nn.Linear(hidden_layer_size, output_dim)
        else:
            self.sigma_param = nn.Parameter(torch.zeros(output_dim, 1))
        self.max_action = max_action
        self._unbounded = unbounded
        self._refresh_input_device()

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        """No separate body: an identity declaring this network's output width."""
        return ModuleWithVectorOutput.from_module(nn.Identity(), self.output_dim)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: dict[str, torch.Tensor] | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], dict[str, torch.Tensor]]:
        """Map ``obs`` and the previous state to ``((mu, sigma), next state)``.

        ``mu`` and ``sigma`` have shape ``(batch, action_dim)`` and belong to the last time step.
        """
        obs = torch.as_tensor(obs, device=self._input_device, dtype=torch.float32)
        features, next_state = _run_lstm(self.nn, obs, state, type(self).__name__)
        mu, sigma = _gaussian_parameters(
            features,
            self.mu,
            self.sigma if self._c_sigma else self.sigma_param,
            self.max_action,
            self._unbounded,
        )
        return (mu, sigma), next_state


class RecurrentCritic(InputDeviceMixin, AbstractContinuousCritic):
    """A value head on an LSTM: ``Q(s, a)`` when given actions, ``V(s)`` when ``act`` is None.

    The LSTM runs over the observation sequence from a zero state; its output at the last time
    step is concatenated with the action and mapped to a value by one linear layer.

    >>> critic = RecurrentCritic(layer_num=1, state_shape=3, action_shape=2, hidden_layer_size=8)
    >>> critic(np.zeros((5, 4, 3)), np.zeros((5, 2))).shape
    torch.Size([5, 1])

    :param layer_num: number of stacked LSTM layers.
    :param state_shape: shape of one observation; its product is the LSTM's input width.
    :param action_shape: shape of the action the value is conditioned on; the default ``(0,)``
        makes a state-value critic that takes no action.
    :param hidden_layer_size: width of the LSTM state.
    """

    def __init__(
        self,
        layer_num: int,
        state_shape: TActionShape,
        action_shape: TActionShape = (0,),
        hidden_layer_size: int = 128,
    ) -> None:
        super().__init__(output_dim=1)
        self.action_dim = _action_dim(action_shape)
        self.nn = nn.LSTM(
            input_size=_action_dim(state_shape),
            hidden_size=hidden_layer_size,
            num_layers=layer_num,
            batch_first=True,
        )
        self.fc2 = nn.Linear(hidden_layer_size + self.action_dim, 1)
        self._refresh_input_device()

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        act: np.ndarray | torch.Tensor | None = None,
        info: dict[str, Any] | None = None,
    ) -> torch.Tensor:
        """Values of shape ``(batch, 1)`` for ``obs`` of shape ``(batch, [seq_len,] obs_dim)``.

        ``act`` has shape ``(batch, action_dim)`` and is required exactly when ``action_shape``
        is non-empty.
        """
        if (act is None) != (self.action_dim == 0):
            raise ValueError(
                f"RecurrentCritic was built with action_shape of width {self.action_dim}, so "
                f"act must be {'None' if self.action_dim == 0 else 'given'}"
            )
        device = self._input_device
        x = torch.as_tensor(obs, device=device, dtype=torch.float32)
        x, _ = _run_lstm(self.nn, x, None, type(self).__name__)
        if act is not None:
            act_flat = torch.as_tensor(act, device=device, dtype=torch.float32).flatten(1)
            if act_flat.shape != (x.shape[0], self.action_dim):
                raise ValueError(
                    f"RecurrentCritic expects act of shape ({x.shape[0]}, {self.action_dim}), "
                    f"got {tuple(act_flat.shape)}"
                )
            x = torch.cat([x, act_flat], dim=1)
        return self.fc2(x)


class Perturbation(nn.Module):
    """BCQ's perturbation model: nudges a candidate action within ``±phi * max_action``.

    BCQ (Fujimoto et al. 2019, "Off-Policy Deep Reinforcement Learning without Exploration")
    samples candidate actions from a generative model of the data and lets this network shift
    each one by a bounded amount, so the policy stays close to actions seen in the data set:
    ``(action + phi * max_action * tanh(net([state, action]))).clamp(-max_action, max_action)``.

    >>> from tianshou.utils.net.common import Net
    >>> perturb = Perturbation(preprocess_net=Net(state_shape=3 + 2, action_shape=2,
    ...                                           hidden_sizes=[8]), max_action=1.0)
    >>> perturb(torch.zeros(5, 3), torch.zeros(5, 2)).shape
    torch.Size([5, 2])

    :param preprocess_net: network mapping ``state`` and ``action`` concatenated on the last dim
        to perturbation logits with the action's width, returned either plainly (e.g. an
        :class:`~tianshou.utils.net.common.MLP` with ``input_dim=state_dim + action_dim`` and
        ``output_dim=action_dim``) or as ``(logits, state)`` (e.g. a
        :class:`~tianshou.utils.net.common.Net` with ``state_shape=state_dim + action_dim`` and
        ``action_shape=action_dim``).
    :param max_action: bound of the action space; outputs are clamped to ``±max_action``.
    :param phi: the largest perturbation as a fraction of ``max_action``; smaller values keep
        the policy closer to the data (0 reproduces the candidate actions).
    """

    def __init__(
        self,
        *,
        preprocess_net: nn.Module,
        max_action: float,
        phi: float = 0.05,
    ) -> None:
        super().__init__()
        self.preprocess_net = preprocess_net
        self.max_action = max_action
        self.phi = phi

    def forward(self, state: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Perturbed actions with the shape of ``action`` (``(batch, action_dim)``)."""
        output = self.preprocess_net(torch.cat([state, action], -1))
        logits = output[0] if isinstance(output, tuple) else output
        if logits.shape != action.shape:
            raise ValueError(
                f"Perturbation's preprocess_net must output the action's shape "
                f"{tuple(action.shape)}, got {tuple(logits.shape)}"
            )
        noise = self.phi * self.max_action * torch.tanh(logits)
        return (noise + action).clamp(-self.max_action, self.max_action)


class VAE(nn.Module):
    """BCQ's conditional variational auto-encoder of the data set's actions given the state.

    The encoder maps ``[state, action]`` to a Gaussian over a latent ``z``; the decoder maps
    ``[state, z]`` back to an action in ``[-max_action, max_action]``. Trained on the data, the
    decoder proposes actions similar to those the behaviour policy took in a state (Fujimoto et
    al. 2019, "Off-Policy Deep Reinforcement Learning without Exploration").

    >>> from tianshou.utils.net.common import MLP
    >>> vae = VAE(encoder=MLP(input_dim=3 + 2, hidden_sizes=[8]),
    ...           decoder=MLP(input_dim=3 + 4, output_dim=2, hidden_sizes=[8]),
    ...           hidden_dim=8, latent_dim=4, max_action=1.0)
    >>> reconstruction, mean, std = vae(torch.zeros(5, 3), torch.zeros(5, 2))
    >>> reconstruction.shape, mean.shape, std.shape
    (torch.Size([5, 2]), torch.Size([5, 4]), torch.Size([5, 4]))

    :param encoder: network mapping ``[state, action]`` (concatenated on the last dim) to
        features of width ``hidden_dim``.
    :param decoder: network mapping ``[state, z]`` to the action's width, before the tanh.
    :param hidden_dim: width of the encoder's output, the input of the mean and log-std heads.
    :param latent_dim: width of the latent ``z``.
    :param max_action: scale of the tanh-squashed decoder output.
    """

    def __init__(
        self,
        *,
        encoder: nn.Module,
        decoder: nn.Module,
        hidden_dim: int,
        latent_dim: int,
        max_action: float,
    ) -> None:
        super().__init__()
        if isinstance(encoder, ModuleWithVectorOutput) and encoder.output_dim != hidden_dim:
            raise ValueError(
                f"VAE's hidden_dim ({hidden_dim}) must equal the encoder's output_dim "
                f"({encoder.output_dim})"
            )
        self.encoder = encoder
        self.mean = nn.Linear(hidden_dim, latent_dim)
        self.log_std = nn.Linear(hidden_dim, latent_dim)
        self.decoder = decoder
        self.max_action = max_action
        self.latent_dim = latent_dim

    def forward(
        self, state: torch.Tensor, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Encode, sample ``z`` by reparameterisation and decode.

        :return: ``(reconstruction, mean, std)``: the decoded action (shape of ``action``) and
            the latent Gaussian's parameters (``(..., latent_dim)``) for the KL term of the loss.
            The log-std is clamped to ``[-4, 15]`` so the KL term cannot blow up early in
            training.
        """
        features = self.encoder(torch.cat([state, action], -1))
        mean = self.mean(features)
        std = self.log_std(features).clamp(-4, 15).exp()
        latent_z = mean + std * torch.randn_like(std)
        return self.decode(state, latent_z), mean, std

    def decode(self, state: torch.Tensor, latent_z: torch.Tensor | None = None) -> torch.Tensor:
        """Decode ``[state, latent_z]`` to actions in ``[-max_action, max_action]``.

        :param state: states of shape ``(..., state_dim)``.
        :param latent_z: latents of shape ``(..., latent_dim)``; if None, drawn from ``N(0, 1)``
            and clamped to ``[-0.5, 0.5]``, which keeps generated actions near the likely ones
            of the data, as BCQ does when proposing candidate actions.
        """
        if latent_z is None:
            latent_z = torch.randn(
                (*state.shape[:-1], self.latent_dim), device=state.device, dtype=state.dtype
            ).clamp(-0.5, 0.5)
        return self.max_action * torch.tanh(self.decoder(torch.cat([state, latent_z], -1)))
