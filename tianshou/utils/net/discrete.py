"""Actor and critic heads for discrete action spaces, and the noisy linear layer of NoisyNets."""

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tianshou.utils.net.common import (
    MLP,
    AbstractDiscreteActor,
    ModuleWithVectorOutput,
    TActionShape,
)


def dist_fn_categorical_from_logits(logits: torch.Tensor) -> torch.distributions.Categorical:
    """A categorical distribution from logits, for actors built with ``softmax_output=False``."""
    return torch.distributions.Categorical(logits=logits)


class DiscreteActor(AbstractDiscreteActor[Any]):
    """A categorical actor: per-action probabilities (or logits) from a body's features.

    >>> from tianshou.utils.net.common import Net
    >>> actor = DiscreteActor(preprocess_net=Net(state_shape=4, hidden_sizes=[8]), action_shape=2)
    >>> probs, _ = actor(np.zeros((3, 4)))
    >>> probs.shape, bool(torch.allclose(probs.sum(-1), torch.ones(3)))
    (torch.Size([3, 2]), True)

    :param preprocess_net: body mapping observations to features (``(obs, state) -> (x, state)``).
    :param action_shape: number (or shape) of actions; the output width is its product.
    :param hidden_sizes: hidden layers of the head.
    :param softmax_output: output probabilities (pair with ``Categorical(probs)``); False outputs
        logits (pair with :func:`dist_fn_categorical_from_logits`).
    """

    def __init__(
        self,
        *,
        preprocess_net: ModuleWithVectorOutput,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        softmax_output: bool = True,
    ) -> None:
        output_dim = int(np.prod(action_shape))
        super().__init__(output_dim)
        self.preprocess = preprocess_net
        self.last = MLP(
            input_dim=preprocess_net.get_output_dim(),
            output_dim=output_dim,
            hidden_sizes=hidden_sizes,
        )
        self.softmax_output = softmax_output

    def get_preprocess_net(self) -> ModuleWithVectorOutput:
        return self.preprocess

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[torch.Tensor, Any]:
        """Map observations to ``(probabilities or logits (batch, num_actions), state)``."""
        features, hidden = self.preprocess(obs, state)
        out = self.last(features)
        if self.softmax_output:
            out = F.softmax(out, dim=-1)
        return out, hidden


class DiscreteCritic(ModuleWithVectorOutput):
    """A state-value head: ``V(s)`` of shape ``(batch, last_size)``.

    :param preprocess_net: body mapping observations to features.
    :param hidden_sizes: hidden layers of the head.
    :param last_size: output width (1 for a scalar value).
    """

    def __init__(
        self,
        *,
        preprocess_net: ModuleWithVectorOutput,
        hidden_sizes: Sequence[int] = (),
        last_size: int = 1,
    ) -> None:
        super().__init__(output_dim=last_size)
        self.preprocess = preprocess_net
        self.last = MLP(
            input_dim=preprocess_net.get_output_dim(),
            output_dim=last_size,
            hidden_sizes=hidden_sizes,
        )

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> torch.Tensor:
        """Values of shape ``(batch, last_size)``."""
        features, _ = self.preprocess(obs, state)
        return self.last(features)


class NoisyLinear(nn.Module):
    """A linear layer with learned, factorised Gaussian weight noise (Fortunato et al. 2018).

    In train mode the weights are ``mu + sigma * eps`` with ``eps`` resampled by :meth:`sample`;
    in eval mode only the means are used. Pass it as ``linear_layer`` to :class:`MLP` or ``Net``.

    :param in_features: input width.
    :param out_features: output width.
    :param noisy_std: initial noise scale ``sigma_0``; sigmas start at ``sigma_0 / sqrt(in)``.
    """

    eps_p: torch.Tensor
    eps_q: torch.Tensor

    def __init__(self, in_features: int, out_features: int, noisy_std: float = 0.5) -> None:
        super().__init__()
        self.mu_W = nn.Parameter(torch.empty(out_features, in_features))
        self.sigma_W = nn.Parameter(torch.empty(out_features, in_features))
        self.mu_bias = nn.Parameter(torch.empty(out_features))
        self.sigma_bias = nn.Parameter(torch.empty(out_features))
        self.register_buffer("eps_p", torch.zeros(in_features))
        self.register_buffer("eps_q", torch.zeros(out_features))
        self.in_features = in_features
        self.out_features = out_features
        self.sigma = noisy_std
        self.reset()
        self.sample()

    def reset(self) -> None:
        """Re-initialise means uniformly in ``±1/sqrt(in)`` and sigmas to ``sigma_0/sqrt(in)``."""
        bound = 1.0 / np.sqrt(self.in_features)
        with torch.no_grad():
            self.mu_W.uniform_(-bound, bound)
            self.mu_bias.uniform_(-bound, bound)
            self.sigma_W.fill_(self.sigma * bound)
            self.sigma_bias.fill_(self.sigma * bound)

    @staticmethod
    def f(x: torch.Tensor) -> torch.Tensor:
        """Fresh noise shaped like ``x``: ``sign(z) * sqrt(|z|)`` for standard normal ``z``."""
        z = torch.randn_like(x)
        return z.sign().mul_(z.abs().sqrt_())

    def sample(self) -> None:
        """Draw new input and output noise vectors."""
        self.eps_p.copy_(self.f(self.eps_p))
        self.eps_q.copy_(self.f(self.eps_q))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            weight = self.mu_W + self.sigma_W * torch.outer(self.eps_q, self.eps_p)
            bias = self.mu_bias + self.sigma_bias * self.eps_q
        else:
            weight, bias = self.mu_W, self.mu_bias
        return F.linear(x, weight, bias)


def sample_noise(model: nn.Module) -> bool:
    """Resample the noise of every :class:`NoisyLinear` in ``model``; True if there was one."""
    found = False
    for module in model.modules():
        if isinstance(module, NoisyLinear):
            module.sample()
            found = True
    return found
