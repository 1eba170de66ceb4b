"""A bare PyTorch CQL update: the speed limit for ``benchmark/update_rate_cql.py``.

Nothing here is tianshou: plain tensors, ``nn.Sequential`` networks (the actor's mean and log-std
heads stacked into one output layer) and torch's fused Adam. :class:`BareCQL` does exactly the
work of one update of ``tianshou.algorithm.imitation.cql.CQL``, in the same order and with the
same random draws, so that from the same weights, data and seed it computes the same losses and
parameters (``test/benchmark/test_bare_cql.py`` checks this):

1. the SAC actor step (``alpha * log pi - min(Q1, Q2)``) and the entropy coefficient's step;
2. one no-grad sampling pass of the actor over ``[s'; s x N; s' x N]``: the target actions and
   the penalty's policy actions;
3. the soft TD target from the target critics;
4. ``N`` uniform random actions per state;
5. each critic evaluated once on the data actions and the ``3N`` sampled actions of each state:
   TD error and CQL(H) penalty (log-sum-exp with importance corrections);
6. the Lagrange multiplier's step;
7. one backward pass for both critics, each clipped to ``max_grad_norm``, one fused Adam step;
8. Polyak averaging of the target critics.
"""

import copy
import math

import numpy as np
import torch
from torch import nn

from benchmark.common import Replay, adam, mlp

_TANH_EPS = float(np.finfo(np.float32).eps)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_STD_MIN, _LOG_STD_MAX = -20.0, 2.0


class BareCQL:
    """CQL(H) with twin critics, a learned entropy coefficient and the Lagrange multiplier.

    :param data: the offline data (see ``benchmark.common.random_transitions``).
    :param num_repeat_actions: sampled actions per state from each proposal.
    """

    def __init__(
        self,
        data: dict[str, np.ndarray],
        hidden: int = 256,
        batch_size: int = 256,
        num_repeat_actions: int = 10,
        gamma: float = 0.99,
        tau: float = 0.005,
        actor_lr: float = 1e-4,
        critic_lr: float = 3e-4,
        alpha_lr: float = 1e-4,
        cql_alpha_lr: float = 1e-4,
        cql_weight: float = 1.0,
        temperature: float = 1.0,
        lagrange_threshold: float = 10.0,
        max_grad_norm: float = 1.0,
    ) -> None:
        self.replay = Replay(data)
        obs_dim, act_dim = self.replay.obs.shape[1], self.replay.act.shape[1]
        self.actor = mlp(obs_dim, hidden, hidden, 2 * act_dim)
        self.critics = [mlp(obs_dim + act_dim, hidden, hidden, 1) for _ in range(2)]
        self.targets = [copy.deepcopy(c) for c in self.critics]
        self.critic_params: list[torch.Tensor] = [p for c in self.critics for p in c.parameters()]
        self.target_params: list[torch.Tensor] = [p for t in self.targets for p in t.parameters()]
        self.log_alpha = torch.zeros((), requires_grad=True)
        self.log_alpha_prime = torch.zeros((), requires_grad=True)
        self.actor_optim = adam([*self.actor.parameters()], actor_lr)
        self.critic_optim = adam(self.critic_params, critic_lr)
        self.alpha_optim = adam([self.log_alpha], alpha_lr)
        self.alpha_prime_optim = adam([self.log_alpha_prime], cql_alpha_lr)
        self.batch_size, self.repeat, self.gamma, self.tau = (
            batch_size,
            num_repeat_actions,
            gamma,
            tau,
        )
        self.target_entropy = -float(act_dim)
        self.cql_weight, self.temperature = cql_weight, temperature
        self.threshold, self.max_grad_norm = lagrange_threshold, max_grad_norm
        self.random_log_density = -act_dim * math.log(2.0)  # uniform on [-1, 1]^act_dim

    def sample_action(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A tanh-squashed reparameterised Gaussian action and its log-density ``(B,)``."""
        mu, log_std = self.actor(obs).chunk(2, dim=-1)
        std = log_std.clamp(_LOG_STD_MIN, _LOG_STD_MAX).exp()
        noise = torch.randn_like(mu)
        act = torch.tanh(mu + std * noise)
        log_prob = -(0.5 * noise.square() + std.log()).sum(-1) - mu.shape[-1] * _HALF_LOG_2PI
        return act, log_prob - torch.log(1 - act.square() + _TANH_EPS).sum(-1)

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
        """One update on the given transitions; returns the losses and coefficients."""
        size, repeat = len(obs), self.repeat
        # 1. actor and entropy coefficient
        alpha = self.log_alpha.detach().exp()
        new_act, log_prob = self.sample_action(obs)
        for p in self.critic_params:
            p.requires_grad_(False)
        obs_act = torch.cat([obs, new_act], -1)
        min_q = torch.min(self.critics[0](obs_act), self.critics[1](obs_act)).squeeze(-1)
        for p in self.critic_params:
            p.requires_grad_(True)
        actor_loss = (alpha * log_prob - min_q).mean()
        self.actor_optim.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optim.step()
        self.log_alpha.grad = -(log_prob.detach() + self.target_entropy).mean()
        self.alpha_optim.step()
        alpha = self.log_alpha.detach().exp()
        # 2.-4. samples and targets
        obs_rep = obs.repeat_interleave(repeat, 0)
        with torch.no_grad():
            next_rep = obs_next.repeat_interleave(repeat, 0)
            sampled, sampled_log_prob = self.sample_action(torch.cat([obs_next, obs_rep, next_rep]))
            next_in = torch.cat([obs_next, sampled[:size]], -1)
            q_next = torch.min(self.targets[0](next_in), self.targets[1](next_in)).squeeze(-1)
            target = rew + self.gamma * (~terminated) * (q_next - alpha * sampled_log_prob[:size])
        rand_act = torch.empty(size * repeat, act.shape[1]).uniform_(-1.0, 1.0)
        pi_log_prob = sampled_log_prob[size:].reshape(2, size, repeat)
        critic_in = torch.cat(
            [
                torch.cat([obs, obs_rep, obs_rep, obs_rep]),
                torch.cat([act, rand_act, sampled[size:]]),
            ],
            -1,
        )
        # 5. TD errors and penalties
        td_losses, penalties = [], []
        for critic in self.critics:
            q = critic(critic_in).squeeze(-1)
            q_data = q[:size]
            q_rand = q[size : size * (repeat + 1)].reshape(size, repeat) - self.random_log_density
            q_pi = q[size * (repeat + 1) :].reshape(2, size, repeat) - pi_log_prob
            cat = torch.cat([q_rand, q_pi[0], q_pi[1]], 1)
            lse = self.temperature * torch.logsumexp(cat / self.temperature, 1)
            td_losses.append((q_data - target).square().mean())
            penalties.append(self.cql_weight * (lse.mean() - q_data.mean()))
        # 6. Lagrange multiplier
        alpha_prime = self.log_alpha_prime.exp().clamp(0.0, 1e6)
        gap = (penalties[0] + penalties[1]).detach() * 0.5 - self.threshold
        alpha_prime_loss = -(alpha_prime * gap)
        self.alpha_prime_optim.zero_grad(set_to_none=True)
        alpha_prime_loss.backward()
        self.alpha_prime_optim.step()
        alpha_prime = alpha_prime.detach()
        losses = [
            td + alpha_prime * (p - self.threshold)
            for td, p in zip(td_losses, penalties, strict=True)
        ]
        # 7.-8. critics and targets
        self.critic_optim.zero_grad(set_to_none=True)
        (losses[0] + losses[1]).backward()
        for critic in self.critics:
            nn.utils.clip_grad_norm_(critic.parameters(), self.max_grad_norm)
        self.critic_optim.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)
        return {
            "actor_loss": actor_loss,
            "critic1_loss": losses[0],
            "critic2_loss": losses[1],
            "alpha": alpha,
            "cql_alpha": alpha_prime,
            "cql_alpha_loss": alpha_prime_loss,
        }
