"""Networks for discrete action spaces.

Actor and critic heads, the quantile networks of IQN and FQF (with their cosine tau embedding
and FQF's fraction proposal), the noisy linear layer of NoisyNets and the intrinsic curiosity
module of ICM.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tianshou.utils.net.action_repr import AbstractDiscreteActor
from tianshou.utils.net.layers import MLP, ModuleWithVectorOutput, TActionShape


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
            # mu + sigma * noise, each as one fused kernel (and one autograd node)
            weight = torch.addcmul(self.mu_W, self.sigma_W, torch.outer(self.eps_q, self.eps_p))
            bias = torch.addcmul(self.mu_bias, self.sigma_bias, self.eps_q)
        else:
            weight, bias = self.mu_W, self.mu_bias
        return F.linear(x, weight, bias)


def noisy_layers(model: nn.Module) -> list[NoisyLinear]:
    """The :class:`NoisyLinear` layers in ``model`` (itself included), each once, in the order
    of ``model.modules()``.

    A plain walk of the module tree: ``model.modules()`` builds a name for every sub-module,
    which Rainbow would pay twice per network on every update.
    """
    found: list[NoisyLinear] = []
    seen: set[int] = set()
    pending = [model]
    while pending:
        module = pending.pop()
        if id(module) in seen:
            continue
        seen.add(id(module))
        if isinstance(module, NoisyLinear):
            found.append(module)
        children = [child for child in module._modules.values() if child is not None]
        pending.extend(reversed(children))
    return found


def sample_noise(model: nn.Module) -> bool:
    """Resample the noise of every :class:`NoisyLinear` in ``model``; True if there was one."""
    layers = noisy_layers(model)
    for layer in layers:
        layer.sample()
    return bool(layers)


class CosineEmbeddingNetwork(nn.Module):
    """Embeds quantile fractions ``tau`` as ``ReLU(W cos(pi * i * tau) + b)``, ``i = 1..n``.

    This is the tau embedding of IQN (Dabney et al. 2018, eq. 4): the cosine basis lets a linear
    layer represent smooth functions of ``tau``, which the quantile head then combines with the
    state features by an element-wise product.

    >>> embed = CosineEmbeddingNetwork(num_cosines=8, embedding_dim=16)
    >>> embed(torch.rand(3, 5)).shape
    torch.Size([3, 5, 16])

    :param num_cosines: number ``n`` of cosine basis functions.
    :param embedding_dim: width of the embedding; must equal the width of the state features
        it is multiplied with.
    """

    frequencies: torch.Tensor

    def __init__(self, num_cosines: int, embedding_dim: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(num_cosines, embedding_dim), nn.ReLU())
        self.num_cosines = num_cosines
        self.embedding_dim = embedding_dim
        # pi * i, i = 1..n: built once and moved with the module, not rebuilt on every call; not
        # persistent, so state dicts hold only the linear layer's weights
        frequencies = torch.arange(1, num_cosines + 1, dtype=torch.float32) * np.pi
        self.register_buffer("frequencies", frequencies, persistent=False)

    def forward(self, taus: torch.Tensor) -> torch.Tensor:
        """Map fractions of shape ``(batch, N)`` to embeddings ``(batch, N, embedding_dim)``."""
        cosines_BNC = torch.cos(taus.unsqueeze(-1) * self.frequencies.to(taus.dtype))
        return self.net(cosines_BNC)


class ImplicitQuantileNetwork(DiscreteCritic):
    """The quantile network of IQN (Dabney et al. 2018): ``Z_tau(s, a)`` at random fractions.

    The state features ``psi(s)`` of width ``d`` are multiplied element-wise with the cosine
    embedding ``phi(tau)`` of each sampled fraction, and the head (``self.last``) maps every
    product to one quantile value per action.

    >>> from tianshou.utils.net.common import Net
    >>> body = Net(state_shape=4, hidden_sizes=[16])
    >>> iqn = ImplicitQuantileNetwork(preprocess_net=body, action_shape=2, num_cosines=8)
    >>> (quantiles, taus), state = iqn(np.zeros((3, 4)), sample_size=5)
    >>> quantiles.shape, taus.shape
    (torch.Size([3, 2, 5]), torch.Size([3, 5]))

    :param preprocess_net: body mapping observations to features (``(obs, state) -> (x, state)``).
    :param action_shape: number (or shape) of actions; the quantiles are given per action.
    :param hidden_sizes: hidden layers of the head applied to each feature-embedding product.
    :param num_cosines: number of cosine basis functions of the tau embedding.
    """

    def __init__(
        self,
        *,
        preprocess_net: ModuleWithVectorOutput,
        action_shape: TActionShape,
        hidden_sizes: Sequence[int] = (),
        num_cosines: int = 64,
    ) -> None:
        super().__init__(
            preprocess_net=preprocess_net,
            hidden_sizes=hidden_sizes,
            last_size=int(np.prod(action_shape)),
        )
        self.input_dim = preprocess_net.get_output_dim()
        self.embed_model = CosineEmbeddingNetwork(num_cosines, self.input_dim)

    def _compute_quantiles(self, features: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """Quantile values ``(batch, num_actions, N)`` from features ``(batch, d)`` and ``taus``.

        :param features: state features of the preprocess net, shape ``(batch, d)``.
        :param taus: fractions in ``[0, 1]`` at which to evaluate the quantiles, ``(batch, N)``.
        """
        batch_size, sample_size = taus.shape
        products_BND = features.unsqueeze(1) * self.embed_model(taus)
        quantiles_BNA = self.last(products_BND.reshape(batch_size * sample_size, -1)).view(
            batch_size, sample_size, -1
        )
        return quantiles_BNA.transpose(1, 2)

    # The signature differs from DiscreteCritic.forward on purpose: it matches Tianshou 2.x.
    def forward(  # type: ignore[override]
        self,
        obs: np.ndarray | torch.Tensor,
        sample_size: int,
        **kwargs: Any,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], Any]:
        """Quantiles at ``sample_size`` uniformly drawn fractions per observation.

        :param obs: batch of observations.
        :param sample_size: number ``N`` of fractions drawn per observation.
        :param kwargs: ``state`` is passed on to the preprocess net; other keys are ignored.
        :return: ``((quantiles (batch, num_actions, N), taus (batch, N)), state)``.
        """
        features, hidden = self.preprocess(obs, state=kwargs.get("state"))
        taus = torch.rand(
            features.shape[0], sample_size, dtype=features.dtype, device=features.device
        )
        return (self._compute_quantiles(features, taus), taus), hidden


class FractionProposalNetwork(nn.Module):
    """The fraction proposal network of FQF (Yang et al. 2019): where to place the quantiles.

    A softmax over a linear layer of the (detached) state embedding gives ``N`` positive
    widths; their cumulative sum gives fractions ``0 = tau_0 < tau_1 < ... < tau_N = 1``. The
    layer starts near zero (xavier uniform with gain 0.01, zero bias), so the initial proposal is
    close to the uniform one of QR-DQN.

    >>> proposal = FractionProposalNetwork(num_fractions=4, embedding_dim=8)
    >>> taus, tau_hats, entropies = proposal(torch.randn(3, 8))
    >>> taus.shape, tau_hats.shape, entropies.shape
    (torch.Size([3, 5]), torch.Size([3, 4]), torch.Size([3]))

    :param num_fractions: number ``N`` of quantile fractions (intervals) to propose.
    :param embedding_dim: width of the state embeddings it reads.
    """

    def __init__(self, num_fractions: int, embedding_dim: int) -> None:
        super().__init__()
        self.net = nn.Linear(embedding_dim, num_fractions)
        nn.init.xavier_uniform_(self.net.weight, gain=0.01)
        nn.init.zeros_(self.net.bias)
        self.num_fractions = num_fractions
        self.embedding_dim = embedding_dim

    def forward(
        self, obs_embeddings: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Propose fractions for state embeddings of shape ``(batch, embedding_dim)``.

        :return: ``taus`` ``(batch, N + 1)`` with ``tau_0 = 0`` and ``tau_N = 1`` exactly;
            ``tau_hats`` ``(batch, N)``, the interval midpoints at which FQF evaluates the
            quantiles (detached: the fraction loss reaches the proposal through ``taus``);
            ``entropies`` ``(batch,)`` of the proposed widths, for an entropy bonus.
        """
        dist = torch.distributions.Categorical(logits=self.net(obs_embeddings))
        # A float32 cumulative sum of near-one-hot probabilities can overshoot 1 by a rounding
        # step; clamping keeps the fractions in [0, 1] and non-decreasing up to tau_N = 1.
        inner_taus = torch.cumsum(dist.probs[:, :-1], dim=1).clamp(max=1.0)
        # Pinning the ends avoids a cumulative sum that ends at 0.99999994 instead of 1.
        zeros = inner_taus.new_zeros(inner_taus.shape[0], 1)
        taus = torch.cat([zeros, inner_taus, zeros + 1.0], dim=1)
        tau_hats = ((taus[:, :-1] + taus[:, 1:]) / 2.0).detach()
        return taus, tau_hats, dist.entropy()


class FullQuantileFunction(ImplicitQuantileNetwork):
    """The quantile function of FQF (Yang et al. 2019): IQN's network at proposed fractions.

    Quantiles are evaluated at the midpoints ``tau_hat`` of the fractions proposed by a
    :class:`FractionProposalNetwork`. In training mode it also returns the quantiles at the inner
    fractions ``tau_1 .. tau_{N-1}``, which the fraction loss needs; they are computed without
    gradient, since that loss must update only the proposal network.

    >>> from tianshou.utils.net.common import Net
    >>> body = Net(state_shape=4, hidden_sizes=[16])
    >>> fqf = FullQuantileFunction(preprocess_net=body, action_shape=2, num_cosines=8)
    >>> proposal = FractionProposalNetwork(num_fractions=5, embedding_dim=16)
    >>> (quantiles, fractions, quantiles_tau), state = fqf(np.zeros((3, 4)), proposal)
    >>> quantiles.shape, quantiles_tau.shape
    (torch.Size([3, 2, 5]), torch.Size([3, 2, 4]))

    :param preprocess_net: body mapping observations to features (``(obs, state) -> (x, state)``).
    :param action_shape: number (or shape) of actions; the quantiles are given per action.
    :param hidden_sizes: hidden layers of the head applied to each feature-embedding product.
    :param num_cosines: number of cosine basis functions of the tau embedding.
    """

    def forward(  # type: ignore[override]
        self,
        obs: np.ndarray | torch.Tensor,
        propose_model: FractionProposalNetwork,
        fractions: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
        **kwargs: Any,
    ) -> tuple[
        tuple[
            torch.Tensor,
            tuple[torch.Tensor, torch.Tensor, torch.Tensor],
            torch.Tensor | None,
        ],
        Any,
    ]:
        """Quantiles at proposed (or given) fractions.

        :param obs: batch of observations.
        :param propose_model: proposes the fractions from the detached state features when
            ``fractions`` is None.
        :param fractions: ``(taus, tau_hats, entropies)`` as returned by ``propose_model``, to
            evaluate the quantiles at fractions proposed earlier (e.g. for the target network).
        :param kwargs: ``state`` is passed on to the preprocess net; other keys are ignored.
        :return: ``((quantiles (batch, num_actions, N), fractions, quantiles_tau), state)``,
            where ``quantiles_tau`` ``(batch, num_actions, N - 1)`` holds the gradient-free
            quantiles at the inner taus in training mode and is None in eval mode.
        """
        features, hidden = self.preprocess(obs, state=kwargs.get("state"))
        if fractions is None:
            fractions = propose_model(features.detach())
        taus, tau_hats, _ = fractions
        quantiles = self._compute_quantiles(features, tau_hats)
        quantiles_tau = None
        if self.training:
            with torch.no_grad():
                quantiles_tau = self._compute_quantiles(features, taus[:, 1:-1])
        return (quantiles, fractions, quantiles_tau), hidden


class IntrinsicCuriosityModule(nn.Module):
    """The intrinsic curiosity module of ICM (Pathak et al. 2017).

    A feature net embeds both states; the inverse model predicts the action from
    ``[phi(s1), phi(s2)]``, which shapes the features to keep what the agent controls, and the
    forward model predicts ``phi(s2)`` from ``[phi(s1), one_hot(a)]``. Its per-sample error is
    both the forward loss and the curiosity reward.

    >>> from tianshou.utils.net.common import MLP
    >>> icm = IntrinsicCuriosityModule(
    ...     feature_net=MLP(input_dim=4, output_dim=8), feature_dim=8, action_dim=3
    ... )
    >>> mse, act_logits = icm(np.zeros((5, 4)), np.array([0, 1, 2, 0, 1]), np.ones((5, 4)))
    >>> mse.shape, act_logits.shape
    (torch.Size([5]), torch.Size([5, 3]))

    :param feature_net: maps a batch of observations to features of shape ``(batch,
        feature_dim)``.
    :param feature_dim: width of the features.
    :param action_dim: number of discrete actions.
    :param hidden_sizes: hidden layers of both the forward and the inverse model.
    :param device: device the inputs are converted to; the module itself is not moved.
    """

    def __init__(
        self,
        *,
        feature_net: nn.Module,
        feature_dim: int,
        action_dim: int,
        hidden_sizes: Sequence[int] = (),
        device: str | torch.device = "cpu",
    ) -> None:
        super().__init__()
        self.feature_net = feature_net
        self.forward_model = MLP(
            input_dim=feature_dim + action_dim,
            output_dim=feature_dim,
            hidden_sizes=hidden_sizes,
        )
        self.inverse_model = MLP(
            input_dim=feature_dim * 2,
            output_dim=action_dim,
            hidden_sizes=hidden_sizes,
        )
        self.feature_dim = feature_dim
        self.action_dim = action_dim
        self.device = device

    def forward(
        self,
        s1: np.ndarray | torch.Tensor,
        act: np.ndarray | torch.Tensor,
        s2: np.ndarray | torch.Tensor,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Forward-model error and inverse-model logits for transitions ``(s1, act, s2)``.

        :param s1: observations before the actions.
        :param act: integer actions of shape ``(batch,)``.
        :param s2: observations after the actions.
        :param kwargs: ignored.
        :return: ``(mse (batch,), act_hat logits (batch, action_dim))`` where
            ``mse = 0.5 * ||phi2_hat - phi2||^2`` per sample.
        """
        phi1 = self.feature_net(torch.as_tensor(s1, device=self.device, dtype=torch.float32))
        phi2 = self.feature_net(torch.as_tensor(s2, device=self.device, dtype=torch.float32))
        act_one_hot = F.one_hot(
            torch.as_tensor(act, device=self.device, dtype=torch.long), self.action_dim
        )
        phi2_hat = self.forward_model(torch.cat([phi1, act_one_hot.to(phi1.dtype)], dim=1))
        mse_loss = 0.5 * (phi2_hat - phi2).pow(2).sum(dim=1)
        act_hat = self.inverse_model(torch.cat([phi1, phi2], dim=1))
        return mse_loss, act_hat
