"""The networks of specific algorithms on a :class:`DictEncoder` body, for dict observations.

Most algorithms take any network that reads a ``Batch`` of observations, so
:class:`~tianshou.utils.net.dict_encoder.DictEncoder` (a body or a Q-network) and
:class:`~tianshou.utils.net.dict_encoder.DictActionCritic` (``Q(s, a)``, a critic ensemble, GAIL's
discriminator) cover them. The networks here are for the algorithms whose networks have a
particular output or a particular input:

* :class:`DictHeadNet` puts a flat network on the encoded observation: a distributional
  :class:`~tianshou.utils.net.common.Net` (C51, QRDQN, Rainbow with noisy layers, discrete
  CQL) or a :class:`~tianshou.utils.net.branching.BranchingNet` (BDQN);
* :class:`DictVAE` and :class:`DictPerturbation` are BCQ's generative model and perturbation
  network, whose observation input is encoded before it is concatenated with an action or a
  latent.
"""

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from tianshou.utils.net.action_repr import ActionReprNet
from tianshou.utils.net.continuous import VAE, Perturbation
from tianshou.utils.net.dict_encoder import DictEncoder
from tianshou.utils.net.layers import MLP, ModuleType, TActionShape, as_shape_tuple


def _input_width(head: nn.Module) -> int | None:
    """The flat input width a head network expects, where it declares one."""
    state_shape = getattr(head, "state_shape", None)
    if state_shape is not None and not getattr(head, "concat", False):
        return int(np.prod(state_shape))
    common = getattr(head, "common", None)  # BranchingNet's shared body
    return getattr(common, "input_dim", None)


class DictHeadNet(ActionReprNet[Any]):
    """A flat network (the head) fed with the features of a :class:`DictEncoder` (the body).

    The head is any network ``head(features, state=..., info=...) -> (output, state)`` whose
    input width is the encoder's ``output_dim``: a distributional ``Net`` for C51, QRDQN and
    discrete CQL, one with ``NoisyLinear`` layers (and a dueling head) for Rainbow, whose
    noise the algorithm finds inside this module, or a ``BranchingNet`` for BDQN.

    >>> from tianshou.utils.net.common import Net
    >>> space = gym.spaces.Dict({
    ...     "pos": gym.spaces.Box(-1.0, 1.0, (2,)),
    ...     "camera": gym.spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8),
    ... })
    >>> body = DictEncoder(observation_space=space, hidden_sizes=[32])
    >>> net = DictHeadNet(encoder=body, head=Net(state_shape=body.output_dim, action_shape=4,
    ...                                          num_atoms=11, softmax=True))
    >>> obs = {key: np.stack([sub.sample() for _ in range(3)]) for key, sub in space.items()}
    >>> probs, state = net(obs)
    >>> probs.shape  # (batch, actions, atoms)
    torch.Size([3, 4, 11])

    :param encoder: the dict-observation body, usually a :class:`DictEncoder` with hidden
        layers and no ``action_shape``.
    :param head: the flat network on the encoder's features.
    :raises ValueError: if the head declares an input width other than the encoder's output.
    """

    def __init__(self, *, encoder: DictEncoder, head: nn.Module) -> None:
        width = _input_width(head)
        if width is not None and width != encoder.output_dim:
            raise ValueError(
                f"the head reads inputs of width {width}, but the encoder outputs "
                f"{encoder.output_dim} features; build the head with state_shape="
                f"{encoder.output_dim}"
            )
        super().__init__()
        self.encoder = encoder
        self.head = head

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[Any, Any]:
        """Encode a batch of dict observations and return the head's ``(output, state)``."""
        features, _ = self.encoder(obs)
        return self.head(features, state=state, info=info)


class DictPerturbation(Perturbation):
    """BCQ's perturbation network for dict observations: the encoded observation (as
    :class:`DictEncoder` reads it, without hidden layers) concatenated with the candidate
    action feeds an MLP, whose output nudges the action by at most ``phi * max_action``.

    >>> space = gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (3,)),
    ...                          "goal": gym.spaces.Discrete(2)})
    >>> perturb = DictPerturbation(observation_space=space, action_shape=2, max_action=1.0,
    ...                            hidden_sizes=[16])
    >>> obs = {"pos": np.zeros((5, 3)), "goal": np.zeros(5, dtype=np.int64)}
    >>> perturb(obs, torch.zeros(5, 2)).shape
    torch.Size([5, 2])

    :param observation_space: the ``Dict`` observation space of one env.
    :param action_shape: shape (or size) of one action.
    :param max_action: bound of the actions; outputs are clamped to ``±max_action``.
    :param phi: the largest perturbation as a fraction of ``max_action``.
    :param hidden_sizes: widths of the MLP's hidden layers.
    :param activation: activation after each hidden layer.
    :param keys: the observation entries read (see :class:`DictEncoder`).
    :param cnn_channels: output channels of the convolutions of each image encoder.
    """

    def __init__(
        self,
        *,
        observation_space: gym.spaces.Dict,
        action_shape: TActionShape,
        max_action: float,
        phi: float = 0.05,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: ModuleType | None = nn.ReLU,
        keys: Sequence[str] | None = None,
        cnn_channels: Sequence[int] = (16, 32),
    ) -> None:
        encoder = DictEncoder(
            observation_space=observation_space,
            hidden_sizes=(),
            keys=keys,
            cnn_channels=cnn_channels,
        )
        action_dim = int(np.prod(as_shape_tuple(action_shape)))
        mlp = MLP(
            input_dim=encoder.output_dim + action_dim,
            output_dim=action_dim,
            hidden_sizes=hidden_sizes,
            activation=activation,
        )
        super().__init__(preprocess_net=mlp, max_action=max_action, phi=phi)
        self.obs_encoder = encoder

    def forward(self, state: Any, action: torch.Tensor) -> torch.Tensor:
        """Perturbed actions ``(batch, action_dim)`` for dict observations ``state``."""
        return super().forward(self.obs_encoder(state)[0], action)


class DictVAE(VAE):
    """BCQ's conditional VAE of the data's actions given dict observations.

    The observation is encoded once (as :class:`DictEncoder` reads it, without hidden layers;
    images through a CNN shared by both halves); the VAE's encoder reads it with the action,
    its decoder with the latent, exactly as :class:`VAE` reads a flat observation.

    >>> space = gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (3,)),
    ...                          "goal": gym.spaces.Discrete(2)})
    >>> vae = DictVAE(observation_space=space, action_shape=2, latent_dim=4, max_action=1.0,
    ...               hidden_sizes=[16])
    >>> obs = {"pos": np.zeros((5, 3)), "goal": np.zeros(5, dtype=np.int64)}
    >>> reconstruction, mean, std = vae(obs, torch.zeros(5, 2))
    >>> reconstruction.shape, mean.shape, vae.decode(obs).shape
    (torch.Size([5, 2]), torch.Size([5, 4]), torch.Size([5, 2]))

    :param observation_space: the ``Dict`` observation space of one env.
    :param action_shape: shape (or size) of one action.
    :param latent_dim: width of the latent ``z``.
    :param max_action: scale of the tanh-squashed decoder output.
    :param hidden_sizes: widths of the hidden layers of the VAE's encoder and decoder MLPs (at
        least one).
    :param activation: activation after each hidden layer.
    :param keys: the observation entries read (see :class:`DictEncoder`).
    :param cnn_channels: output channels of the convolutions of each image encoder.
    """

    def __init__(
        self,
        *,
        observation_space: gym.spaces.Dict,
        action_shape: TActionShape,
        latent_dim: int,
        max_action: float,
        hidden_sizes: Sequence[int] = (256, 256),
        activation: ModuleType | None = nn.ReLU,
        keys: Sequence[str] | None = None,
        cnn_channels: Sequence[int] = (16, 32),
    ) -> None:
        if not hidden_sizes:
            raise ValueError("DictVAE needs at least one hidden layer in hidden_sizes")
        obs_encoder = DictEncoder(
            observation_space=observation_space,
            hidden_sizes=(),
            keys=keys,
            cnn_channels=cnn_channels,
        )
        obs_dim = obs_encoder.output_dim
        action_dim = int(np.prod(as_shape_tuple(action_shape)))
        super().__init__(
            encoder=MLP(
                input_dim=obs_dim + action_dim, hidden_sizes=hidden_sizes, activation=activation
            ),
            decoder=MLP(
                input_dim=obs_dim + latent_dim,
                output_dim=action_dim,
                hidden_sizes=hidden_sizes,
                activation=activation,
            ),
            hidden_dim=hidden_sizes[-1],
            latent_dim=latent_dim,
            max_action=max_action,
        )
        self.obs_encoder = obs_encoder

    def forward(
        self, state: Any, action: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Encode, sample ``z`` by reparameterisation and decode, as :meth:`VAE.forward`.

        :return: ``(reconstruction, mean, std)``.
        """
        obs_features = self.obs_encoder(state)[0]
        features = self.encoder(torch.cat([obs_features, action], -1))
        mean = self.mean(features)
        std = self.log_std(features).clamp(-4, 15).exp()  # VAE.forward's clamp
        latent_z = mean + std * torch.randn_like(std)
        return super().decode(obs_features, latent_z), mean, std

    def decode(self, state: Any, latent_z: torch.Tensor | None = None) -> torch.Tensor:
        """Decode dict observations and latents (None: drawn as :meth:`VAE.decode` draws
        them) to actions in ``[-max_action, max_action]``."""
        return super().decode(self.obs_encoder(state)[0], latent_z)
