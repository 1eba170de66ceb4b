"""Fully parameterized quantile functions (Yang et al. 2019, "Fully Parameterized Quantile
Function for Distributional Reinforcement Learning"): a fraction proposal network chooses where
to place the quantiles, and the quantile network (IQN's) evaluates them there.

The quantile network learns with QR-DQN's quantile Huber loss at the proposed midpoints
``tau_hat``; the proposal network learns to minimise the 1-Wasserstein distance between the true
quantile function and its staircase approximation, through :func:`fraction_proposal_loss`.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import Algorithm, PolicyState
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy, q_network_input
from tianshou.algorithm.modelfree.qrdqn import (
    QRDQN,
    QRDQNPolicy,
    quantile_huber_loss,
    quantiles_of_actions,
    weighted_mean,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.utils.converter import to_numpy
from tianshou.utils.net.discrete import FractionProposalNetwork, FullQuantileFunction


@dataclass(kw_only=True)
class FQFTrainingStats(SimpleLossTrainingStats):
    """The losses of one FQF update; ``loss`` is ``quantile_loss + fraction_loss - ent_coef *
    entropy_loss``.

    :param quantile_loss: the quantile Huber loss of the quantile network.
    :param fraction_loss: the fraction proposal (1-Wasserstein gradient) loss.
    :param entropy_loss: the mean entropy of the proposed fraction widths.
    """

    quantile_loss: float
    fraction_loss: float
    entropy_loss: float


def fraction_proposal_loss(
    taus_BN1: torch.Tensor, quantile_hats_BN: torch.Tensor, quantiles_tau_BN: torch.Tensor
) -> torch.Tensor:
    """The loss whose gradient with respect to the inner fractions is that of the 1-Wasserstein
    distance (Yang et al. 2019, Proposition 1): ``2 F^-1(tau_i) - F^-1(tau_hat_{i-1}) -
    F^-1(tau_hat_i)`` for i from 1 to N-1.

    Where the estimated quantile function is not monotone, each of the two differences takes
    the sign that keeps it a distance (as the published library and the authors' code do).

    :param taus_BN1: the proposed fractions ``(B, N + 1)``, ``tau_0 = 0`` to ``tau_N = 1``;
        the loss's gradient reaches the proposal network through them.
    :param quantile_hats_BN: quantiles of the taken actions at the midpoints ``tau_hat``.
    :param quantiles_tau_BN: quantiles of the taken actions at the inner fractions, ``(B, N-1)``.
    :return: the scalar loss (mean over the batch).
    """
    with torch.no_grad():
        hats = quantile_hats_BN
        at_taus = quantiles_tau_BN
        below = at_taus - hats[:, :-1]
        above = at_taus - hats[:, 1:]
        previous = torch.cat([hats[:, :1], at_taus[:, :-1]], dim=1)
        following = torch.cat([at_taus[:, 1:], hats[:, -1:]], dim=1)
        gradient = torch.where(at_taus > previous, below, -below) + torch.where(
            at_taus < following, above, -above
        )
    return (gradient * taus_BN1[:, 1:-1]).sum(1).mean()


class FQFPolicy(QRDQNPolicy):
    """Acts greedily on the expectation of the quantiles at proposed fractions.

    The Q-value of an action is ``sum_i (tau_{i+1} - tau_i) * F^-1(tau_hat_i)``, the mean of the
    staircase quantile function the proposal defines.

    :param model: the full quantile function (quantile network).
    :param fraction_model: the fraction proposal network.
    :param action_space: the environment's ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    :param eps_training: probability of a random action inside training steps.
    :param eps_inference: probability of a random action outside training steps.
    """

    def __init__(
        self,
        *,
        model: FullQuantileFunction,
        fraction_model: FractionProposalNetwork,
        action_space: gym.spaces.Space,
        observation_space: gym.Space | None = None,
        eps_training: float = 0.0,
        eps_inference: float = 0.0,
    ) -> None:
        super().__init__(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            eps_training=eps_training,
            eps_inference=eps_inference,
        )
        self.fraction_model = fraction_model

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: torch.nn.Module | None = None,
        fractions: Batch | None = None,
        **kwargs: Any,
    ) -> Batch:
        """Greedy actions for ``batch.obs`` with quantiles at proposed (or given) fractions.

        :param model: the network to evaluate instead of ``self.model`` (the target network).
        :param fractions: a Batch with ``taus`` and ``tau_hats`` (and ``entropies``), as a
            previous call returned, to evaluate at those fractions instead of proposing new ones.
        :return: a Batch with ``logits`` (quantiles ``(B, n_actions, N)``), ``act`` (numpy),
            ``state``, ``fractions`` (Batch of ``taus (B, N+1)``, ``tau_hats (B, N)``,
            ``entropies (B,)``) and ``quantiles_tau`` (quantiles at the inner fractions in
            training mode, else None).
        """
        obs, mask = q_network_input(batch)
        given = None
        if fractions is not None:
            given = (fractions.taus, fractions.tau_hats, fractions.entropies)
        (logits, proposed, quantiles_tau), hidden = (model or self.model)(
            obs,
            propose_model=self.fraction_model,
            fractions=given,
            state=state,
            info=batch.get("info"),
        )
        if fractions is None:
            taus, tau_hats, entropies = proposed
            fractions = Batch(taus=taus, tau_hats=tau_hats, entropies=entropies)
        widths = fractions.taus[:, 1:] - fractions.taus[:, :-1]
        expectation = (widths.unsqueeze(1) * logits).sum(2)
        q = DiscreteQLearningPolicy.compute_q_value(self, expectation, mask)
        return batch_of_parsed_values(
            {
                "logits": logits,
                "act": to_numpy(q.argmax(dim=1)),
                "state": hidden,
                "fractions": fractions,
                "quantiles_tau": quantiles_tau,
            }
        )


class FQF(QRDQN[FQFPolicy]):
    """FQF: the quantile network learns by the quantile Huber loss at the proposed midpoints,
    the proposal network by the fraction loss minus an entropy bonus, each with its optimizer.

    :param policy: the FQF policy (quantile network and fraction proposal network).
    :param optim: the factory of the quantile network's optimizer.
    :param fraction_optim: the factory of the fraction proposal network's optimizer.
    :param gamma: discount factor in [0, 1].
    :param num_fractions: number of fractions ``N`` (at least 2); must match the proposal
        network's ``num_fractions``.
    :param ent_coef: weight of the proposal's entropy bonus; larger values keep the fractions
        closer to uniform.
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the quantile network into the target network every this
        many updates (0: no target network).
    """

    def __init__(
        self,
        *,
        policy: FQFPolicy,
        optim: OptimizerFactory,
        fraction_optim: OptimizerFactory,
        gamma: float = 0.99,
        num_fractions: int = 32,
        ent_coef: float = 0.0,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        proposed = policy.fraction_model.num_fractions
        if proposed != num_fractions:
            raise ValueError(
                f"num_fractions={num_fractions} differs from the fraction model's "
                f"num_fractions={proposed}; pass the same number to both"
            )
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            num_quantiles=num_fractions,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )
        self.ent_coef = ent_coef
        self.fraction_optim = self._create_optimizer(self.policy.fraction_model, fraction_optim)

    def _create_policy_optimizer(self, optim: OptimizerFactory) -> Algorithm.Optimizer:
        """The quantile network's optimizer (the proposal network has its own)."""
        return self._create_optimizer(self.policy.model, optim)

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """Target quantiles ``(B, N)`` at the greedy next action, at the fractions the online
        networks propose for the next observation."""
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        online = self._propose_without_inner_quantiles(obs_batch)
        if self.model_old is None:
            next_quantiles = online.logits
        else:
            next_quantiles = self.policy(
                obs_batch, model=self.model_old, fractions=online.fractions
            ).logits
        return quantiles_of_actions(next_quantiles, online.act)

    def _propose_without_inner_quantiles(self, obs_batch: Batch) -> Batch:
        """The online policy's output for ``obs_batch`` without ``quantiles_tau``.

        The quantile network computes the quantiles at the inner fractions (a second pass of its
        head, for the fraction loss only) when its own ``training`` flag is set; targets do not
        need them, so that flag alone is lowered meanwhile. Its sub-modules keep their mode, so
        e.g. dropout in the body behaves as in any other training-time pass.
        """
        model = self.policy.model
        was_training = model.training
        model.training = False
        try:
            return self.policy(obs_batch)
        finally:
            model.training = was_training

    def _update_with_batch(self, batch: Batch) -> FQFTrainingStats:
        """One step of each optimizer: the proposal network on the fraction loss minus the
        entropy bonus, the quantile network on the quantile Huber loss. Stores each sample's
        error in ``batch.weight`` for a prioritized buffer."""
        self._periodically_update_lagged_network_weights()
        out = self.policy(batch)
        fractions = out.fractions
        quantile_hats = quantiles_of_actions(out.logits, batch.act)
        loss_B, priority_B = quantile_huber_loss(quantile_hats, batch.returns, fractions.tau_hats)
        quantile_loss = weighted_mean(loss_B, batch)
        fraction_loss = fraction_proposal_loss(
            fractions.taus,
            quantile_hats.detach(),
            quantiles_of_actions(out.quantiles_tau, batch.act),
        )
        entropy_loss = fractions.entropies.mean()
        fraction_entropy_loss = fraction_loss - self.ent_coef * entropy_loss
        # one finite check of all losses before either network steps
        values = self.fraction_optim.step_with_loss_values(
            fraction_entropy_loss,
            quantile_loss=quantile_loss,
            fraction_loss=fraction_loss,
            entropy_loss=entropy_loss,
        )
        self.optim.step(quantile_loss)
        batch.weight = priority_B
        fraction_entropy_value, quantile_value, fraction_value, entropy_value = values
        return FQFTrainingStats(
            loss=quantile_value + fraction_entropy_value,
            quantile_loss=quantile_value,
            fraction_loss=fraction_value,
            entropy_loss=entropy_value,
        )
