"""Discrete conservative Q-learning (Kumar et al. 2020, "Conservative Q-Learning for Offline
Reinforcement Learning"), built on QR-DQN as in the paper's discrete experiments.

Offline, the greedy target of Q-learning chases actions the data set never tried, whose values
nothing corrects. CQL adds to QR-DQN's quantile regression the regulariser
``logsumexp_a Q(s, a) - Q(s, a_data)``: it pushes down a soft maximum over all actions and
pushes up the actions the data contains, so that unseen actions are not over-valued. ``Q`` is
the mean of the return quantiles.
"""

from dataclasses import dataclass
from typing import Generic

import torch

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import OfflineAlgorithm
from tianshou.algorithm.modelfree.qrdqn import (
    QRDQN,
    TQRDQNPolicy,
    quantile_huber_loss,
    quantiles_of_actions,
    weighted_mean,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch


@dataclass(kw_only=True)
class DiscreteCQLTrainingStats(SimpleLossTrainingStats):
    """The losses of one discrete CQL update.

    :param qr_loss: the quantile Huber loss of QR-DQN.
    :param cql_loss: the conservative regulariser (before weighting by ``min_q_weight``).
    """

    qr_loss: float
    cql_loss: float


def cql_regulariser(q_values: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
    """``mean_B(logsumexp_a Q(s, a) - Q(s, a_data))``, non-negative up to ``log n_actions``.

    :param q_values: Q-values ``(B, n_actions)``; illegal actions may be ``-inf``.
    :param act: the data's actions ``(B,)``, long.
    """
    data_q = q_values.gather(1, act.reshape(-1, 1)).squeeze(1)
    return (q_values.logsumexp(dim=1) - data_q).mean()


# the offline and the off-policy base both define create_trainer; the offline one (first in
# the MRO) is meant, so OfflineTrainer runs this algorithm
class DiscreteCQL(  # type: ignore[misc]
    OfflineAlgorithm[TQRDQNPolicy], QRDQN[TQRDQNPolicy], Generic[TQRDQNPolicy]
):
    """QR-DQN plus ``min_q_weight`` times the CQL regulariser, trained on a fixed data set.

    :param policy: a QRDQN policy whose model outputs ``(B, n_actions, num_quantiles)``.
    :param optim: the factory of the model's optimizer.
    :param min_q_weight: weight of the conservative regulariser; larger values keep the greedy
        policy closer to the data's actions.
    :param gamma: discount factor in [0, 1].
    :param num_quantiles: number of quantiles the model outputs per action (at least 2).
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the model into the target network every this many updates
        (0: no target network).
    """

    def __init__(
        self,
        *,
        policy: TQRDQNPolicy,
        optim: OptimizerFactory,
        min_q_weight: float = 10.0,
        gamma: float = 0.99,
        num_quantiles: int = 200,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        if min_q_weight < 0:
            raise ValueError(f"min_q_weight must be non-negative, got {min_q_weight}")
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            num_quantiles=num_quantiles,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )
        self.min_q_weight = min_q_weight

    def _update_with_batch(self, batch: Batch) -> DiscreteCQLTrainingStats:
        """One gradient step on the quantile Huber loss plus the weighted CQL regulariser;
        stores each sample's quantile error in ``batch.weight`` for a prioritized buffer."""
        self._periodically_update_lagged_network_weights()
        all_quantiles, q_values, _ = self.policy.evaluate(batch)
        act = torch.as_tensor(batch.act, device=q_values.device, dtype=torch.long).reshape(-1)
        quantiles = quantiles_of_actions(all_quantiles, act)
        loss_B, priority_B = quantile_huber_loss(quantiles, batch.returns, self.tau_hat)
        qr_loss = weighted_mean(loss_B, batch)
        cql_loss = cql_regulariser(q_values, act)
        loss = qr_loss + self.min_q_weight * cql_loss
        values = self.optim.step_with_loss_values(loss, qr_loss=qr_loss, cql_loss=cql_loss)
        batch.weight = priority_B
        return DiscreteCQLTrainingStats(loss=values[0], qr_loss=values[1], cql_loss=values[2])
