"""A bare PyTorch BCQ update: the speed limit for ``benchmark/update_rate_bcq.py``.

Nothing here is tianshou: plain tensors, ``nn.Sequential`` networks and torch's fused Adam, doing
the work of one library BCQ update (``tianshou.algorithm.imitation.bcq``) in the same order and
with the same random draws, so that, given the library's weights, the same batch and the same
torch seed, it computes the same losses and parameters
(``test/benchmark/test_bare_bcq.py`` checks this):

1. a VAE step on the reconstruction error plus half the KL divergence from ``N(0, 1)``;
2. one step of both critics (one backward pass of the summed losses, one fused Adam) towards
   ``r + gamma * (1 - terminated) * max_j [lmbda * min(Q1', Q2') + (1 - lmbda) * max(Q1', Q2')]``
   over ``num_sampled`` perturbed VAE proposals ``j`` per next state;
3. a perturbation step on ``-Q1(s, perturbation(s, decoded action))``, the critic's weights
   excluded from autograd;
4. Polyak averaging of the target perturbation network and the target critics.

:meth:`BareBCQ.update` samples a minibatch from preallocated tensors; ``update_on`` updates on
given tensors (what the tests compare).
"""

import copy

import numpy as np
import torch
from torch import nn

from benchmark.common import Replay, adam, mlp


class BareVAE(nn.Module):
    """The conditional VAE: an encoder body, mean and log-std heads, a tanh-squashed decoder."""

    def __init__(
        self, obs_dim: int, act_dim: int, hidden: list[int], latent_dim: int, max_action: float
    ) -> None:
        super().__init__()
        self.encoder = mlp(obs_dim + act_dim, *hidden, last_activation=True)
        self.mean = nn.Linear(hidden[-1], latent_dim)
        self.log_std = nn.Linear(hidden[-1], latent_dim)
        self.decoder = mlp(obs_dim + latent_dim, *hidden, act_dim)
        self.latent_dim, self.max_action = latent_dim, max_action

    def decode(self, obs: torch.Tensor, latent: torch.Tensor | None = None) -> torch.Tensor:
        if latent is None:
            latent = torch.randn(len(obs), self.latent_dim).clamp(-0.5, 0.5)
        return self.max_action * torch.tanh(self.decoder(torch.cat([obs, latent], -1)))

    def loss(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        features = self.encoder(torch.cat([obs, act], -1))
        mean = self.mean(features)
        std = self.log_std(features).clamp(-4, 15).exp()
        reconstruction = self.decode(obs, mean + std * torch.randn_like(std))
        kl = (-std.log() + (std.square() + mean.square() - 1.0) / 2.0).mean()
        return (reconstruction - act).square().mean() + kl / 2.0


class BarePerturbation(nn.Module):
    """``clamp(a + phi * max_action * tanh(net([s, a])), -max_action, max_action)``."""

    def __init__(
        self, obs_dim: int, act_dim: int, hidden: list[int], max_action: float, phi: float
    ) -> None:
        super().__init__()
        self.net = mlp(obs_dim + act_dim, *hidden, act_dim)
        self.max_action, self.scale = max_action, phi * max_action

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        shift = self.scale * torch.tanh(self.net(torch.cat([obs, act], -1)))
        return (act + shift).clamp(-self.max_action, self.max_action)


class BareBCQ:
    """BCQ with its own replay tensors; :meth:`update` is one library-equivalent update.

    :param data: the transitions (see ``benchmark.common.random_transitions``).
    :param hidden: hidden widths of the perturbation network and the critics.
    :param vae_hidden: hidden widths of the VAE's encoder and decoder.
    """

    def __init__(
        self,
        data: dict[str, np.ndarray],
        hidden: list[int],
        vae_hidden: list[int],
        batch_size: int = 256,
        max_action: float = 1.0,
        phi: float = 0.05,
        gamma: float = 0.99,
        tau: float = 0.005,
        lmbda: float = 0.75,
        num_sampled: int = 10,
        lr: float = 1e-3,
    ) -> None:
        self.replay = Replay(data)
        obs_dim, act_dim = self.replay.obs.shape[1], self.replay.act.shape[1]
        self.perturbation = BarePerturbation(obs_dim, act_dim, hidden, max_action, phi)
        self.critics = [mlp(obs_dim + act_dim, *hidden, 1) for _ in range(2)]
        self.vae = BareVAE(obs_dim, act_dim, vae_hidden, 2 * act_dim, max_action)
        self.perturbation_optim = adam(list(self.perturbation.parameters()), lr)
        self.critic_params: list[torch.Tensor] = [p for c in self.critics for p in c.parameters()]
        self.critic_optim = adam(self.critic_params, lr)
        self.vae_optim = adam(list(self.vae.parameters()), lr)
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.lmbda, self.num_sampled = lmbda, num_sampled
        self.sync_targets()

    def sync_targets(self) -> None:
        """Make the target networks copies of the current ones (after loading weights)."""
        self.perturbation_target = copy.deepcopy(self.perturbation)
        self.critic_targets = [copy.deepcopy(c) for c in self.critics]
        self.sources: list[torch.Tensor] = [*self.perturbation.parameters(), *self.critic_params]
        self.targets: list[torch.Tensor] = [
            *self.perturbation_target.parameters(),
            *(p for c in self.critic_targets for p in c.parameters()),
        ]

    def update(self) -> None:
        self.update_on(*self.replay.sample(self.batch_size))

    def update_on(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        rew: torch.Tensor,
        terminated: torch.Tensor,
        obs_next: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """One update on the given transitions; returns the four losses."""
        vae_loss = self.vae.loss(obs, act)
        self.vae_optim.zero_grad(set_to_none=True)
        vae_loss.backward()
        self.vae_optim.step()
        with torch.no_grad():
            obs_rep = obs_next.repeat_interleave(self.num_sampled, dim=0)
            act_rep = self.perturbation_target(obs_rep, self.vae.decode(obs_rep))
            pair = torch.cat([obs_rep, act_rep], -1)
            q1, q2 = (target(pair) for target in self.critic_targets)
            soft = self.lmbda * torch.min(q1, q2) + (1 - self.lmbda) * torch.max(q1, q2)
            best = soft.view(len(obs), self.num_sampled).max(1).values
            target_q = rew + self.gamma * (~terminated) * best
        pair = torch.cat([obs, act], -1)
        critic1_loss, critic2_loss = (
            (critic(pair).squeeze(-1) - target_q).square().mean() for critic in self.critics
        )
        self.critic_optim.zero_grad(set_to_none=True)
        (critic1_loss + critic2_loss).backward()
        self.critic_optim.step()
        with torch.no_grad():
            proposal = self.vae.decode(obs)
        perturbed = self.perturbation(obs, proposal)
        critic = self.critics[0]
        critic.requires_grad_(False)
        actor_loss = -critic(torch.cat([obs, perturbed], -1)).mean()
        critic.requires_grad_(True)
        self.perturbation_optim.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.perturbation_optim.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.targets, self.sources, self.tau)
        return {
            "vae_loss": vae_loss,
            "critic1_loss": critic1_loss,
            "critic2_loss": critic2_loss,
            "actor_loss": actor_loss,
        }
