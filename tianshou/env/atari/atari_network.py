"""Convolutional networks for Atari frame stacks, and the high-level factories that build them.

All networks read observations of shape ``(batch, c, h, w)``, typically ``(B, 4, 84, 84)`` stacks
of grayscale frames as produced by :func:`~tianshou.env.atari.atari_wrapper.wrap_deepmind`. The
torso is the convolutional stack of the Nature DQN (Mnih et al. 2015). Observations may be
uint8 or float, numpy or torch: they are moved to the network's device first and converted to
float32 there, so that a replay buffer can keep frames as uint8 (a quarter of the memory of
float32) and a GPU receives the small uint8 batch. Wrap a network in
:class:`ScaledObsInputActionReprNet` to scale pixel values to ``[0, 1]`` inside the network.

* :class:`DQNet`: Q-values ``(B, A)``, or the torso's features (``features_only``) as the body
  of an actor, critic or quantile network;
* :class:`C51Net`: per-action return distributions ``(B, A, num_atoms)`` (C51);
* :class:`RainbowNet`: the same with dueling and/or noisy heads (Rainbow);
* :class:`QRDQNet`: per-action return quantiles ``(B, A, num_quantiles)`` (QR-DQN).
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.highlevel.env import Environments
from tianshou.highlevel.module.actor import ActorFactory, TDistFn
from tianshou.highlevel.module.core import TDevice
from tianshou.highlevel.module.intermediate import (
    IntermediateModule,
    IntermediateModuleFactory,
)
from tianshou.highlevel.params.dist_fn import DistributionFunctionFactoryCategorical
from tianshou.utils.net.action_repr import ActionReprNetWithVectorOutput
from tianshou.utils.net.discrete import DiscreteActor, NoisyLinear
from tianshou.utils.net.layers import InputDeviceMixin, TActionShape

DQN_HIDDEN_SIZE = 512
"""Width of the fully connected layer after the Nature-DQN torso (and of the Rainbow heads)."""


def layer_init(layer: nn.Module, std: float = np.sqrt(2), bias_const: float = 0.0) -> nn.Module:
    """Initialise ``layer`` in place: orthogonal weights with gain ``std``, constant bias.

    Orthogonal initialisation keeps the scale of activations stable through deep stacks; the
    default gain ``sqrt(2)`` is the one for ReLU layers. Pass it as ``layer_init`` to
    :class:`DQNet` (as the PPO Atari configuration does).

    >>> layer = layer_init(nn.Linear(8, 4), std=1.0)
    >>> bool(torch.allclose(layer.weight @ layer.weight.T, torch.eye(4), atol=1e-5))
    True

    :param layer: a module with ``weight`` (at least 2-d) and ``bias`` parameters, e.g. a linear
        or convolutional layer.
    :param std: gain of the orthogonal initialisation.
    :param bias_const: value every bias entry is set to.
    :return: ``layer`` itself, for use inside ``nn.Sequential(...)``.
    :raises TypeError: if ``layer`` lacks a weight or a bias tensor.
    """
    weight, bias = getattr(layer, "weight", None), getattr(layer, "bias", None)
    if not isinstance(weight, torch.Tensor) or not isinstance(bias, torch.Tensor):
        raise TypeError(
            f"layer_init needs a layer with weight and bias tensors (e.g. nn.Linear or "
            f"nn.Conv2d with bias=True), got {layer!r}"
        )
    nn.init.orthogonal_(weight, std)
    nn.init.constant_(bias, bias_const)
    return layer


def _identity(layer: nn.Module) -> nn.Module:
    return layer


def _as_float_tensor(obs: np.ndarray | torch.Tensor, device: torch.device | None) -> torch.Tensor:
    """``obs`` as a float32 tensor on ``device``, converted after the move (uint8 travels)."""
    obs_t = torch.as_tensor(obs, device=device)
    return obs_t if obs_t.dtype == torch.float32 else obs_t.to(torch.float32)


class ScaledObsInputActionReprNet(InputDeviceMixin, ActionReprNetWithVectorOutput):
    """Divides observations by ``denom`` before passing them to the wrapped network.

    With ``denom=255`` this maps uint8 pixel values to ``[0, 1]`` inside the network, so that
    the replay buffer stores the frames as uint8. Output, state and ``output_dim`` are the wrapped
    network's.

    >>> net = ScaledObsInputActionReprNet(DQNet(4, 84, 84, action_shape=6))
    >>> q_values, state = net(np.full((2, 4, 84, 84), 255, dtype=np.uint8))
    >>> q_values.shape, net.output_dim
    (torch.Size([2, 6]), 6)

    :param module: the network to feed the scaled observations, called as
        ``module(obs, state, info)``.
    :param denom: the divisor.
    """

    def __init__(self, module: ActionReprNetWithVectorOutput, denom: float = 255.0) -> None:
        super().__init__(module.get_output_dim())
        self.module = module
        self.denom = denom
        self._refresh_input_device()

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[Any, Any]:
        """The wrapped network's ``(output, state)`` for ``obs / denom``.

        Arrays and tensors are moved to the network's device before the division, which makes
        integer observations float32 and keeps floating ones in their precision.
        """
        if isinstance(obs, np.ndarray | torch.Tensor):
            scaled = torch.as_tensor(obs, device=self._input_device) / self.denom
        else:
            scaled = obs / self.denom
        return self.module(scaled, state, info)


class DQNet(InputDeviceMixin, ActionReprNetWithVectorOutput[Any]):
    """The Nature-DQN network (Mnih et al. 2015): three convolutions, then a Q-value head.

    The torso is ``Conv(32, 8x8, stride 4) -> Conv(64, 4x4, stride 2) -> Conv(64, 3x3,
    stride 1)``, each followed by a ReLU, then flattened (3136 features for 84x84 inputs). The
    full network adds ``Linear(512) -> ReLU -> Linear(num_actions)``; with ``features_only`` it
    ends after the torso (optionally followed by ``Linear(output_dim_added_layer) -> ReLU``),
    ready to be the ``preprocess_net`` of an actor, a critic or a quantile network.

    >>> net = DQNet(4, 84, 84, action_shape=6)
    >>> q_values, state = net(np.zeros((2, 4, 84, 84), dtype=np.uint8))
    >>> q_values.shape, state
    (torch.Size([2, 6]), None)
    >>> DQNet(4, 84, 84, action_shape=6, features_only=True).output_dim
    3136

    :param c: number of input channels (stacked frames).
    :param h: height of the input frames.
    :param w: width of the input frames.
    :param action_shape: number (or shape) of actions; the Q-value head has their product as
        width. Ignored with ``features_only``.
    :param features_only: end after the torso (and the added layer, if any): the output is the
        features, of width :attr:`output_dim`.
    :param output_dim_added_layer: with ``features_only``, the width of a fully connected ReLU
        layer appended to the torso (512 in the PPO Atari configuration); None appends nothing.
    :param layer_init: applied to every convolutional and linear layer as it is created, e.g.
        :func:`layer_init`; the default leaves PyTorch's initialisation.
    :raises ValueError: if ``output_dim_added_layer`` is given without ``features_only``.
    """

    def __init__(
        self,
        c: int,
        h: int,
        w: int,
        action_shape: TActionShape,
        features_only: bool = False,
        output_dim_added_layer: int | None = None,
        layer_init: Callable[[nn.Module], nn.Module] = _identity,
    ) -> None:
        if output_dim_added_layer is not None and not features_only:
            raise ValueError(
                f"output_dim_added_layer={output_dim_added_layer} applies only to a feature "
                "network: pass features_only=True, or leave output_dim_added_layer=None for the "
                "full Q-network"
            )
        torso = nn.Sequential(
            layer_init(nn.Conv2d(c, 32, kernel_size=8, stride=4)),
            nn.ReLU(inplace=True),
            layer_init(nn.Conv2d(32, 64, kernel_size=4, stride=2)),
            nn.ReLU(inplace=True),
            layer_init(nn.Conv2d(64, 64, kernel_size=3, stride=1)),
            nn.ReLU(inplace=True),
            nn.Flatten(),
        )
        with torch.no_grad():
            torso_dim = int(torso(torch.zeros(1, c, h, w)).shape[1])
        if not features_only:
            output_dim = int(np.prod(action_shape))
            net = nn.Sequential(
                torso,
                layer_init(nn.Linear(torso_dim, DQN_HIDDEN_SIZE)),
                nn.ReLU(inplace=True),
                layer_init(nn.Linear(DQN_HIDDEN_SIZE, output_dim)),
            )
        elif output_dim_added_layer is not None:
            output_dim = output_dim_added_layer
            net = nn.Sequential(
                torso, layer_init(nn.Linear(torso_dim, output_dim)), nn.ReLU(inplace=True)
            )
        else:
            output_dim, net = torso_dim, torso
        super().__init__(output_dim)
        self.net = net
        self.input_shape = (c, h, w)
        self._refresh_input_device()

    def _features(self, obs: np.ndarray | torch.Tensor) -> torch.Tensor:
        """``self.net`` applied to ``obs`` as float32 on the network's device."""
        obs_t = _as_float_tensor(obs, self._input_device)
        if obs_t.ndim != 4 or tuple(obs_t.shape[1:]) != self.input_shape:
            raise ValueError(
                f"{type(self).__name__} expects observations of shape (batch, "
                f"{', '.join(map(str, self.input_shape))}) = (batch, c, h, w), got "
                f"{tuple(obs_t.shape)}; stack frames channel-first (e.g. with wrap_deepmind)"
            )
        return self.net(obs_t)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """``(Q-values (B, A) or features (B, output_dim), state)``; ``state`` is passed
        through unchanged."""
        return self._features(obs), state


class C51Net(DQNet):
    """A :class:`DQNet` whose head outputs per-action return distributions (Bellemare et al.
    2017), for :class:`~tianshou.algorithm.modelfree.c51.C51`.

    >>> net = C51Net(c=4, h=84, w=84, action_shape=6, num_atoms=51)
    >>> probs, _ = net(np.zeros((2, 4, 84, 84)))
    >>> probs.shape
    torch.Size([2, 6, 51])

    :param c: number of input channels (stacked frames).
    :param h: height of the input frames.
    :param w: width of the input frames.
    :param action_shape: number (or shape) of actions.
    :param num_atoms: atoms of each distribution; must match the policy's ``num_atoms``.
    """

    def __init__(
        self, *, c: int, h: int, w: int, action_shape: TActionShape, num_atoms: int = 51
    ) -> None:
        action_num = int(np.prod(action_shape))
        super().__init__(c, h, w, [action_num * num_atoms])
        self.action_num = action_num
        self.num_atoms = num_atoms

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """``(probabilities (B, A, num_atoms), state)``, each row summing to 1 over the atoms."""
        logits = self._features(obs).view(-1, self.action_num, self.num_atoms)
        return logits.softmax(dim=-1), state


class RainbowNet(DQNet):
    """The Rainbow network (Hessel et al. 2018): the DQN torso with distributional heads that
    may be dueling (Wang et al. 2016) and noisy (Fortunato et al. 2018).

    Each head is ``Linear(512) -> ReLU -> Linear(...)`` on the torso's features. The
    advantage head outputs ``A * num_atoms`` logits; with ``is_dueling`` a value head outputs
    ``num_atoms`` more and the logits are ``V + A - mean_a(A)`` per atom. A softmax over the
    atoms gives the distributions. With ``is_noisy`` the heads use
    :class:`~tianshou.utils.net.discrete.NoisyLinear` layers, whose noise applies in train mode
    only and is redrawn by :class:`~tianshou.algorithm.modelfree.rainbow.RainbowDQN` before each
    update.

    >>> net = RainbowNet(c=4, h=84, w=84, action_shape=6, num_atoms=11)
    >>> probs, _ = net(np.zeros((2, 4, 84, 84)))
    >>> probs.shape, net.output_dim
    (torch.Size([2, 6, 11]), 66)

    :param c: number of input channels (stacked frames).
    :param h: height of the input frames.
    :param w: width of the input frames.
    :param action_shape: number (or shape) of actions.
    :param num_atoms: atoms of each distribution; must match the policy's ``num_atoms``.
    :param noisy_std: initial noise scale ``sigma_0`` of the noisy layers.
    :param is_dueling: add the value head and combine dueling-style.
    :param is_noisy: use noisy linear layers in the heads (else plain linear ones).
    """

    def __init__(
        self,
        *,
        c: int,
        h: int,
        w: int,
        action_shape: TActionShape,
        num_atoms: int = 51,
        noisy_std: float = 0.5,
        is_dueling: bool = True,
        is_noisy: bool = True,
    ) -> None:
        super().__init__(c, h, w, action_shape, features_only=True)
        self.action_num = int(np.prod(action_shape))
        self.num_atoms = num_atoms
        self.is_dueling = is_dueling
        self.is_noisy = is_noisy
        self.noisy_std = noisy_std
        feature_dim = self.output_dim
        self.Q = self._head(feature_dim, self.action_num * num_atoms)
        if is_dueling:
            self.V = self._head(feature_dim, num_atoms)
        self._output_dim = self.action_num * num_atoms  # the heads' width, not the torso's
        self._refresh_input_device()

    def _head(self, input_dim: int, output_dim: int) -> nn.Sequential:
        return nn.Sequential(
            self._linear(input_dim, DQN_HIDDEN_SIZE),
            nn.ReLU(inplace=True),
            self._linear(DQN_HIDDEN_SIZE, output_dim),
        )

    def _linear(self, in_features: int, out_features: int) -> nn.Module:
        if self.is_noisy:
            return NoisyLinear(in_features, out_features, self.noisy_std)
        return nn.Linear(in_features, out_features)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """``(probabilities (B, A, num_atoms), state)``, each row summing to 1 over the atoms."""
        features = self._features(obs)
        q_BAN = self.Q(features).view(-1, self.action_num, self.num_atoms)
        if self.is_dueling:
            v_B1N = self.V(features).view(-1, 1, self.num_atoms)
            q_BAN = q_BAN - q_BAN.mean(dim=1, keepdim=True) + v_B1N
        return q_BAN.softmax(dim=2), state


class QRDQNet(DQNet):
    """A :class:`DQNet` whose head outputs ``num_quantiles`` return quantiles per action
    (Dabney et al. 2017), for :class:`~tianshou.algorithm.modelfree.qrdqn.QRDQN`.

    >>> net = QRDQNet(c=4, h=84, w=84, action_shape=6, num_quantiles=8)
    >>> quantiles, _ = net(np.zeros((2, 4, 84, 84)))
    >>> quantiles.shape
    torch.Size([2, 6, 8])

    :param c: number of input channels (stacked frames).
    :param h: height of the input frames.
    :param w: width of the input frames.
    :param action_shape: number (or shape) of actions.
    :param num_quantiles: quantiles per action (200 in the paper); must match the algorithm's.
    """

    def __init__(
        self, *, c: int, h: int, w: int, action_shape: TActionShape, num_quantiles: int = 200
    ) -> None:
        action_num = int(np.prod(action_shape))
        super().__init__(c, h, w, [action_num * num_quantiles])
        self.action_num = action_num
        self.num_quantiles = num_quantiles

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any | None = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """``(quantiles (B, A, num_quantiles), state)``."""
        return self._features(obs).view(-1, self.action_num, self.num_quantiles), state


def _frame_stack_shape(envs: Environments) -> tuple[int, int, int]:
    """The environments' observation shape as ``(c, h, w)``, or an error saying what is needed."""
    shape = envs.get_observation_shape()
    shape_tuple = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape_tuple) != 3:
        raise ValueError(
            f"the Atari networks need (c, h, w) observations, the environments have shape "
            f"{shape_tuple}; stack and warp the frames (e.g. wrap_deepmind(..., frame_stack=4))"
        )
    c, h, w = (int(s) for s in shape_tuple)
    return c, h, w


class ActorFactoryAtariDQN(ActorFactory):
    """Builds a categorical actor on a :class:`DQNet` for Atari environments (e.g. for PPO).

    The actor is a :class:`~tianshou.utils.net.discrete.DiscreteActor` that outputs logits
    (``softmax_output=False``) with a linear head on the DQNet, whose layers are initialised by
    :func:`layer_init`; :meth:`create_dist_fn` builds the matching categorical distribution.

    :param scale_obs: wrap the DQNet in :class:`ScaledObsInputActionReprNet`, dividing the
        (uint8) observations by 255 inside the network.
    :param features_only: use the DQNet's torso features as the actor's body (the usual choice
        for actor-critic methods) rather than its Q-value output.
    :param output_dim_added_layer: with ``features_only``, the width of a fully connected layer
        appended to the torso (see :class:`DQNet`).
    """

    def __init__(
        self,
        scale_obs: bool = True,
        features_only: bool = False,
        output_dim_added_layer: int | None = None,
    ) -> None:
        self.scale_obs = scale_obs
        self.features_only = features_only
        self.output_dim_added_layer = output_dim_added_layer

    def create_module(self, envs: Environments, device: TDevice) -> DiscreteActor:
        """The actor for the environments' (c, h, w) observations and actions, on ``device``."""
        c, h, w = _frame_stack_shape(envs)
        action_shape = envs.get_action_shape()
        body: ActionReprNetWithVectorOutput = DQNet(
            c,
            h,
            w,
            action_shape=action_shape,
            features_only=self.features_only,
            output_dim_added_layer=self.output_dim_added_layer,
            layer_init=layer_init,
        )
        if self.scale_obs:
            body = ScaledObsInputActionReprNet(body)
        actor = DiscreteActor(preprocess_net=body, action_shape=action_shape, softmax_output=False)
        return actor.to(device)

    def create_dist_fn(self, envs: Environments) -> TDistFn | None:
        """A categorical distribution over the actor's logits."""
        return DistributionFunctionFactoryCategorical(is_probs_input=False).create_dist_fn(envs)


class IntermediateModuleFactoryAtariDQN(IntermediateModuleFactory):
    """Builds a :class:`DQNet` as an intermediate module (e.g. the Q-network of DQN, or the body
    of a quantile network) for Atari environments.

    Observations are not scaled: use frames scaled by the environment, or accept raw pixel
    values.

    :param features_only: build the feature network (torso only, 3136 features for 84x84
        frames) instead of the Q-network.
    :param net_only: return the bare ``nn.Sequential`` (``DQNet.net``), a plain tensor-to-tensor
        module without the ``(obs, state, info) -> (output, state)`` interface and without the
        conversion of numpy or uint8 inputs (e.g. the feature net of an intrinsic curiosity
        module).
    """

    def __init__(self, features_only: bool = False, net_only: bool = False) -> None:
        self.features_only = features_only
        self.net_only = net_only

    def create_intermediate_module(self, envs: Environments, device: TDevice) -> IntermediateModule:
        """The DQNet (or its ``net``) on ``device`` with its output width."""
        c, h, w = _frame_stack_shape(envs)
        dqn = DQNet(
            c, h, w, action_shape=envs.get_action_shape(), features_only=self.features_only
        ).to(device)
        module: nn.Module = dqn.net if self.net_only else dqn
        return IntermediateModule(module, dqn.output_dim)


class IntermediateModuleFactoryAtariDQNFeatures(IntermediateModuleFactoryAtariDQN):
    """Builds the bare feature torso of a :class:`DQNet` (``features_only=True, net_only=True``)."""

    def __init__(self) -> None:
        super().__init__(features_only=True, net_only=True)


__all__ = [
    "ActorFactoryAtariDQN",
    "C51Net",
    "DQNet",
    "IntermediateModuleFactoryAtariDQN",
    "IntermediateModuleFactoryAtariDQNFeatures",
    "QRDQNet",
    "RainbowNet",
    "ScaledObsInputActionReprNet",
    "layer_init",
]
