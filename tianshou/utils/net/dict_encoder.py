"""A network for dict observations: flat entries are concatenated, images go through a CNN.

Robots with several sensors, goal-conditioned tasks and games often observe a
``gymnasium.spaces.Dict``; once collected, an observation batch is a ``Batch`` with one array
per key. :class:`DictEncoder` reads such a batch, so it can stand wherever a
:class:`~tianshou.utils.net.common.Net` stands: as an actor's or critic's ``preprocess_net``
(it exposes :attr:`output_dim`) or, with an ``action_shape``, as a Q-network.

How each entry is read, from its subspace:

* an *image*, a ``uint8`` ``Box`` with three axes, is scaled to ``[0, 1]`` and encoded by a
  small CNN of its own. Its layout is channels-last (``H x W x C``, as most envs render) when
  the last axis has 1, 3 or 4 entries and the first does not, else channels-first
  (``C x H x W``);
* a ``Discrete`` entry becomes a one-hot vector;
* any other ``Box``, ``MultiBinary`` or ``MultiDiscrete`` entry is flattened as floats.

The encoded entries are concatenated in the order of ``keys`` and fed to an :class:`MLP`.
The rest of the library's support for dict observations and other structured spaces is in
:mod:`tianshou.spaces`.
"""

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from tianshou.utils.net.action_repr import ActionReprNetWithVectorOutput
from tianshou.utils.net.layers import (
    MLP,
    InputDeviceMixin,
    ModuleType,
    TActionShape,
    TLinearLayer,
    as_shape_tuple,
)

IMAGE_CHANNEL_COUNTS = (1, 3, 4)
"""Sizes of an image's channel axis, which tell channels-last from channels-first layouts."""


def is_image_space(space: gym.Space) -> bool:
    """Whether :class:`DictEncoder` reads ``space`` as an image: a ``uint8`` Box of 3 axes."""
    return (
        isinstance(space, gym.spaces.Box)
        and space.dtype == np.uint8
        and space.shape is not None
        and len(space.shape) == 3
    )


def _is_channels_last(shape: tuple[int, ...]) -> bool:
    return shape[-1] in IMAGE_CHANNEL_COUNTS and shape[0] not in IMAGE_CHANNEL_COUNTS


class ImageEncoder(nn.Module):
    """A small CNN for one ``uint8`` image entry: two strided 3x3 convolutions, flattened.

    :param shape: the shape of one image, channels-last or channels-first (see the module doc).
    :param channels: output channels of the convolutions.
    """

    def __init__(self, shape: tuple[int, int, int], channels: Sequence[int] = (16, 32)) -> None:
        super().__init__()
        if not channels:
            raise ValueError("an image encoder needs at least one convolution channel count")
        self.channels_last = _is_channels_last(shape)
        in_channels = shape[-1] if self.channels_last else shape[0]
        layers: list[nn.Module] = []
        for out_channels in channels:
            layers += [nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1), nn.ReLU()]
            in_channels = out_channels
        self.net = nn.Sequential(*layers, nn.Flatten())
        height, width = (shape[0], shape[1]) if self.channels_last else (shape[1], shape[2])
        with torch.no_grad():
            probe = torch.zeros(1, shape[-1] if self.channels_last else shape[0], height, width)
            self.output_dim = int(self.net(probe).shape[1])

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Map ``(batch, *shape)`` images (0..255) to ``(batch, output_dim)`` features."""
        x = images.float() / 255.0
        if self.channels_last:
            x = x.permute(0, 3, 1, 2)
        return self.net(x)


class DictEncoder(InputDeviceMixin, ActionReprNetWithVectorOutput[Any]):
    """An MLP over the concatenated entries of dict observations, images through CNNs.

    >>> space = gym.spaces.Dict({
    ...     "pos": gym.spaces.Box(-1.0, 1.0, (2,)),
    ...     "goal": gym.spaces.Discrete(4),
    ...     "camera": gym.spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8),
    ... })
    >>> net = DictEncoder(observation_space=space, hidden_sizes=[32])
    >>> obs = {key: np.stack([sub.sample(), sub.sample()]) for key, sub in space.items()}
    >>> features, state = net(obs)
    >>> features.shape, net.output_dim
    (torch.Size([2, 32]), 32)

    :param observation_space: the ``Dict`` observation space of one env.
    :param action_shape: shape (or number) of outputs of a final linear layer, e.g. one
        Q-value per action; 0 (the default) makes the encoder a body whose output is its last
        hidden layer, for an actor's or critic's ``preprocess_net``.
    :param hidden_sizes: widths of the MLP's hidden layers.
    :param activation: activation after each hidden layer.
    :param keys: the entries read, in concatenation order; None reads all of them (in the
        space's order).
    :param cnn_channels: output channels of the convolutions of each image encoder.
    """

    def __init__(
        self,
        *,
        observation_space: gym.spaces.Dict,
        action_shape: TActionShape = 0,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: ModuleType | None = nn.ReLU,
        keys: Sequence[str] | None = None,
        cnn_channels: Sequence[int] = (16, 32),
    ) -> None:
        if not isinstance(observation_space, gym.spaces.Dict):
            raise TypeError(
                f"DictEncoder needs a gymnasium.spaces.Dict observation space, got "
                f"{observation_space}; use Net for flat observations"
            )
        keys = list(observation_space.keys()) if keys is None else list(keys)
        missing = [key for key in keys if key not in observation_space.spaces]
        if not keys or missing:
            raise ValueError(
                f"keys must name at least one entry of the observation space "
                f"{sorted(observation_space.spaces)}; got {keys}"
            )
        images = {}
        flat_dims = {}
        for key in keys:
            space = observation_space[key]
            if is_image_space(space):
                images[key] = ImageEncoder(tuple(space.shape), cnn_channels)  # type: ignore[arg-type]
            else:
                flat_dims[key] = _flat_dim(key, space)
        input_dim = sum(flat_dims.values()) + sum(enc.output_dim for enc in images.values())
        mlp = MLP(
            input_dim=input_dim,
            output_dim=int(np.prod(as_shape_tuple(action_shape))),
            hidden_sizes=hidden_sizes,
            activation=activation,
        )
        super().__init__(mlp.output_dim)
        self.keys = keys
        self.image_encoders = nn.ModuleDict(images)
        self._discrete_sizes = {
            key: int(observation_space[key].n)  # type: ignore[attr-defined]
            for key in flat_dims
            if isinstance(observation_space[key], gym.spaces.Discrete)
        }
        self._shapes = {key: tuple(observation_space[key].shape or ()) for key in keys}
        self.model = mlp
        self._refresh_input_device()

    def forward(
        self, obs: Any, state: Any = None, info: dict[str, Any] | None = None
    ) -> tuple[torch.Tensor, Any]:
        """Map a batch of dict observations (a ``Batch`` or a dict of arrays) to
        ``(output (batch, output_dim), state)``."""
        parts = [self._encode(key, _entry(obs, key)) for key in self.keys]
        return self.model(torch.cat(parts, dim=1)), state

    def _encode(self, key: str, value: Any) -> torch.Tensor:
        x = torch.as_tensor(value, device=self._input_device)
        if tuple(x.shape[1:]) != self._shapes[key]:
            raise ValueError(
                f"observation entry {key!r} has shape {tuple(x.shape)}, but its space needs "
                f"(batch, *{self._shapes[key]})"
            )
        if key in self.image_encoders:
            return self.image_encoders[key](x)
        if key in self._discrete_sizes:
            one_hot = nn.functional.one_hot(x.long(), self._discrete_sizes[key])
            return one_hot.float()
        return x.float().flatten(1)


def _entry(obs: Any, key: str) -> Any:
    try:
        return obs[key]
    except (KeyError, TypeError, IndexError) as error:
        raise ValueError(
            f"DictEncoder expects dict observations with the entry {key!r}, got "
            f"{type(obs).__name__}"
        ) from error


def _flat_dim(key: str, space: gym.Space) -> int:
    """The width of a non-image entry once encoded (one-hot for ``Discrete``)."""
    if isinstance(space, gym.spaces.Discrete):
        return int(space.n)
    if isinstance(space, gym.spaces.Box | gym.spaces.MultiBinary | gym.spaces.MultiDiscrete):
        return int(np.prod(space.shape))
    raise TypeError(
        f"DictEncoder reads Box, Discrete, MultiBinary and MultiDiscrete entries; entry {key!r} "
        f"has the space {space} (flatten nested spaces into the top-level Dict)"
    )


class DictActionCritic(nn.Module):
    """``Q(s, a)`` for dict observations (SAC, DDPG, TD3, CQL, TD3BC, BCQ, ...): the
    observation's encoded entries (as :class:`DictEncoder` reads them, without hidden layers)
    are concatenated with the flattened action and fed to an MLP with one output.

    >>> space = gym.spaces.Dict({"pos": gym.spaces.Box(-1.0, 1.0, (2,)),
    ...                          "goal": gym.spaces.Discrete(3)})
    >>> critic = DictActionCritic(observation_space=space, action_shape=2, hidden_sizes=[16])
    >>> obs = {"pos": np.zeros((4, 2)), "goal": np.array([0, 1, 2, 0])}
    >>> critic(obs, np.zeros((4, 2))).shape
    torch.Size([4, 1])

    The same network with ``EnsembleLinear`` layers is the critic ensemble of REDQ: the
    encoding is shared, each member has an MLP of its own, and the output has shape
    ``(ensemble_size, batch, 1)``:

    >>> import functools
    >>> from tianshou.utils.net.layers import EnsembleLinear
    >>> ensemble = DictActionCritic(observation_space=space, action_shape=2, hidden_sizes=[16],
    ...                             linear_layer=functools.partial(EnsembleLinear, 5))
    >>> ensemble(obs, np.zeros((4, 2))).shape
    torch.Size([5, 4, 1])

    It is also GAIL's discriminator for dict observations: its one output is the logit that a
    transition ``(s, a)`` is the expert's.

    :param observation_space: the ``Dict`` observation space of one env.
    :param action_shape: shape (or size) of one action.
    :param hidden_sizes: widths of the MLP's hidden layers.
    :param activation: activation after each hidden layer.
    :param keys: the observation entries read (see :class:`DictEncoder`).
    :param cnn_channels: output channels of the convolutions of each image encoder.
    :param linear_layer: factory ``(in_features, out_features) -> module`` of the MLP's affine
        layers; ``functools.partial(EnsembleLinear, n)`` makes an ensemble of ``n`` critics.
    """

    def __init__(
        self,
        *,
        observation_space: gym.spaces.Dict,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (64, 64),
        activation: ModuleType | None = nn.ReLU,
        keys: Sequence[str] | None = None,
        cnn_channels: Sequence[int] = (16, 32),
        linear_layer: TLinearLayer = nn.Linear,
    ) -> None:
        super().__init__()
        self.encoder = DictEncoder(
            observation_space=observation_space,
            hidden_sizes=(),
            keys=keys,
            cnn_channels=cnn_channels,
        )
        self.action_dim = int(np.prod(as_shape_tuple(action_shape)))
        self.head = MLP(
            input_dim=self.encoder.output_dim + self.action_dim,
            output_dim=1,
            hidden_sizes=hidden_sizes,
            activation=activation,
            linear_layer=linear_layer,
        )

    def forward(self, obs: Any, act: Any, info: dict[str, Any] | None = None) -> torch.Tensor:
        """Q-values of shape ``(batch, 1)`` (``(ensemble_size, batch, 1)`` for an ensemble) for
        dict observations and actions ``(batch, ...)``."""
        features, _ = self.encoder(obs)
        act = torch.as_tensor(act, device=features.device, dtype=torch.float32).flatten(1)
        if act.shape[1] != self.action_dim:
            raise ValueError(
                f"DictActionCritic expects actions of {self.action_dim} entries, got shape "
                f"{tuple(act.shape)}"
            )
        return self.head(torch.cat([features, act], dim=1))
