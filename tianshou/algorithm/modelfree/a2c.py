"""Advantage actor-critic: a stochastic actor trained on GAE advantages from a learned critic.

``ActorCriticOnPolicyAlgorithm`` holds what A2C, PPO and the natural-gradient methods share: the
critic, the value estimates of a collected batch, generalised advantage estimation and optional
return scaling.
"""

from abc import ABC
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution

from tianshou.algorithm._next_values import next_values, successor_rows
from tianshou.algorithm._update_helpers import (
    action_tensor,
    iterate_minibatches,
    per_sample,
    training_view,
)
from tianshou.algorithm.algorithm_base import OnPolicyAlgorithm, TrainingStats
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.stats import SequenceSummaryStats
from tianshou.spaces.masks import network_input
from tianshou.utils.statistics import RunningMeanStd
from tianshou.utils.torch_utils import torch_device


@dataclass(kw_only=True)
class A2CTrainingStats(TrainingStats):
    """Loss summaries over the gradient steps of one A2C/PPO update.

    ``actor_loss`` is the policy-gradient (for PPO: clipped surrogate) loss, ``vf_loss`` the
    critic's squared error, ``ent_loss`` the mean entropy and ``loss`` their weighted total.
    """

    loss: SequenceSummaryStats
    actor_loss: SequenceSummaryStats
    vf_loss: SequenceSummaryStats
    ent_loss: SequenceSummaryStats
    gradient_steps: int = 0


class ActorCriticOnPolicyAlgorithm(OnPolicyAlgorithm[ProbabilisticActorPolicy], ABC):
    """Base of the on-policy actor-critic algorithms: critic values, GAE and return scaling.

    :param policy: the stochastic policy (its ``actor`` is trained).
    :param critic: maps observations to state values, ``(B, 1)`` or ``(B,)``.
    :param optim: the optimizer factory; one optimizer covers actor and critic (parameters a
        shared preprocessing network contributes to both are counted once).
    :param optim_include_actor: whether the optimizer also trains the actor (False for
        algorithms that update the actor by other means, like natural gradients).
    :param max_grad_norm: clip the gradients' global norm to this value (None: no clipping).
    :param gae_lambda: the GAE lambda in [0, 1]: 0 gives one-step TD advantages, 1 Monte-Carlo.
    :param max_batchsize: chunk size for the no-grad value/log-probability passes over a batch.
    :param gamma: discount factor in [0, 1].
    :param return_scaling: divide returns (the critic's targets) by a running estimate of
        their standard deviation; the critic then predicts scaled values.
    """

    def __init__(
        self,
        *,
        policy: ProbabilisticActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory,
        optim_include_actor: bool = True,
        max_grad_norm: float | None = None,
        gae_lambda: float = 0.95,
        max_batchsize: int = 256,
        gamma: float = 0.99,
        return_scaling: bool = False,
    ) -> None:
        if not 0.0 <= gae_lambda <= 1.0:
            raise ValueError(f"gae_lambda must be in [0, 1], got {gae_lambda}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if max_batchsize < 1:
            raise ValueError(f"max_batchsize must be a positive int, got {max_batchsize}")
        super().__init__(policy=policy)
        self.critic = critic
        self.gae_lambda = gae_lambda
        self.max_batchsize = max_batchsize
        self.gamma = gamma
        self.return_scaling = return_scaling
        self.max_grad_norm = max_grad_norm
        self.ret_rms = RunningMeanStd()
        self._eps = 1e-8
        trained: nn.Module = nn.ModuleList([self.policy, critic]) if optim_include_actor else critic
        self.optim = self._create_optimizer(trained, optim, max_grad_norm=max_grad_norm)

    def _values(self, obs: object) -> torch.Tensor:
        """State values of ``obs`` as a flat tensor, computed in ``max_batchsize`` chunks."""
        num = len(obs)  # type: ignore[arg-type]
        chunks = []
        with torch.no_grad():
            for start in range(0, num, self.max_batchsize):
                chunk = obs[start : start + self.max_batchsize]  # type: ignore[index]
                chunks.append(self._critic_values(chunk, len(chunk)))
        return torch.cat(chunks)

    def _state_values(
        self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The critic's values of ``batch.obs`` and ``batch.obs_next``, flat, without gradient.

        A next observation that equals the observation of another row takes that row's value
        (:mod:`tianshou.algorithm._next_values`), and a terminated row's next value, which GAE
        never uses, is left at zero; the critic sees only the other next observations.
        Recurrent algorithms override it to run the critic over sequences from stored states.
        """
        values = self._values(batch.obs)
        rows = self._successor_rows(batch, buffer, indices)
        if rows is None:
            return values, self._values(batch.obs_next)
        return values, next_values(values, batch.obs_next, rows, batch.terminated, self._values)

    def _successor_rows(
        self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray
    ) -> np.ndarray | None:
        """:func:`~tianshou.algorithm._next_values.successor_rows` of ``batch`` (PPO keeps them
        for the value passes of one update, which all see the same batch)."""
        return successor_rows(batch.obs, batch.obs_next, buffer, indices)

    def _critic_values(self, obs: object, num_obs: int) -> torch.Tensor:
        """The critic's values for ``obs`` flattened to ``(B,)``, checking there is one each.

        Masked observations give the critic their ``obs`` entry, the input the actor sees.
        """
        values = self.critic(network_input(obs))
        if values.numel() != num_obs:
            raise ValueError(
                f"the critic must output one value per observation, got shape "
                f"{tuple(values.shape)} for {num_obs} observations"
            )
        return values.flatten()

    def _old_log_probs(self, batch: Batch) -> torch.Tensor:
        """Log-probabilities of the stored actions under the collecting policy, one row each."""
        view = training_view(batch, torch_device(self.policy))
        chunks = []
        with torch.no_grad():
            for start in range(0, len(view), self.max_batchsize):
                chunk = view[start : start + self.max_batchsize]
                # through forward, as every collected action was: it draws actions, but keeps
                # the random stream (and so the trajectories) of the published algorithm
                chunks.append(self.policy(chunk).dist.log_prob(chunk.act))
        return torch.cat(chunks)

    def _add_returns_and_advantages(
        self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray
    ) -> Batch:
        """Set ``v_s`` (old values), ``returns`` and ``adv`` (GAE) on ``batch`` as tensors."""
        v_s_tensor, v_next_tensor = self._state_values(batch, buffer, indices)
        v_s = v_s_tensor.cpu().numpy().astype(np.float64)
        v_s_ = v_next_tensor.cpu().numpy().astype(np.float64)
        if self.return_scaling:
            # the critic predicts scaled values; undo the scaling (without the mean, as is
            # customary for value normalisation) before bootstrapping
            scale = np.sqrt(self.ret_rms.var + self._eps)
            v_s, v_s_ = v_s * scale, v_s_ * scale
        returns, advantages = self.compute_episodic_return(
            batch, buffer, indices, v_s_=v_s_, v_s=v_s, gamma=self.gamma, gae_lambda=self.gae_lambda
        )
        if self.return_scaling:
            scaled_returns = returns / np.sqrt(self.ret_rms.var + self._eps)
            self.ret_rms.update(returns)
            returns = scaled_returns
        batch.v_s = v_s_tensor
        batch.returns = torch.as_tensor(returns, dtype=v_s_tensor.dtype, device=v_s_tensor.device)
        batch.adv = torch.as_tensor(advantages, dtype=v_s_tensor.dtype, device=v_s_tensor.device)
        return batch


class A2C(ActorCriticOnPolicyAlgorithm):
    """Synchronous advantage actor-critic.

    Each gradient step minimises ``actor_loss + vf_coef * vf_loss - ent_coef * entropy`` with
    ``actor_loss = -mean(log pi(a|s) * A)`` on GAE advantages ``A``.

    :param policy: the stochastic policy.
    :param critic: the state-value network.
    :param optim: the optimizer factory for actor and critic together.
    :param vf_coef: weight of the critic's squared error in the total loss.
    :param ent_coef: weight of the entropy bonus (larger values keep exploring longer).
    :param max_grad_norm: clip the gradients' global norm (None: no clipping).
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
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        max_grad_norm: float | None = None,
        gae_lambda: float = 0.95,
        max_batchsize: int = 256,
        gamma: float = 0.99,
        return_scaling: bool = False,
    ) -> None:
        super().__init__(
            policy=policy,
            critic=critic,
            optim=optim,
            optim_include_actor=True,
            max_grad_norm=max_grad_norm,
            gae_lambda=gae_lambda,
            max_batchsize=max_batchsize,
            gamma=gamma,
            return_scaling=return_scaling,
        )
        self.vf_coef = vf_coef
        self.ent_coef = ent_coef

    def _mean_entropy(self, dist: Distribution) -> torch.Tensor:
        """The batch's mean entropy; outside the autograd graph when ``ent_coef`` is 0, where it
        is only reported (the backward pass then skips it)."""
        if self.ent_coef == 0.0:
            with torch.no_grad():
                return dist.entropy().mean()
        return dist.entropy().mean()

    def _total_loss(
        self, actor_loss: torch.Tensor, vf_loss: torch.Tensor, ent_loss: torch.Tensor
    ) -> torch.Tensor:
        """``actor_loss + vf_coef * vf_loss - ent_coef * ent_loss``, without the entropy term
        when ``ent_coef`` is 0 (subtracting zero changes nothing)."""
        loss = actor_loss + self.vf_coef * vf_loss
        if self.ent_coef == 0.0:
            return loss
        return loss - self.ent_coef * ent_loss

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        batch = self._add_returns_and_advantages(batch, buffer, indices)
        batch.act = action_tensor(batch.act, torch_device(self.policy))
        return batch

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> A2CTrainingStats:
        history: list[list[float]] = []
        view = training_view(batch, torch_device(self.policy))
        for minibatch in iterate_minibatches(view, batch_size, repeat):
            dist = self.policy._update_dist(minibatch)
            adv = minibatch.adv
            log_prob = per_sample(dist.log_prob(minibatch.act), len(adv))
            actor_loss = -(log_prob * adv).mean()
            value = self._critic_values(minibatch.obs, len(adv))
            vf_loss = (minibatch.returns - value).pow(2).mean()
            ent_loss = self._mean_entropy(dist)
            loss = self._total_loss(actor_loss, vf_loss, ent_loss)
            history.append(
                self.optim.step_with_loss_values(
                    loss, actor_loss=actor_loss, vf_loss=vf_loss, entropy=ent_loss
                )
            )
        return summarize_losses(history)


def summarize_losses(history: list[list[float]]) -> A2CTrainingStats:
    """Turn per-step ``(loss, actor_loss, vf_loss, ent_loss)`` records into training stats."""
    columns = np.asarray(history, dtype=np.float64).T
    loss, actor_loss, vf_loss, ent_loss = (SequenceSummaryStats.from_sequence(c) for c in columns)
    return A2CTrainingStats(
        loss=loss,
        actor_loss=actor_loss,
        vf_loss=vf_loss,
        ent_loss=ent_loss,
        gradient_steps=len(history),
    )
