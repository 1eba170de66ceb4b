"""Proximal policy optimisation: A2C with a clipped surrogate objective.

The probability ratio between the current and the collecting policy is clipped to
``[1 - eps_clip, 1 + eps_clip]``, so several passes over one batch cannot move the policy far
from the one that collected it.
"""

import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution

from tianshou.algorithm._update_helpers import iterate_minibatches, per_sample, training_view
from tianshou.algorithm.compiled_update import is_array
from tianshou.algorithm.modelfree.a2c import A2C, A2CTrainingStats, summarize_losses
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.utils.torch_utils import torch_device


class PPO(A2C):
    """Proximal policy optimisation with optional dual clipping and value clipping.

    :param policy: the stochastic policy.
    :param critic: the state-value network.
    :param optim: the optimizer factory for actor and critic together.
    :param eps_clip: the ratio clip range ``epsilon``; also the value-clip range.
    :param dual_clip: the dual-clip constant ``c > 1`` (Ye et al. 2020): for negative
        advantages the surrogate is bounded below by ``c * A``; None disables it.
    :param value_clip: clip the new value estimate to ``v_old +- eps_clip`` and take the larger
        of the clipped and unclipped squared errors.
    :param advantage_normalization: standardise advantages within every minibatch.
    :param recompute_advantage: recompute values and advantages before every pass after the
        first, with the critic as it is then.
    :param vf_coef: weight of the critic's squared error in the total loss.
    :param ent_coef: weight of the entropy bonus.
    :param max_grad_norm: clip the gradients' global norm (None: no clipping).
    :param gae_lambda: GAE lambda in [0, 1].
    :param max_batchsize: chunk size for the no-grad passes in preprocessing.
    :param gamma: discount factor in [0, 1].
    :param return_scaling: scale the critic's targets by running return statistics.

    Its update can run compiled (:meth:`~tianshou.algorithm.Algorithm.compile_update`).
    """

    _supports_compiled_update = True

    def __init__(
        self,
        *,
        policy: ProbabilisticActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory,
        eps_clip: float = 0.2,
        dual_clip: float | None = None,
        value_clip: bool = False,
        advantage_normalization: bool = True,
        recompute_advantage: bool = False,
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        max_grad_norm: float | None = None,
        gae_lambda: float = 0.95,
        max_batchsize: int = 256,
        gamma: float = 0.99,
        return_scaling: bool = False,
    ) -> None:
        if dual_clip is not None and dual_clip <= 1.0:
            raise ValueError(f"dual_clip must be greater than 1.0 (or None), got {dual_clip}")
        if eps_clip <= 0.0:
            raise ValueError(f"eps_clip must be positive, got {eps_clip}")
        super().__init__(
            policy=policy,
            critic=critic,
            optim=optim,
            vf_coef=vf_coef,
            ent_coef=ent_coef,
            max_grad_norm=max_grad_norm,
            gae_lambda=gae_lambda,
            max_batchsize=max_batchsize,
            gamma=gamma,
            return_scaling=return_scaling,
        )
        self.eps_clip = eps_clip
        self.dual_clip = dual_clip
        self.value_clip = value_clip
        self.advantage_normalization = advantage_normalization
        self.recompute_adv = recompute_advantage
        self._buffer: ReplayBuffer | None = None
        self._indices: np.ndarray | None = None
        # the successor rows of the batch being updated on, once computed (a 1-tuple, since
        # None is a result: observations whose values cannot be reused)
        self._batch_successor_rows: tuple[np.ndarray | None] | None = None

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        if self.recompute_adv:
            self._buffer, self._indices = buffer, indices
        self._batch_successor_rows = None  # a new batch
        batch = super()._preprocess_batch(batch, buffer, indices)
        batch.logp_old = self._old_log_probs(batch)
        return batch

    def _successor_rows(
        self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray
    ) -> np.ndarray | None:
        """Computed once per update: with ``recompute_advantage`` every pass values the same
        batch, and comparing its observations again each pass would repeat the work."""
        if self._batch_successor_rows is None:
            self._batch_successor_rows = (super()._successor_rows(batch, buffer, indices),)
        return self._batch_successor_rows[0]

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> A2CTrainingStats:
        history: list[list[float]] = []
        view = training_view(batch, torch_device(self.policy))
        for pass_index in range(repeat):
            if pass_index > 0 and self.recompute_adv:
                view = self._recomputed_view(batch)
            for minibatch in iterate_minibatches(view, batch_size, 1):
                history.append(self._gradient_step(minibatch))
        return summarize_losses(history)

    def _recomputed_view(self, batch: Batch) -> Batch:
        """The update view with values, returns and advantages from the current critic."""
        if self._buffer is None or self._indices is None:
            raise RuntimeError("recompute_advantage needs the buffer seen in _preprocess_batch")
        batch = self._add_returns_and_advantages(batch, self._buffer, self._indices)
        return training_view(batch, torch_device(self.policy))

    def _gradient_step(self, minibatch: Batch) -> list[float]:
        """One optimizer step on ``minibatch``; returns (loss, clip, value, entropy) losses."""
        targets = (minibatch.act, minibatch.adv, minibatch.logp_old, minibatch.v_s)
        compiler = self._update_compiler if is_array(minibatch.obs) else None
        if compiler is None:
            dist = self.policy._update_dist(minibatch)
            value = self._critic_values(minibatch.obs, len(minibatch.adv))
            losses = self._losses(dist, value, *targets, minibatch.returns)
        else:
            device = compiler.device
            tensors = [
                torch.as_tensor(x, device=device)
                for x in (minibatch.obs, *targets, minibatch.returns)
            ]
            losses = compiler("minibatch", self._compiled_losses, *tensors)
        loss, clip_loss, vf_loss, ent_loss = losses
        return self.optim.step_with_loss_values(
            loss, clip_loss=clip_loss, vf_loss=vf_loss, entropy=ent_loss
        )

    def _losses(
        self,
        dist: Distribution,
        value: torch.Tensor,
        act: torch.Tensor,
        adv: torch.Tensor,
        logp_old: torch.Tensor,
        v_s: torch.Tensor,
        returns: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """``(loss, clip loss, value loss, entropy)`` of a minibatch, given the current
        policy's distribution and the critic's values ``(B,)`` at its observations."""
        if self.advantage_normalization and len(adv) > 1:
            adv = (adv - adv.mean()) / (adv.std() + self._eps)
        log_prob = dist.log_prob(act)
        log_ratio = log_prob - logp_old.reshape(log_prob.shape)
        ratio = per_sample(log_ratio.exp().float(), len(adv))
        clip_loss = -self.clipped_surrogate(ratio, adv).mean()
        vf_loss = self.value_loss(value, v_s, returns)
        ent_loss = self._mean_entropy(dist)
        return self._total_loss(clip_loss, vf_loss, ent_loss), clip_loss, vf_loss, ent_loss

    def _compiled_losses(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        adv: torch.Tensor,
        logp_old: torch.Tensor,
        v_s: torch.Tensor,
        returns: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The compiled gradient step: :meth:`_losses` of tensor observations (no mask)."""
        dist_input, _ = self.policy.actor(obs, state=None, info=None)
        value = self.critic(obs).flatten()
        return self._losses(
            self.policy.dist_fn(dist_input), value, act, adv, logp_old, v_s, returns
        )

    def clipped_surrogate(self, ratio: torch.Tensor, adv: torch.Tensor) -> torch.Tensor:
        """The per-sample surrogate objective (to be maximised), with dual clip if enabled.

        :param ratio: ``pi_new(a|s) / pi_old(a|s)``, shape ``(D, B)`` or ``(B,)``.
        :param adv: advantages, shape ``(B,)``.
        """
        surr1 = ratio * adv
        surr2 = ratio.clamp(1.0 - self.eps_clip, 1.0 + self.eps_clip) * adv
        clipped = torch.min(surr1, surr2)
        if self.dual_clip is None:
            return clipped
        return torch.where(adv < 0, torch.max(clipped, self.dual_clip * adv), clipped)

    def value_loss(
        self, value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor
    ) -> torch.Tensor:
        """The critic's mean squared error, pessimistically clipped around ``old_value``."""
        error = (returns - value).pow(2)
        if not self.value_clip:
            return error.mean()
        clipped_value = old_value + (value - old_value).clamp(-self.eps_clip, self.eps_clip)
        clipped_error = (returns - clipped_value).pow(2)
        return torch.max(error, clipped_error).mean()
