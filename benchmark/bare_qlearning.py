"""Bare PyTorch updates of the Q-learning family: the speed limits for ``update_rate_qlearning``.

Nothing here is tianshou: plain tensors, ``nn.Sequential`` networks and torch's fused Adam, doing
exactly the work one gradient step of C51, Rainbow, QR-DQN, IQN, FQF or BDQN needs: a minibatch
gather from preallocated tensors, the target network's (and, for the greedy next action, the
online network's) forward pass on the bootstrap observations, the loss, one backward pass and one
optimizer step (two for FQF), and a full target-network copy every ``TARGET_UPDATE_FREQ``
updates, at the same point of the update as the library (after the targets are computed).

The n-step reward sums, bootstrap discounts and bootstrap rows, which the library derives from
the buffer at sample time, are computed once here by :func:`nstep_targets` and stored with the
transitions; the network work is unchanged. Rainbow also resamples the noise of every noisy
layer (online, then target) before each update, samples in proportion to stored priorities,
weights its loss by ``(p / p_min) ** -beta`` normalised by the batch maximum, and writes the new
priorities ``(|cross-entropy| + eps) ** alpha`` back, as the library's prioritized buffer does.

Shapes (CartPole-v1 for the first five, Hopper-v5's observation and three action dimensions
for BDQN): two hidden layers of 128 units (IQN and FQF: a 128-unit body and a 128-unit head),
batch 64, gamma 0.9, 3-step returns (BDQN: 1 step), target copy every 320 updates. BDQN's width
and batch size are parameters, so that it can also be measured at SAC's sizes.
"""

import copy
import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from benchmark.common import adam, mlp

OBS_DIM = 4
NUM_ACTIONS = 2
HIDDEN = 128
BATCH = 64
GAMMA = 0.9
N_STEP = 3
TARGET_UPDATE_FREQ = 320
LR = 1e-3
NUM_ATOMS = 51
V_MAX = 10.0
NUM_QUANTILES = 50
NUM_COSINES = 64
IQN_SAMPLE_SIZE = 8
NUM_FRACTIONS = 32
FRACTION_LR = 2.5e-9
FQF_ENT_COEF = 10.0
PRIO_ALPHA = 0.6
PRIO_BETA = 0.4
PRIO_EPS = float(np.finfo(np.float32).eps)
BDQN_OBS_DIM = 11
NUM_BRANCHES = 3
ACTION_PER_BRANCH = 25


@dataclass
class Transitions:
    """Transitions of ``num_streams`` environments, stream after stream, each ``stream_length``
    rows in chronological order (as a ``VectorReplayBuffer`` with one sub-buffer per stream
    stores them). The newest row of each stream belongs to a still-running episode."""

    obs: np.ndarray
    act: np.ndarray
    rew: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    obs_next: np.ndarray
    stream_length: int


def synthetic_transitions(
    num_streams: int, stream_length: int, obs_dim: int, act_shape: tuple[int, ...], num_values: int
) -> Transitions:
    """Random transitions: Gaussian observations and rewards, uniform actions in
    ``[0, num_values)`` of shape ``act_shape`` per row, 2% terminated and 0.5% truncated rows."""
    rng = np.random.default_rng(0)
    size = num_streams * stream_length
    ends = rng.random(size)
    return Transitions(
        obs=rng.standard_normal((size, obs_dim), dtype=np.float32),
        act=rng.integers(0, num_values, (size, *act_shape)),
        rew=rng.standard_normal(size),
        terminated=ends < 0.02,
        truncated=(ends >= 0.02) & (ends < 0.025),
        obs_next=rng.standard_normal((size, obs_dim), dtype=np.float32),
        stream_length=stream_length,
    )


def nstep_targets(
    data: Transitions, gamma: float, n_step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(reward_sum, discount, boot_row)`` of every row's n-step return ``reward_sum + discount
    * Q(obs_next[boot_row])``: up to ``n_step`` rewards of the row's episode are summed, stopping
    after a terminated, truncated or stream-final row; ``discount`` is ``gamma ** k`` for ``k``
    rewards summed, and 0 if the last of them terminated the episode."""
    size = len(data.rew)
    row = np.arange(size)
    stream_end = (row % data.stream_length) == data.stream_length - 1
    stops = data.terminated | data.truncated | stream_end
    reward_sum = np.zeros(size)
    discount = np.ones(size)
    boot_row = row.copy()
    running = np.ones(size, dtype=bool)
    for k in range(n_step):
        current = np.minimum(row + k, size - 1)
        boot_row = np.where(running, current, boot_row)
        reward_sum += np.where(running, discount * data.rew[current], 0.0)
        discount = np.where(running, discount * gamma, discount)
        running &= ~stops[current]
    discount *= ~data.terminated[boot_row]
    return reward_sum, discount, boot_row


class NStepReplay:
    """Preallocated tensors of the transitions with their n-step targets precomputed."""

    def __init__(self, data: Transitions, gamma: float, n_step: int) -> None:
        reward_sum, discount, boot_row = nstep_targets(data, gamma, n_step)
        self.obs = torch.as_tensor(data.obs)
        self.act = torch.as_tensor(data.act, dtype=torch.long)
        self.boot_obs = torch.as_tensor(data.obs_next[boot_row])
        self.reward_sum = torch.as_tensor(reward_sum, dtype=torch.float32)
        self.discount = torch.as_tensor(discount, dtype=torch.float32)

    def __len__(self) -> int:
        return len(self.obs)


def step(optim: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """Zero the gradients, back-propagate ``loss`` and step ``optim``."""
    optim.zero_grad(set_to_none=True)
    loss.backward()
    optim.step()


def quantile_huber(
    current_BN: torch.Tensor, target_BM: torch.Tensor, taus: torch.Tensor
) -> torch.Tensor:
    """Per-sample quantile Huber loss (threshold 1), summed over targets, mean over quantiles."""
    current_BNM, target_BNM = torch.broadcast_tensors(
        current_BN.unsqueeze(2), target_BM.unsqueeze(1)
    )
    huber = F.huber_loss(current_BNM, target_BNM, reduction="none", delta=1.0)
    taus_1N1 = taus.reshape(-1, current_BN.shape[1], 1)
    below = target_BNM < current_BNM.detach()
    return (torch.where(below, 1.0 - taus_1N1, taus_1N1) * huber).sum(2).mean(1)


class BareQLearner:
    """One learner: online and target network, fused Adam, replay tensors, target-copy counter.

    Subclasses implement :meth:`loss` (the targets, the target copy, the loss of the rows
    ``idx``); :meth:`update` is one gradient step on a uniformly sampled minibatch.
    """

    def __init__(
        self, net: nn.Module, data: Transitions, n_step: int = N_STEP, batch_size: int = BATCH
    ) -> None:
        self.net = net
        self.target = copy.deepcopy(net).eval().requires_grad_(False)
        self.optim = adam(list(net.parameters()), LR)
        self.replay = NStepReplay(data, GAMMA, n_step)
        self.iterations = 0
        self.batch_size = batch_size
        self.batch_rows = torch.arange(batch_size)

    def copy_target_periodically(self) -> None:
        if self.iterations % TARGET_UPDATE_FREQ == 0:
            target = [*self.target.parameters(), *self.target.buffers()]
            with torch.no_grad():
                torch._foreach_copy_(target, [*self.net.parameters(), *self.net.buffers()])
        self.iterations += 1

    def sample(self) -> torch.Tensor:
        return torch.randint(0, len(self.replay), (self.batch_size,))

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        """The scalar loss of the rows ``idx``, computing their targets first."""
        raise NotImplementedError

    def update(self) -> None:
        step(self.optim, self.loss(self.sample()))


def project_onto_support(
    atoms_BN: torch.Tensor, probs_BN: torch.Tensor, support: torch.Tensor
) -> torch.Tensor:
    """C51's categorical projection of ``probs_BN`` on ``atoms_BN`` onto ``support``."""
    delta_z = support[1] - support[0]
    clipped = atoms_BN.clamp(support[0], support[-1])
    weight = 1 - (clipped.unsqueeze(1) - support.view(1, -1, 1)).abs() / delta_z
    return (weight.clamp(0, 1) * probs_BN.unsqueeze(1)).sum(-1)


class BareC51(BareQLearner):
    """C51 with double action selection: cross-entropy to the projected n-step distribution."""

    def __init__(self, data: Transitions) -> None:
        super().__init__(mlp(OBS_DIM, HIDDEN, HIDDEN, NUM_ACTIONS * NUM_ATOMS), data)
        self.support = torch.linspace(-V_MAX, V_MAX, NUM_ATOMS)

    def probs(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return net(obs).view(len(obs), NUM_ACTIONS, NUM_ATOMS).softmax(-1)

    def cross_entropy(self, idx: torch.Tensor) -> torch.Tensor:
        """Per-sample cross-entropy of the rows ``idx`` (targets first, then the target copy)."""
        replay, rows = self.replay, self.batch_rows[: len(idx)]
        with torch.no_grad():
            boot_obs = replay.boot_obs[idx]
            next_act = (self.probs(self.net, boot_obs) * self.support).sum(2).argmax(1)
            next_dist = self.probs(self.target, boot_obs)[rows, next_act]
            atoms = replay.reward_sum[idx, None] + replay.discount[idx, None] * self.support
            target_dist = project_onto_support(atoms, next_dist, self.support)
        self.copy_target_periodically()
        current = self.probs(self.net, replay.obs[idx])[rows, replay.act[idx]]
        return -(target_dist * torch.log(current + 1e-8)).sum(1)

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        return self.cross_entropy(idx).mean()


class NoisyLinear(nn.Module):
    """Factorised Gaussian noisy linear layer; ``sample`` draws input then output noise."""

    eps_p: torch.Tensor
    eps_q: torch.Tensor

    def __init__(self, n_in: int, n_out: int, sigma0: float = 0.5) -> None:
        super().__init__()
        bound = 1 / math.sqrt(n_in)
        self.mu_W = nn.Parameter(torch.empty(n_out, n_in).uniform_(-bound, bound))
        self.sigma_W = nn.Parameter(torch.full((n_out, n_in), sigma0 * bound))
        self.mu_bias = nn.Parameter(torch.empty(n_out).uniform_(-bound, bound))
        self.sigma_bias = nn.Parameter(torch.full((n_out,), sigma0 * bound))
        self.register_buffer("eps_p", torch.zeros(n_in))
        self.register_buffer("eps_q", torch.zeros(n_out))

    def sample(self) -> None:
        for eps in (self.eps_p, self.eps_q):
            z = torch.randn_like(eps)
            eps.copy_(z.sign() * z.abs().sqrt())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.mu_W + self.sigma_W * torch.outer(self.eps_q, self.eps_p)
        return F.linear(x, weight, self.mu_bias + self.sigma_bias * self.eps_q)


class DuelingNoisyNet(nn.Module):
    """ReLU body, noisy advantage and value heads: per-action softmax over the atoms."""

    def __init__(self) -> None:
        super().__init__()
        self.body = mlp(OBS_DIM, HIDDEN, HIDDEN, last_activation=True)
        self.adv = NoisyLinear(HIDDEN, NUM_ACTIONS * NUM_ATOMS)
        self.value = NoisyLinear(HIDDEN, NUM_ATOMS)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        features = self.body(obs)
        adv = self.adv(features).view(len(obs), NUM_ACTIONS, NUM_ATOMS)
        value = self.value(features).view(len(obs), 1, NUM_ATOMS)
        return adv - adv.mean(dim=1, keepdim=True) + value


class BareRainbow(BareC51):
    """C51 on a noisy dueling network, with prioritized sampling and priority updates."""

    def __init__(self, data: Transitions) -> None:
        BareQLearner.__init__(self, DuelingNoisyNet(), data)
        self.support = torch.linspace(-V_MAX, V_MAX, NUM_ATOMS)
        self.priorities = torch.ones(len(self.replay))
        self.min_priority = torch.tensor(1.0)

    def probs(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return net(obs).softmax(-1)

    def sample(self) -> torch.Tensor:
        return torch.multinomial(self.priorities, self.batch_size, replacement=True)

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        for net in (self.net, self.target):
            net.adv.sample()
            net.value.sample()
        weight = (self.priorities[idx] / self.min_priority).pow(-PRIO_BETA)
        self.last_cross_entropy = self.cross_entropy(idx)
        return (self.last_cross_entropy * (weight / weight.max())).mean()

    def set_priorities(self, idx: torch.Tensor, errors: torch.Tensor) -> None:
        raw = errors.abs() + PRIO_EPS
        self.priorities[idx] = raw.pow(PRIO_ALPHA)
        self.min_priority = torch.minimum(self.min_priority, raw.min())

    def update(self) -> None:
        idx = self.sample()
        step(self.optim, self.loss(idx))
        self.set_priorities(idx, self.last_cross_entropy.detach())


class BareQRDQN(BareQLearner):
    """QR-DQN: ``NUM_QUANTILES`` fixed-fraction quantiles per action, quantile Huber loss."""

    def __init__(self, data: Transitions) -> None:
        super().__init__(mlp(OBS_DIM, HIDDEN, HIDDEN, NUM_ACTIONS * NUM_QUANTILES), data)
        edges = torch.linspace(0.0, 1.0, NUM_QUANTILES + 1)
        self.taus = (edges[:-1] + edges[1:]) / 2

    def quantiles(self, net: nn.Module, obs: torch.Tensor) -> torch.Tensor:
        return net(obs).view(len(obs), NUM_ACTIONS, NUM_QUANTILES)

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        replay, rows = self.replay, self.batch_rows[: len(idx)]
        with torch.no_grad():
            boot_obs = replay.boot_obs[idx]
            next_act = self.quantiles(self.net, boot_obs).mean(2).argmax(1)
            next_quantiles = self.quantiles(self.target, boot_obs)[rows, next_act]
            target = replay.reward_sum[idx, None] + replay.discount[idx, None] * next_quantiles
        self.copy_target_periodically()
        current = self.quantiles(self.net, replay.obs[idx])[rows, replay.act[idx]]
        return quantile_huber(current, target, self.taus).mean()


class QuantileNet(nn.Module):
    """IQN's network: body features times the cosine embedding of each fraction, then a head."""

    frequencies: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.body = mlp(OBS_DIM, HIDDEN, last_activation=True)
        self.head = mlp(HIDDEN, HIDDEN, NUM_ACTIONS)
        self.embed = mlp(NUM_COSINES, HIDDEN, last_activation=True)
        self.register_buffer("frequencies", torch.arange(1, NUM_COSINES + 1) * math.pi)

    def quantiles(self, features: torch.Tensor, taus: torch.Tensor) -> torch.Tensor:
        """Quantiles ``(B, NUM_ACTIONS, N)`` at fractions ``taus`` ``(B, N)``."""
        batch, num = taus.shape
        embedded = self.embed(torch.cos(taus.unsqueeze(-1) * self.frequencies))
        out = self.head((features.unsqueeze(1) * embedded).reshape(batch * num, -1))
        return out.view(batch, num, NUM_ACTIONS).transpose(1, 2)

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.body(obs)
        taus = torch.rand(len(obs), IQN_SAMPLE_SIZE)
        return self.quantiles(features, taus), taus


class BareIQN(BareQLearner):
    """IQN: the quantile Huber loss at freshly sampled fractions (online and target)."""

    def __init__(self, data: Transitions) -> None:
        super().__init__(QuantileNet(), data)

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        replay, rows = self.replay, self.batch_rows[: len(idx)]
        with torch.no_grad():
            boot_obs = replay.boot_obs[idx]
            next_act = self.net(boot_obs)[0].mean(2).argmax(1)
            next_quantiles = self.target(boot_obs)[0][rows, next_act]
            target = replay.reward_sum[idx, None] + replay.discount[idx, None] * next_quantiles
        self.copy_target_periodically()
        current, taus = self.net(replay.obs[idx])
        return quantile_huber(current[rows, replay.act[idx]], target, taus).mean()


class BareFQF(BareQLearner):
    """FQF: IQN's network at fractions a proposal network chooses, each with its optimizer."""

    def __init__(self, data: Transitions) -> None:
        super().__init__(QuantileNet(), data)
        self.proposal = nn.Linear(HIDDEN, NUM_FRACTIONS)
        nn.init.xavier_uniform_(self.proposal.weight, gain=0.01)
        nn.init.zeros_(self.proposal.bias)
        self.proposal_optim = torch.optim.RMSprop(self.proposal.parameters(), lr=FRACTION_LR)

    def propose(self, features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(taus (B, N+1), tau_hats (B, N), entropies (B,))`` for the detached features."""
        log_probs = self.proposal(features.detach()).log_softmax(-1)
        probs = log_probs.exp()
        inner = probs[:, :-1].cumsum(1)
        zeros = inner.new_zeros(len(inner), 1)
        taus = torch.cat([zeros, inner, zeros + 1.0], dim=1)
        tau_hats = ((taus[:, :-1] + taus[:, 1:]) / 2).detach()
        return taus, tau_hats, -(probs * log_probs).sum(-1)

    def fqf_losses(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(fraction loss - entropy bonus, quantile loss)`` of the rows ``idx``."""
        replay, rows = self.replay, self.batch_rows[: len(idx)]
        with torch.no_grad():
            boot_obs = replay.boot_obs[idx]
            features = self.net.body(boot_obs)
            taus, tau_hats, _ = self.propose(features)
            widths = taus[:, 1:] - taus[:, :-1]
            next_q = (widths.unsqueeze(1) * self.net.quantiles(features, tau_hats)).sum(2)
            target_features = self.target.body(boot_obs)
            next_quantiles = self.target.quantiles(target_features, tau_hats)[
                rows, next_q.argmax(1)
            ]
            target = replay.reward_sum[idx, None] + replay.discount[idx, None] * next_quantiles
        self.copy_target_periodically()
        act = replay.act[idx]
        features = self.net.body(replay.obs[idx])
        taus, tau_hats, entropies = self.propose(features)
        hats = self.net.quantiles(features, tau_hats)[rows, act]
        quantile_loss = quantile_huber(hats, target, tau_hats).mean()
        with torch.no_grad():
            at_taus = self.net.quantiles(features, taus[:, 1:-1])[rows, act]
            hats = hats.detach()
            below, above = at_taus - hats[:, :-1], at_taus - hats[:, 1:]
            previous = torch.cat([hats[:, :1], at_taus[:, :-1]], dim=1)
            following = torch.cat([at_taus[:, 1:], hats[:, -1:]], dim=1)
            gradient = torch.where(at_taus > previous, below, -below) + torch.where(
                at_taus < following, above, -above
            )
        fraction_loss = (gradient * taus[:, 1:-1]).sum(1).mean()
        return fraction_loss - FQF_ENT_COEF * entropies.mean(), quantile_loss

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        """The sum of both losses (each trains only its own network)."""
        fraction_loss, quantile_loss = self.fqf_losses(idx)
        return fraction_loss + quantile_loss

    def update(self) -> None:
        fraction_loss, quantile_loss = self.fqf_losses(self.sample())
        step(self.proposal_optim, fraction_loss)
        step(self.optim, quantile_loss)


class BranchingNet(nn.Module):
    """Shared body (two layers of ``hidden`` units), one value stream and one advantage stream
    per branch (one hidden layer of ``hidden`` units each)."""

    def __init__(self, hidden: int = HIDDEN) -> None:
        super().__init__()
        self.common = mlp(BDQN_OBS_DIM, hidden, hidden, last_activation=True)
        self.value = mlp(hidden, hidden, 1)
        self.branches = nn.ModuleList(
            mlp(hidden, hidden, ACTION_PER_BRANCH) for _ in range(NUM_BRANCHES)
        )

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        features = self.common(obs)
        adv = torch.stack([branch(features) for branch in self.branches], dim=1)
        return self.value(features).unsqueeze(1) + adv - adv.mean(dim=-1, keepdim=True)


class BareBDQN(BareQLearner):
    """BDQN with double Q-learning: every branch regresses onto one shared one-step target."""

    def __init__(self, data: Transitions, hidden: int = HIDDEN, batch_size: int = BATCH) -> None:
        super().__init__(BranchingNet(hidden), data, n_step=1, batch_size=batch_size)

    def loss(self, idx: torch.Tensor) -> torch.Tensor:
        replay = self.replay
        with torch.no_grad():
            boot_obs = replay.boot_obs[idx]
            next_act = self.net(boot_obs).argmax(-1, keepdim=True)
            next_value = self.target(boot_obs).gather(-1, next_act).squeeze(-1).mean(-1)
            target = replay.reward_sum[idx] + replay.discount[idx] * next_value
        self.copy_target_periodically()
        q = self.net(replay.obs[idx]).gather(-1, replay.act[idx].unsqueeze(-1)).squeeze(-1)
        return (target.unsqueeze(1) - q).pow(2).mean()
