"""Trust region policy optimisation (Schulman et al. 2015): NPG with a KL-constrained line search.

The natural-gradient direction ``x`` is scaled to the edge of the trust region,
``beta = sqrt(2 * max_kl / (x^T F x))``, then shrunk by ``backtrack_coeff`` until the step both
keeps the mean KL divergence below ``max_kl`` and lowers the surrogate loss. If no step within
``max_backtracks`` tries does, the actor keeps its old parameters.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.distributions import Distribution, kl_divergence

from tianshou.algorithm.modelfree.npg import NPG, NPGTrainingStats, set_flat_params
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.stats import SequenceSummaryStats


@dataclass(kw_only=True)
class TRPOTrainingStats(NPGTrainingStats):
    """NPG's summaries plus ``step_size``, the accepted line-search step (0: none accepted)."""

    step_size: SequenceSummaryStats


class TRPO(NPG):
    """Trust region policy optimisation.

    :param policy: the stochastic policy; its ``actor`` is moved by the line search.
    :param critic: the state-value network.
    :param optim: the optimizer factory for the critic only.
    :param max_kl: the trust region: the largest mean KL divergence from the collecting policy
        a step may cause.
    :param backtrack_coeff: factor in (0, 1) shrinking the step after each rejected try.
    :param max_backtracks: how many step sizes to try before giving up on the minibatch.
    :param optim_critic_iters: critic optimizer steps per minibatch.
    :param trust_region_size: kept for NPG's interface; TRPO's step comes from ``max_kl``.
    :param advantage_normalization: standardise the advantages of each collected batch.
    :param gae_lambda: GAE lambda in [0, 1].
    :param max_batchsize: chunk size for the no-grad passes in preprocessing.
    :param gamma: discount factor in [0, 1].
    :param return_scaling: scale the critic's targets by running return statistics.
    """

    def __init__(
        self,
        *,
        policy: ProbabilisticActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory,
        max_kl: float = 0.01,
        backtrack_coeff: float = 0.8,
        max_backtracks: int = 10,
        optim_critic_iters: int = 5,
        trust_region_size: float = 0.5,
        advantage_normalization: bool = True,
        gae_lambda: float = 0.95,
        max_batchsize: int = 256,
        gamma: float = 0.99,
        return_scaling: bool = False,
    ) -> None:
        if max_kl <= 0:
            raise ValueError(f"max_kl must be positive, got {max_kl}")
        if not 0.0 < backtrack_coeff < 1.0:
            raise ValueError(f"backtrack_coeff must be in (0, 1), got {backtrack_coeff}")
        if max_backtracks < 1:
            raise ValueError(f"max_backtracks must be at least 1, got {max_backtracks}")
        super().__init__(
            policy=policy,
            critic=critic,
            optim=optim,
            optim_critic_iters=optim_critic_iters,
            trust_region_size=trust_region_size,
            advantage_normalization=advantage_normalization,
            gae_lambda=gae_lambda,
            max_batchsize=max_batchsize,
            gamma=gamma,
            return_scaling=return_scaling,
        )
        self.max_kl = max_kl
        self.backtrack_coeff = backtrack_coeff
        self.max_backtracks = max_backtracks

    def _training_stats(
        self,
        actor_losses: list[float],
        vf_losses: list[float],
        kls: list[float],
        step_sizes: list[float],
    ) -> TRPOTrainingStats:
        npg_stats = super()._training_stats(actor_losses, vf_losses, kls, step_sizes)
        return TRPOTrainingStats(
            **vars(npg_stats), step_size=SequenceSummaryStats.from_sequence(step_sizes)
        )

    def _step_along(
        self,
        minibatch: Batch,
        direction: torch.Tensor,
        old_params: torch.Tensor,
        old_dist: Distribution,
        actor_loss: float,
        flat_kl_grad: torch.Tensor,
    ) -> float:
        """Backtracking line search from the trust region's edge; returns the accepted step.

        Tries ``beta * backtrack_coeff^i`` for ``i = 0 .. max_backtracks - 1`` and keeps the
        first step with mean KL below ``max_kl`` and a lower surrogate loss than
        ``actor_loss``; restores ``old_params`` and returns 0 if none qualifies. A direction
        along which the KL divergence does not curve (a zero gradient, e.g. once the policy is
        certain on every state of the minibatch) has no trust-region edge: no step is taken.
        """
        curvature = direction.dot(self.fisher_vector_product(direction, flat_kl_grad)).item()
        if not curvature > 0:  # also NaN
            return 0.0
        step_size = math.sqrt(2 * self.max_kl / curvature)
        params = self._actor_params()
        for _ in range(self.max_backtracks):
            set_flat_params(params, old_params + step_size * direction)
            with torch.no_grad():
                new_dist = self.policy(minibatch).dist
                new_loss = self._surrogate_loss(new_dist, minibatch).item()
                kl = kl_divergence(old_dist, new_dist).mean().item()
            if kl < self.max_kl and new_loss < actor_loss:
                return step_size
            step_size *= self.backtrack_coeff
        set_flat_params(params, old_params)
        return 0.0
