"""Natural policy gradient (Kakade 2001): the actor steps along the Fisher-preconditioned gradient.

The search direction ``x = -F^{-1} g`` (``g`` the surrogate loss's gradient, ``F`` the Fisher
information matrix of the policy, i.e. the Hessian of the mean KL divergence from the collecting
policy) is found by conjugate gradients from Fisher-vector products, never forming ``F``. The
critic is trained separately by its own optimizer.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, kl_divergence

from tianshou.algorithm._update_helpers import (
    action_tensor,
    finite_loss_values,
    iterate_minibatches,
    per_sample,
    training_view,
)
from tianshou.algorithm.algorithm_base import TrainingStats
from tianshou.algorithm.modelfree.a2c import ActorCriticOnPolicyAlgorithm
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.stats import SequenceSummaryStats
from tianshou.utils.torch_utils import torch_device


@dataclass(kw_only=True)
class NPGTrainingStats(TrainingStats):
    """Summaries over the minibatches of one natural-gradient update.

    ``actor_loss`` is the surrogate loss before the step, ``vf_loss`` the critic's squared error
    (one entry per critic iteration) and ``kl`` the mean KL divergence the step caused.
    """

    actor_loss: SequenceSummaryStats
    vf_loss: SequenceSummaryStats
    kl: SequenceSummaryStats


def flat_grad(
    output: torch.Tensor,
    params: list[nn.Parameter],
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> torch.Tensor:
    """The gradient of the scalar ``output`` w.r.t. ``params``, concatenated into one vector.

    Parameters ``output`` does not depend on contribute zeros.

    :param retain_graph: keep the graph of ``output`` for another differentiation.
    :param create_graph: make the gradient differentiable (for Hessian-vector products).
    """
    grads = torch.autograd.grad(
        output,
        params,
        retain_graph=retain_graph,
        create_graph=create_graph,
        allow_unused=True,
        materialize_grads=True,
    )
    return torch.cat([grad.reshape(-1) for grad in grads])


def set_flat_params(params: list[nn.Parameter], flat: torch.Tensor) -> None:
    """Copy the vector ``flat`` into ``params``, in order; its length must match theirs."""
    total = sum(p.numel() for p in params)
    if flat.numel() != total:
        raise ValueError(f"flat parameter vector has {flat.numel()} elements, expected {total}")
    with torch.no_grad():
        offset = 0
        for param in params:
            param.copy_(flat[offset : offset + param.numel()].view_as(param))
            offset += param.numel()


def conjugate_gradients(
    matrix_vector_product: Callable[[torch.Tensor], torch.Tensor],
    b: torch.Tensor,
    num_steps: int = 10,
    residual_tol: float = 1e-10,
) -> torch.Tensor:
    """Approximately solve ``A x = b`` for a symmetric positive-definite ``A`` given as ``x -> Ax``.

    :param matrix_vector_product: computes ``A v``.
    :param b: the right-hand side.
    :param num_steps: at most this many iterations (exact after ``len(b)`` in exact arithmetic).
    :param residual_tol: stop once the squared residual norm falls below this.
    """
    x = torch.zeros_like(b)
    residual = b.clone()
    direction = b.clone()
    residual_sq = residual.dot(residual)
    for _ in range(num_steps):
        if residual_sq < residual_tol:
            break
        product = matrix_vector_product(direction)
        alpha = residual_sq / direction.dot(product)
        x = x + alpha * direction
        residual = residual - alpha * product
        new_residual_sq = residual.dot(residual)
        direction = residual + (new_residual_sq / residual_sq) * direction
        residual_sq = new_residual_sq
    return x


class NPG(ActorCriticOnPolicyAlgorithm):
    """Natural policy gradient with a separately optimised critic.

    Per minibatch the actor takes one step ``trust_region_size * x`` along the natural gradient
    direction ``x`` (found by 10 conjugate-gradient iterations on the Fisher matrix damped by
    ``0.1 * I``, as in the published implementations), then the critic takes
    ``optim_critic_iters`` optimizer steps on the squared error to the returns.

    :param policy: the stochastic policy; its ``actor`` is moved by natural gradients.
    :param critic: the state-value network.
    :param optim: the optimizer factory for the critic only.
    :param optim_critic_iters: critic optimizer steps per minibatch.
    :param trust_region_size: the actor's step size along the natural gradient; larger steps
        learn faster but can overshoot.
    :param advantage_normalization: standardise the advantages of each collected batch.
    :param gae_lambda: GAE lambda in [0, 1].
    :param max_batchsize: chunk size for the no-grad passes in preprocessing.
    :param gamma: discount factor in [0, 1].
    :param return_scaling: scale the critic's targets by running return statistics.
    """

    _damping = 0.1
    _cg_steps = 10

    def __init__(
        self,
        *,
        policy: ProbabilisticActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory,
        optim_critic_iters: int = 5,
        trust_region_size: float = 0.5,
        advantage_normalization: bool = True,
        gae_lambda: float = 0.95,
        max_batchsize: int = 256,
        gamma: float = 0.99,
        return_scaling: bool = False,
    ) -> None:
        if optim_critic_iters < 1:
            raise ValueError(f"optim_critic_iters must be at least 1, got {optim_critic_iters}")
        if trust_region_size <= 0:
            raise ValueError(f"trust_region_size must be positive, got {trust_region_size}")
        super().__init__(
            policy=policy,
            critic=critic,
            optim=optim,
            optim_include_actor=False,
            gae_lambda=gae_lambda,
            max_batchsize=max_batchsize,
            gamma=gamma,
            return_scaling=return_scaling,
        )
        self.optim_critic_iters = optim_critic_iters
        self.trust_region_size = trust_region_size
        self.advantage_normalization = advantage_normalization

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        batch = self._add_returns_and_advantages(batch, buffer, indices)
        batch.act = action_tensor(batch.act, torch_device(self.policy))
        if self.advantage_normalization and len(batch) > 1:
            batch.adv = (batch.adv - batch.adv.mean()) / (batch.adv.std() + self._eps)
        batch.logp_old = self._old_log_probs(batch)
        return batch

    def _actor_params(self) -> list[nn.Parameter]:
        """The parameters the natural gradient moves, in the order of the flat vectors."""
        return list(self.policy.actor.parameters())

    def _surrogate_loss(self, dist: Distribution, minibatch: Batch) -> torch.Tensor:
        """``-mean(pi(a|s) / pi_old(a|s) * A)``: its gradient at the old policy is the PG's."""
        log_prob = dist.log_prob(minibatch.act)
        log_ratio = log_prob - minibatch.logp_old.reshape(log_prob.shape)
        ratio = per_sample(log_ratio.exp(), len(minibatch.adv))
        return -(ratio * minibatch.adv).mean()

    def fisher_vector_product(
        self, vector: torch.Tensor, flat_kl_grad: torch.Tensor
    ) -> torch.Tensor:
        """``(F + damping * I) v`` from the KL gradient (built with ``create_graph=True``)."""
        kl_v = (flat_kl_grad * vector).sum()
        return flat_grad(kl_v, self._actor_params(), retain_graph=True).detach() + (
            self._damping * vector
        )

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> NPGTrainingStats:
        actor_losses: list[float] = []
        kls: list[float] = []
        step_sizes: list[float] = []
        vf_losses: list[float] = []
        for minibatch in iterate_minibatches(training_view(batch), batch_size, repeat):
            actor_loss, kl, step_size = self._update_actor(minibatch)
            actor_losses.append(actor_loss)
            kls.append(kl)
            step_sizes.append(step_size)
            for _ in range(self.optim_critic_iters):
                value = self._critic_values(minibatch.obs, len(minibatch.adv))
                vf_loss = (minibatch.returns - value).pow(2).mean()
                vf_losses.extend(self.optim.step_with_loss_values(vf_loss))
        return self._training_stats(actor_losses, vf_losses, kls, step_sizes)

    def _training_stats(
        self,
        actor_losses: list[float],
        vf_losses: list[float],
        kls: list[float],
        step_sizes: list[float],
    ) -> NPGTrainingStats:
        """The stats of one update; ``step_sizes`` (constant for NPG) serve subclasses."""
        return NPGTrainingStats(
            actor_loss=SequenceSummaryStats.from_sequence(actor_losses),
            vf_loss=SequenceSummaryStats.from_sequence(vf_losses),
            kl=SequenceSummaryStats.from_sequence(kls),
        )

    def _update_actor(self, minibatch: Batch) -> tuple[float, float, float]:
        """One natural-gradient step on ``minibatch``; returns (actor loss, KL, step size)."""
        params = self._actor_params()
        result = self.policy(minibatch)
        dist = result.dist
        actor_loss = self._surrogate_loss(dist, minibatch)
        (loss_value,) = finite_loss_values(
            f"the {type(self).__name__} actor update", actor_loss=actor_loss
        )
        flat_grads = flat_grad(actor_loss, params, retain_graph=True).detach()
        old_dist = self._constant_copy(result, minibatch)
        kl = kl_divergence(old_dist, dist).mean()
        flat_kl_grad = flat_grad(kl, params, create_graph=True)
        direction = -conjugate_gradients(
            lambda v: self.fisher_vector_product(v, flat_kl_grad), flat_grads, self._cg_steps
        )
        old_params = torch.cat([p.detach().reshape(-1) for p in params])
        step_size = self._step_along(
            minibatch, direction, old_params, old_dist, loss_value, flat_kl_grad
        )
        with torch.no_grad():
            new_kl = kl_divergence(old_dist, self.policy(minibatch).dist).mean().item()
        return loss_value, new_kl, step_size

    def _constant_copy(self, result: Batch, minibatch: Batch) -> Distribution:
        """The distribution of the policy's ``result`` as a constant (outside the graph).

        A categorical distribution is copied with its tensors detached (so a legal-action mask
        applied by the policy is kept); others are rebuilt from the detached actor output when
        that is a tensor or a tuple of tensors (saving a forward pass), else recomputed without
        gradients.
        """
        if isinstance(result.dist, Categorical):
            # the policy's (possibly masked) distribution itself, not one rebuilt from the raw
            # logits: a shallow copy whose tensors are detached
            constant = copy.copy(result.dist)
            for name, value in vars(constant).items():
                if isinstance(value, torch.Tensor):
                    setattr(constant, name, value.detach())
            return constant
        dist_input = result.logits
        dist_fn: Callable[[Any], Distribution] = self.policy.dist_fn
        if isinstance(dist_input, torch.Tensor):
            return dist_fn(dist_input.detach())
        if isinstance(dist_input, tuple) and all(isinstance(x, torch.Tensor) for x in dist_input):
            return dist_fn(tuple(x.detach() for x in dist_input))
        with torch.no_grad():
            return self.policy(minibatch).dist

    def _step_along(
        self,
        minibatch: Batch,
        direction: torch.Tensor,
        old_params: torch.Tensor,
        old_dist: Distribution,
        actor_loss: float,
        flat_kl_grad: torch.Tensor,
    ) -> float:
        """Move the actor's parameters along ``direction``; returns the step size taken.

        NPG takes the fixed step ``trust_region_size``; the other arguments let subclasses
        search for a step (TRPO).
        """
        set_flat_params(self._actor_params(), old_params + self.trust_region_size * direction)
        return self.trust_region_size
