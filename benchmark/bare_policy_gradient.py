"""Bare PyTorch updates of discrete SAC, REDQ, NPG and TRPO: the speed limits for
``benchmark/update_rate_policy.py``.

Nothing here is tianshou: plain tensors, ``nn.Sequential`` networks, torch's fused Adam and a
numba loop for GAE (the building blocks of ``benchmark/common.py``), each class doing exactly the
work one library update does on the same shapes, in the same order (so that, given the same
weights, data and seeds, it computes the same losses and parameters;
``test/benchmark/test_bare_policy_gradient.py`` checks this):

* :class:`BareDiscreteSAC`: soft TD targets as exact expectations over the actions, one step of
  both critics (one backward pass), an actor step, an entropy-coefficient step and Polyak
  averaging;
* :class:`BareREDQ`: an ensemble critic evaluated with batched matmuls (every member, as
  ``EnsembleLinear`` does), a target from the minimum over a random subset of target members,
  one critic step per update and an actor (and alpha) step every ``actor_delay`` updates;
* :class:`BareNPG`: GAE on a rollout, normalised advantages, a natural-gradient actor step
  (conjugate gradients on Fisher-vector products from double back-propagation, damping 0.1),
  the KL the step caused, then ``critic_iters`` critic steps;
* :class:`BareTRPO`: NPG with the step scaled to the trust region's edge and a backtracking
  line search on the KL and the surrogate loss.

Each class holds its data in preallocated tensors; :meth:`update` is one library-equivalent
update on them, ``update_on`` the same on given tensors (what the tests compare).
"""

import copy
import math
from collections.abc import Callable

import numpy as np
import torch
from torch import nn

from benchmark.common import Replay, adam, gae, mlp

_TANH_EPS = float(np.finfo(np.float32).eps)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_LOG_STD_MIN, _LOG_STD_MAX = -20.0, 2.0


# ---------------------------------------------------------------------------------- discrete SAC
class BareDiscreteSAC:
    """Discrete SAC with twin critics and a learned entropy coefficient.

    :param data: the replay data (see :func:`benchmark.common.random_transitions`,
        ``discrete=True``).
    :param target_entropy: the entropy the coefficient steers towards.
    """

    def __init__(
        self,
        data: dict[str, np.ndarray],
        num_actions: int,
        hidden: int = 128,
        batch_size: int = 128,
        gamma: float = 0.99,
        tau: float = 0.005,
        actor_lr: float = 3e-4,
        critic_lr: float = 1e-3,
        alpha_lr: float = 3e-4,
        target_entropy: float = 0.5,
    ) -> None:
        self.replay = Replay(data)
        obs_dim = self.replay.obs.shape[1]
        self.actor = mlp(obs_dim, hidden, hidden, num_actions)
        self.critics = [mlp(obs_dim, hidden, hidden, num_actions) for _ in range(2)]
        self.targets = [copy.deepcopy(c) for c in self.critics]
        self.critic_params = [p for c in self.critics for p in c.parameters()]
        self.target_params = [p for t in self.targets for p in t.parameters()]
        self.log_alpha = torch.zeros((), requires_grad=True)
        self.actor_optim = adam(list(self.actor.parameters()), actor_lr)
        self.critic_optim = adam(self.critic_params, critic_lr)
        self.alpha_optim = adam([self.log_alpha], alpha_lr)
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.target_entropy = target_entropy

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
        """One update on the given transitions; returns the losses and the new alpha."""
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            log_p_next = self.actor(obs_next).log_softmax(-1)
            q_next = torch.min(self.targets[0](obs_next), self.targets[1](obs_next))
            v_next = (log_p_next.exp() * (q_next - alpha * log_p_next)).sum(-1)
            target = rew + self.gamma * (~terminated) * v_next
        act_index = act.long().unsqueeze(-1)
        c1, c2 = (c(obs).gather(1, act_index).squeeze(-1) for c in self.critics)
        critic1_loss, critic2_loss = (c1 - target).pow(2).mean(), (c2 - target).pow(2).mean()
        self.critic_optim.zero_grad(set_to_none=True)
        (critic1_loss + critic2_loss).backward()
        self.critic_optim.step()
        log_p = self.actor(obs).log_softmax(-1)
        p = log_p.exp()
        entropy = -(p * log_p).sum(-1)
        with torch.no_grad():
            min_q = torch.min(self.critics[0](obs), self.critics[1](obs))
        actor_loss = -(alpha * entropy + (p * min_q).sum(-1)).mean()
        self.actor_optim.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optim.step()
        # the loss -log_alpha * (target - entropy) is linear in log_alpha: set its gradient
        self.log_alpha.grad = (entropy.detach() - self.target_entropy).mean()
        self.alpha_optim.step()
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)
        return {
            "critic1_loss": critic1_loss,
            "critic2_loss": critic2_loss,
            "actor_loss": actor_loss,
            "alpha": self.log_alpha.detach().exp(),
        }


# ------------------------------------------------------------------------------------------ REDQ
class EnsembleMLP(nn.Module):
    """``ensemble_size`` two-hidden-layer ReLU MLPs evaluated together with batched matmuls.

    Weights are ``(ensemble_size, in, out)``, biases ``(ensemble_size, 1, out)``; an input of
    shape ``(B, in)`` gives ``(ensemble_size, B, out)``.
    """

    def __init__(self, ensemble_size: int, in_dim: int, hidden: int, out_dim: int) -> None:
        super().__init__()
        sizes = [(in_dim, hidden), (hidden, hidden), (hidden, out_dim)]
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in sizes:
            bound = 1 / math.sqrt(fan_in)
            self.weights.append(torch.empty(ensemble_size, fan_in, fan_out).uniform_(-bound, bound))
            self.biases.append(torch.empty(ensemble_size, 1, fan_out).uniform_(-bound, bound))
        self.ensemble_size = ensemble_size

    def forward(self, x: torch.Tensor, detached: bool = False) -> torch.Tensor:
        """Member outputs; ``detached`` uses the weights as constants (no parameter grads)."""
        x = x.expand(self.ensemble_size, *x.shape)
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            if detached:
                w, b = w.detach(), b.detach()
            x = torch.baddbmm(b, x, w)
            if i < last:
                x = x.relu()
        return x


class BareREDQ:
    """REDQ with a squashed-Gaussian actor and a learned entropy coefficient.

    :param data: the replay data (see :func:`benchmark.common.random_transitions`).
    :param actor_delay: critic steps (updates) per actor step.
    """

    def __init__(
        self,
        data: dict[str, np.ndarray],
        hidden: int = 256,
        ensemble_size: int = 10,
        subset_size: int = 2,
        actor_delay: int = 20,
        batch_size: int = 256,
        gamma: float = 0.99,
        tau: float = 0.005,
        lr: float = 1e-3,
        alpha_lr: float = 3e-4,
    ) -> None:
        self.replay = Replay(data)
        obs_dim, act_dim = self.replay.obs.shape[1], self.replay.act.shape[1]
        self.actor = mlp(obs_dim, hidden, hidden, 2 * act_dim)
        self.critic = EnsembleMLP(ensemble_size, obs_dim + act_dim, hidden, 1)
        self.target = copy.deepcopy(self.critic)
        self.critic_params = list(self.critic.parameters())
        self.target_params = list(self.target.parameters())
        self.log_alpha = torch.zeros((), requires_grad=True)
        self.actor_optim = adam(list(self.actor.parameters()), lr)
        self.critic_optim = adam(self.critic_params, lr)
        self.alpha_optim = adam([self.log_alpha], alpha_lr)
        self.ensemble_size, self.subset_size, self.actor_delay = (
            ensemble_size,
            subset_size,
            actor_delay,
        )
        self.batch_size, self.gamma, self.tau = batch_size, gamma, tau
        self.target_entropy = -float(act_dim)
        self.critic_steps = 0

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
        """One critic step (and every ``actor_delay``-th time an actor and alpha step)."""
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            act_next, log_prob_next = self.sample_action(obs_next)
            subset = torch.as_tensor(
                np.random.choice(self.ensemble_size, self.subset_size, replace=False)
            )
            q_next = self.target(torch.cat([obs_next, act_next], -1)).squeeze(-1)[subset]
            target = rew + self.gamma * (~terminated) * (
                q_next.min(0).values - alpha * log_prob_next
            )
        q = self.critic(torch.cat([obs, act], -1)).squeeze(-1)
        critic_loss = (q - target).pow(2).mean()
        self.critic_optim.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optim.step()
        losses = {"critic_loss": critic_loss}
        self.critic_steps += 1
        if self.critic_steps % self.actor_delay == 0:
            new_act, log_prob = self.sample_action(obs)
            mean_q = self.critic(torch.cat([obs, new_act], -1), detached=True).squeeze(-1).mean(0)
            actor_loss = (alpha * log_prob - mean_q).mean()
            self.actor_optim.zero_grad(set_to_none=True)
            actor_loss.backward()
            self.actor_optim.step()
            self.log_alpha.grad = -(log_prob.detach() + self.target_entropy).mean()
            self.alpha_optim.step()
            losses["actor_loss"] = actor_loss
        with torch.no_grad():
            torch._foreach_lerp_(self.target_params, self.critic_params, self.tau)
        return losses


# ------------------------------------------------------------------------------------- NPG, TRPO
def _gaussian_log_prob(mu: torch.Tensor, log_std: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
    return (-0.5 * ((act - mu) / log_std.exp()).square() - log_std).sum(-1) - mu.shape[
        -1
    ] * _HALF_LOG_2PI


def _gaussian_kl(
    mu_old: torch.Tensor, log_std_old: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor
) -> torch.Tensor:
    """Mean over the batch of ``KL(old || new)`` of diagonal Gaussians."""
    var_ratio = (2 * (log_std_old - log_std)).exp()
    kl = log_std - log_std_old + 0.5 * (var_ratio + ((mu_old - mu) / log_std.exp()).square()) - 0.5
    return kl.sum(-1).mean()


class BareNPG:
    """Natural policy gradient on one rollout per update, with a tanh MLP Gaussian actor (a
    state-independent log std) and a tanh MLP critic.

    :param data: the rollout, in chronological order (see
        :func:`benchmark.common.random_transitions`).
    :param step_size: the actor's step along the natural gradient.
    :param critic_iters: critic Adam steps per update.
    """

    damping = 0.1
    cg_steps = 10

    def __init__(
        self,
        data: dict[str, np.ndarray],
        hidden: int = 64,
        critic_iters: int = 20,
        lr: float = 1e-3,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        step_size: float = 0.1,
    ) -> None:
        self.rollout = Replay(data)
        obs_dim, act_dim = self.rollout.obs.shape[1], self.rollout.act.shape[1]
        self.actor = mlp(obs_dim, hidden, hidden, act_dim, activation=nn.Tanh)
        self.log_std = nn.Parameter(torch.zeros(act_dim))
        self.actor_params = [*self.actor.parameters(), self.log_std]
        self.critic = mlp(obs_dim, hidden, hidden, 1, activation=nn.Tanh)
        self.critic_optim = adam(list(self.critic.parameters()), lr)
        self.critic_iters, self.gamma, self.gae_lambda = critic_iters, gamma, gae_lambda
        self.step_size = step_size

    def update(self) -> None:
        r = self.rollout
        self.update_on(r.obs, r.act, r.rew, r.terminated, r.truncated, r.obs_next)

    def update_on(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        rew: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        obs_next: torch.Tensor,
    ) -> dict[str, torch.Tensor]:
        """One update on the rollout: returns the actor loss, the KL of the step, the step
        size and the critic losses."""
        returns, adv, log_prob_old = self._advantages(
            obs, act, rew, terminated, truncated, obs_next
        )
        mu, log_std = self.actor(obs), self.log_std
        log_ratio = _gaussian_log_prob(mu, log_std, act) - log_prob_old
        actor_loss = -(log_ratio.exp() * adv).mean()
        grad = _flat_grad(actor_loss, self.actor_params, retain_graph=True)
        mu_old, log_std_old = mu.detach(), log_std.detach()
        kl_grad = _flat_grad(
            _gaussian_kl(mu_old, log_std_old, mu, log_std), self.actor_params, create_graph=True
        )
        direction = -self._conjugate_gradients(kl_grad, grad)
        old_params = torch.cat([p.detach().reshape(-1) for p in self.actor_params])

        def surrogate_and_kl() -> tuple[float, float]:
            with torch.no_grad():
                mu = self.actor(obs)
                ratio = (_gaussian_log_prob(mu, self.log_std, act) - log_prob_old).exp()
                loss = -(ratio * adv).mean()
                kl = _gaussian_kl(mu_old, log_std_old, mu, self.log_std)
            return loss.item(), kl.item()

        step = self._step(direction, old_params, kl_grad, actor_loss.item(), surrogate_and_kl)
        with torch.no_grad():
            kl = _gaussian_kl(mu_old, log_std_old, self.actor(obs), self.log_std)
        critic_losses = []
        for _ in range(self.critic_iters):
            critic_loss = (returns - self.critic(obs).squeeze(-1)).pow(2).mean()
            self.critic_optim.zero_grad(set_to_none=True)
            critic_loss.backward()
            self.critic_optim.step()
            critic_losses.append(critic_loss.detach())
        return {
            "actor_loss": actor_loss.detach(),
            "kl": kl,
            "step_size": torch.tensor(step),
            "critic_losses": torch.stack(critic_losses),
        }

    def _advantages(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        rew: torch.Tensor,
        terminated: torch.Tensor,
        truncated: torch.Tensor,
        obs_next: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(returns, normalised advantages, old log-probabilities)`` of the rollout."""
        with torch.no_grad():
            v_s = self.critic(obs).squeeze(-1)
            v_next = self.critic(obs_next).squeeze(-1) * ~terminated
            log_prob_old = _gaussian_log_prob(self.actor(obs), self.log_std, act)
        end = (terminated | truncated).numpy().copy()
        end[-1] = True
        v_s64 = v_s.numpy().astype(np.float64)
        adv = gae(v_s64, v_next.numpy().astype(np.float64), rew.numpy().astype(np.float64),
                   end, self.gamma, self.gae_lambda)  # fmt: skip
        returns = torch.as_tensor(adv + v_s64, dtype=torch.float32)
        adv_t = torch.as_tensor(adv, dtype=torch.float32)
        return returns, (adv_t - adv_t.mean()) / (adv_t.std() + 1e-8), log_prob_old

    def fisher_vector_product(self, kl_grad: torch.Tensor, vector: torch.Tensor) -> torch.Tensor:
        return _flat_grad((kl_grad * vector).sum(), self.actor_params, retain_graph=True) + (
            self.damping * vector
        )

    def _conjugate_gradients(self, kl_grad: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x = torch.zeros_like(b)
        residual, direction = b.clone(), b.clone()
        residual_sq = residual.dot(residual)
        for _ in range(self.cg_steps):
            if residual_sq < 1e-10:
                break
            product = self.fisher_vector_product(kl_grad, direction)
            alpha = residual_sq / direction.dot(product)
            x = x + alpha * direction
            residual = residual - alpha * product
            new_residual_sq = residual.dot(residual)
            direction = residual + (new_residual_sq / residual_sq) * direction
            residual_sq = new_residual_sq
        return x

    def _set_actor(self, flat: torch.Tensor) -> None:
        with torch.no_grad():
            torch.nn.utils.vector_to_parameters(flat, self.actor_params)

    def _step(
        self,
        direction: torch.Tensor,
        old_params: torch.Tensor,
        kl_grad: torch.Tensor,
        actor_loss: float,
        surrogate_and_kl: Callable[[], tuple[float, float]],
    ) -> float:
        """Move the actor from ``old_params`` along ``direction``; returns the step size.

        NPG takes its fixed step; the other arguments serve TRPO's line search
        (``surrogate_and_kl`` evaluates the current actor's loss and KL from the old one).
        """
        self._set_actor(old_params + self.step_size * direction)
        return self.step_size


class BareTRPO(BareNPG):
    """TRPO: the natural-gradient step scaled to the trust region's edge, then backtracked.

    :param max_kl: the trust region's mean KL divergence.
    """

    def __init__(
        self,
        data: dict[str, np.ndarray],
        max_kl: float = 0.01,
        backtrack_coeff: float = 0.8,
        max_backtracks: int = 10,
        **kwargs: float,
    ) -> None:
        super().__init__(data, **kwargs)  # type: ignore[arg-type]
        self.max_kl, self.backtrack_coeff, self.max_backtracks = (
            max_kl,
            backtrack_coeff,
            max_backtracks,
        )

    def _step(
        self,
        direction: torch.Tensor,
        old_params: torch.Tensor,
        kl_grad: torch.Tensor,
        actor_loss: float,
        surrogate_and_kl: Callable[[], tuple[float, float]],
    ) -> float:
        """The first step from ``sqrt(2 max_kl / x^T F x)`` down that keeps the KL within
        ``max_kl`` and lowers the surrogate loss; 0 (old parameters kept) if none does."""
        curvature = direction.dot(self.fisher_vector_product(kl_grad, direction)).item()
        step = math.sqrt(2 * self.max_kl / curvature)
        for _ in range(self.max_backtracks):
            self._set_actor(old_params + step * direction)
            loss, kl = surrogate_and_kl()
            if kl < self.max_kl and loss < actor_loss:
                return step
            step *= self.backtrack_coeff
        self._set_actor(old_params)
        return 0.0


def _flat_grad(
    output: torch.Tensor,
    params: list[torch.Tensor],
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> torch.Tensor:
    grads = torch.autograd.grad(
        output, params, retain_graph=retain_graph, create_graph=create_graph
    )
    return torch.cat([g.reshape(-1) for g in grads])
