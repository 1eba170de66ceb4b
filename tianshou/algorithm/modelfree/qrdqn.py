"""Quantile-regression DQN (Dabney et al. 2017, "Distributional Reinforcement Learning with
Quantile Regression"): the network outputs ``N`` quantiles of the return per action, regressed onto
the target distribution's quantiles with the quantile Huber loss.

:func:`quantile_huber_loss` is the loss of the whole quantile family: IQN and FQF import it from
here.
"""

from typing import Any, Generic, TypeVar

import numpy as np
import torch
import torch.nn.functional as F

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.modelfree._quantile_huber_kernel import (
    can_fuse,
    fused_quantile_huber_loss,
)
from tianshou.algorithm.modelfree.dqn import (
    DiscreteQLearningPolicy,
    QLearningOffPolicyAlgorithm,
    batch_rows,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.spaces.masks import Mask


def quantile_huber_loss(
    quantiles_BN: torch.Tensor, target_BM: torch.Tensor, taus: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The quantile Huber loss (threshold 1) of predicted quantiles against target samples.

    For every pair of a predicted quantile ``q_i`` (at fraction ``tau_i``) and a target sample
    ``t_j``, with ``u = t_j - q_i``, the loss is ``|tau_i - 1{u < 0}| * huber(u)``; it is summed
    over the targets ``j`` and averaged over the quantiles ``i`` (as in the published library and
    the reference implementation of the paper's authors).

    On the CPU the loss runs as one fused pass over the pairs (see
    :mod:`~tianshou.algorithm.modelfree._quantile_huber_kernel`) when only the quantiles need a
    gradient; elsewhere it is computed with torch operations. Both agree up to float rounding.

    :param quantiles_BN: predicted quantiles of the taken actions, shape ``(B, N)``.
    :param target_BM: target return samples, shape ``(B, M)``; no gradient flows into them.
    :param taus: the fractions of the predicted quantiles, ``(N,)``, ``(1, N)`` or ``(B, N)``.
    :return: ``(loss (B,), priority (B,))``: the per-sample loss, and the same sum/mean of the
        plain Huber errors (the TD error a prioritized buffer stores).
    :raises ValueError: if the batch sizes of the quantiles and targets differ.
    """
    if quantiles_BN.ndim != 2 or target_BM.ndim != 2 or len(quantiles_BN) != len(target_BM):
        raise ValueError(
            f"quantiles {tuple(quantiles_BN.shape)} and targets {tuple(target_BM.shape)} must be "
            "(batch, N) and (batch, M) with the same batch size"
        )
    target_BM = target_BM.detach().to(quantiles_BN.dtype)
    taus_TN = taus.reshape(-1, quantiles_BN.shape[1]).to(quantiles_BN.dtype)
    if can_fuse(quantiles_BN, target_BM, taus_TN):
        return fused_quantile_huber_loss(quantiles_BN, target_BM, taus_TN)
    current_BNM, target_BNM = torch.broadcast_tensors(
        quantiles_BN.unsqueeze(2), target_BM.unsqueeze(1)
    )
    huber_BNM = F.huber_loss(current_BNM, target_BNM, reduction="none", delta=1.0)
    taus_1N1 = taus_TN.unsqueeze(2)
    # |tau - 1{u < 0}| for u = target - current: one select instead of a cast, subtraction and
    # absolute value over the whole (B, N, M) tensor
    below_BNM = target_BNM < current_BNM.detach()
    loss_B = (torch.where(below_BNM, 1.0 - taus_1N1, taus_1N1) * huber_BNM).sum(2).mean(1)
    priority_B = huber_BNM.detach().sum(2).mean(1)
    return loss_B, priority_B


def quantiles_of_actions(quantiles_BAN: torch.Tensor, act: Any) -> torch.Tensor:
    """The quantiles ``(B, N)`` of the given actions from per-action quantiles ``(B, A, N)``."""
    index = torch.as_tensor(act, device=quantiles_BAN.device, dtype=torch.long).reshape(-1)
    return quantiles_BAN[batch_rows(len(index), index.device), index]


def weighted_mean(loss_B: torch.Tensor, batch: Batch) -> torch.Tensor:
    """The mean of the per-sample losses, importance-weighted if the batch has a ``weight``."""
    weight = batch.__dict__.get("weight")
    if weight is None:
        return loss_B.mean()
    return (loss_B * torch.as_tensor(weight, device=loss_B.device, dtype=loss_B.dtype)).mean()


class QRDQNPolicy(DiscreteQLearningPolicy):
    """Acts greedily on the mean of the return quantiles that its model outputs.

    The model returns ``(quantiles (B, n_actions, N), state)``; the Q-value of an action is the
    mean of its ``N`` quantiles. Exploration and action masks are those of
    :class:`DiscreteQLearningPolicy`.
    """

    def compute_q_value(self, logits: torch.Tensor, mask: Mask | None) -> torch.Tensor:
        """Q-values ``(B, n_actions)``: the mean over the quantile dimension, masked."""
        return super().compute_q_value(logits.mean(2), mask)


TQRDQNPolicy = TypeVar("TQRDQNPolicy", bound=QRDQNPolicy)


class QRDQN(QLearningOffPolicyAlgorithm[TQRDQNPolicy], Generic[TQRDQNPolicy]):
    """QR-DQN: regress ``N`` fixed-fraction quantiles onto the n-step target distribution.

    The quantile fractions are the midpoints ``(2i + 1) / 2N`` of ``N`` equal intervals. The
    target distribution is the target network's quantiles at the online policy's greedy next
    action (or the model's own when there is no target network).

    :param policy: the policy whose model outputs ``(B, n_actions, num_quantiles)`` quantiles.
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param num_quantiles: number ``N`` of quantiles the model outputs per action (at least 2).
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the model into the target network every this many updates
        (0: no target network).
    """

    def __init__(
        self,
        *,
        policy: TQRDQNPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        num_quantiles: int = 200,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        if num_quantiles < 2:
            raise ValueError(f"num_quantiles must be at least 2, got {num_quantiles}")
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )
        self.num_quantiles = num_quantiles
        edges = torch.linspace(0.0, 1.0, num_quantiles + 1)
        self.tau_hat = torch.nn.Parameter(
            ((edges[:-1] + edges[1:]) / 2).view(1, -1, 1), requires_grad=False
        )

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """Target quantiles ``(B, M)`` at the online policy's greedy next action."""
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        next_quantiles, q_values, _ = self.policy.evaluate(obs_batch)
        if self.model_old is not None:
            next_quantiles = self.policy._model_output(obs_batch, model=self.model_old)[0]
        return quantiles_of_actions(next_quantiles, q_values.argmax(dim=1))

    def _current_quantiles(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The model's quantiles ``(B, N)`` of the taken actions, and their fractions (the raw
        model output suffices: no Q-values are needed to pick the taken actions)."""
        quantiles = self.policy._model_output(batch)[0]
        return quantiles_of_actions(quantiles, batch.act), self.tau_hat

    def _update_with_batch(self, batch: Batch) -> SimpleLossTrainingStats:
        """One gradient step on the quantile Huber loss; stores each sample's error in
        ``batch.weight`` so a prioritized buffer can update its priorities."""
        self._periodically_update_lagged_network_weights()
        quantiles, taus = self._current_quantiles(batch)
        loss_B, priority_B = quantile_huber_loss(quantiles, batch.returns, taus)
        (loss_value,) = self.optim.step_with_loss_values(weighted_mean(loss_B, batch))
        batch.weight = priority_B
        return SimpleLossTrainingStats(loss=loss_value)
