"""Discrete batch-constrained Q-learning (Fujimoto et al. 2019, "Benchmarking Batch Deep
Reinforcement Learning Algorithms").

Offline Q-learning over-estimates the value of actions the data set never shows. Discrete BCQ
trains, beside the Q-network, an imitator (a behaviour-cloning classifier of the data's actions)
and only lets the Q-network choose among actions the imitator deems likely enough: an action
``a`` is allowed in state ``s`` if ``pi(a|s) / max_b pi(b|s) >= tau`` (the paper's eq. 17), with
``pi`` the softmax of the imitator's logits. The arg-max of the Q-values over the allowed actions
is both how the policy acts and the next action of the (double Q-learning) TD target.

The n-step targets and the periodically copied target network are those of
:class:`~tianshou.algorithm.modelfree.dqn.QLearningOffPolicyAlgorithm`.
"""

import math
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import OfflineAlgorithm, PolicyState
from tianshou.algorithm.modelfree.dqn import (
    DiscreteQLearningPolicy,
    QLearningOffPolicyAlgorithm,
    q_network_input,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import Mask, action_mask, mask_logits, mask_q_values

float_info = torch.finfo(torch.float32)
"""Limits of float32, the dtype of the Q-values."""

INF = float_info.max
"""The penalty subtracted from the Q-values of filtered-out actions: no Q-value beats it."""


@dataclass(kw_only=True)
class DiscreteBCQTrainingStats(SimpleLossTrainingStats):
    """The losses of one discrete BCQ update.

    :param q_loss: the Huber TD loss of the Q-network.
    :param i_loss: the imitator's negative log-likelihood of the data's actions.
    :param reg_loss: the mean squared imitation logit (before weighting by the penalty).
    """

    q_loss: float
    i_loss: float
    reg_loss: float


class DiscreteBCQPolicy(DiscreteQLearningPolicy):
    """Acts with the arg-max of the Q-values over the actions the imitator deems likely.

    :param model: the Q-network, ``model(obs, state=..., info=...) -> (q_values (B, n), state)``.
    :param imitator: the behaviour-cloning network, called like ``model``, returning
        ``(logits (B, n), state)``: unnormalised log-probabilities of the data's actions (e.g. a
        ``DiscreteActor`` with ``softmax_output=False``).
    :param target_update_freq: how often (in updates) the algorithm refreshes its target
        network; BCQ needs one, so it must be positive. The algorithm's own
        ``target_update_freq`` governs the updates; this value documents the pairing.
    :param unlikely_action_threshold: ``tau`` in [0, 1): an action is allowed only if its
        imitation probability is at least ``tau`` times that of the most likely action. 0 allows
        every action (plain Q-learning); values near 1 leave only the imitator's favourite
        (behaviour cloning).
    :param action_space: the environment's ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    :param eps_inference: probability of a uniformly random action outside training steps.
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        imitator: nn.Module,
        target_update_freq: int = 8000,
        unlikely_action_threshold: float = 0.3,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        eps_inference: float = 0.0,
    ) -> None:
        if target_update_freq <= 0:
            raise ValueError(
                "DiscreteBCQ needs a target network: target_update_freq must be positive, got "
                f"{target_update_freq}"
            )
        if not 0.0 <= unlikely_action_threshold < 1.0:
            raise ValueError(
                f"unlikely_action_threshold must be in [0, 1), got {unlikely_action_threshold}"
            )
        super().__init__(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            eps_inference=eps_inference,
        )
        self.imitator = imitator
        self.target_update_freq = target_update_freq
        self.unlikely_action_threshold = unlikely_action_threshold
        # compare log-probability differences: log(pi(a) / pi_max) = logit_a - logit_max
        self._log_tau = (
            math.log(unlikely_action_threshold) if unlikely_action_threshold > 0 else -math.inf
        )

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> Batch:
        """The batch-constrained greedy actions for ``batch.obs``.

        :param model: the Q-network to evaluate instead of ``self.model``.
        :return: a Batch with ``logits`` and ``q_value`` (the Q-network's output),
            ``imitation_logits`` (the imitator's output), ``act`` (numpy ints) and ``state``.
        """
        q_raw, q_values, hidden = self.evaluate(batch, state, model)
        imitation_logits = self.imitation_logits(batch, state)
        act = self.constrained_argmax(q_values, imitation_logits, action_mask(batch.obs))
        return batch_of_parsed_values(
            {
                "logits": q_raw,
                "q_value": q_raw,
                "imitation_logits": imitation_logits,
                "act": to_numpy(act),
                "state": hidden,
            }
        )

    def imitation_logits(self, batch: Batch, state: PolicyState = None) -> torch.Tensor:
        """The imitator's logits ``(B, n_actions)`` for ``batch.obs``.

        :raises TypeError: if the imitator does not return an ``(output, state)`` pair.
        :raises ValueError: if the logits do not have one column per action.
        """
        obs, _ = q_network_input(batch)
        output = self.imitator(obs, state=state, info=batch.get("info"))
        if not isinstance(output, tuple) or len(output) != 2:
            raise TypeError(
                "the imitator must return a pair (logits, hidden_state), got "
                f"{type(output).__name__}"
            )
        logits = output[0]
        if logits.ndim != 2 or logits.shape[1] != self._num_actions:
            raise ValueError(
                f"the imitator outputs logits of shape {tuple(logits.shape)}, but the action "
                f"space {self.action_space} needs (batch_size, {self._num_actions})"
            )
        return logits

    def constrained_argmax(
        self,
        q_values: torch.Tensor,
        imitation_logits: torch.Tensor,
        mask: Mask | None = None,
    ) -> torch.Tensor:
        """The arg-max of ``q_values`` over the allowed actions, a long tensor ``(B,)``.

        An action is allowed if it is legal (``mask``) and its imitation probability is at least
        ``unlikely_action_threshold`` times that of the most likely legal action, so at least
        that action is always allowed.

        :param q_values: Q-values ``(B, n)``, illegal actions already ``-inf``.
        :param imitation_logits: the imitator's logits ``(B, n)``.
        :param mask: legal-action mask ``(B, n)``, or None when every action is legal.
        """
        logits = mask_q_values(imitation_logits.detach(), mask)
        log_ratio = logits - logits.max(dim=1, keepdim=True).values
        unlikely = (log_ratio < self._log_tau).to(q_values.dtype)
        return (q_values.detach() - INF * unlikely).argmax(dim=1)


# the offline and the off-policy base both define create_trainer; the offline one (first in
# the MRO) is meant, so OfflineTrainer runs this algorithm
class DiscreteBCQ(  # type: ignore[misc]
    OfflineAlgorithm[DiscreteBCQPolicy], QLearningOffPolicyAlgorithm[DiscreteBCQPolicy]
):
    """Discrete BCQ: TD learning of the Q-network plus behaviour cloning of the imitator.

    The loss is ``huber(Q(s, a) - y) + NLL_imitator(a | s) + penalty * mean(logits ** 2)``,
    where the n-step target ``y`` bootstraps from the target network's value of the
    batch-constrained greedy action of the online networks. One optimizer trains the Q-network
    and the imitator (the whole policy).

    :param policy: the BCQ policy (Q-network and imitator).
    :param optim: the factory of the policy's optimizer.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the Q-network into the target network every this many
        updates; must be positive.
    :param imitation_logits_penalty: weight of the squared imitation logits, which keeps the
        imitator's logits (and so its ratios) from growing without bound.
    """

    def __init__(
        self,
        *,
        policy: DiscreteBCQPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 8000,
        imitation_logits_penalty: float = 1e-2,
    ) -> None:
        if not isinstance(policy, DiscreteBCQPolicy):
            raise TypeError(f"DiscreteBCQ needs a DiscreteBCQPolicy, got {type(policy).__name__}")
        if target_update_freq <= 0:
            raise ValueError(
                "DiscreteBCQ needs a target network: target_update_freq must be positive, got "
                f"{target_update_freq}"
            )
        if imitation_logits_penalty < 0:
            raise ValueError(
                f"imitation_logits_penalty must be non-negative, got {imitation_logits_penalty}"
            )
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )
        self.imitation_logits_penalty = imitation_logits_penalty

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """The target network's value of the online batch-constrained greedy next action."""
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        _, q_values, _ = self.policy.evaluate(obs_batch)
        imitation_logits = self.policy.imitation_logits(obs_batch)
        act = self.policy.constrained_argmax(q_values, imitation_logits, action_mask(obs_next))
        target_q = self.policy.evaluate(obs_batch, model=self.model_old)[0]
        return target_q.gather(1, act.unsqueeze(1)).squeeze(1)

    def _update_with_batch(self, batch: Batch) -> DiscreteBCQTrainingStats:
        """One gradient step on the BCQ loss; stores the TD errors in ``batch.weight`` so a
        prioritized buffer can update its priorities (importance weights scale the TD loss)."""
        self._periodically_update_lagged_network_weights()
        q_raw = self.policy.evaluate(batch)[0]
        imitation_logits = self.policy.imitation_logits(batch)
        act = torch.as_tensor(batch.act, device=q_raw.device, dtype=torch.long).reshape(-1)
        q = q_raw.gather(1, act.unsqueeze(1)).squeeze(1)
        returns = batch.returns.reshape(-1).to(q.dtype)
        q_loss_B = F.huber_loss(q, returns, reduction="none", delta=1.0)
        weight = batch.__dict__.get("weight")
        if weight is not None:
            q_loss_B = q_loss_B * torch.as_tensor(weight, device=q.device, dtype=q.dtype)
        q_loss = q_loss_B.mean()
        # the imitator clones the data's actions among the legal ones
        i_loss = F.cross_entropy(mask_logits(imitation_logits, action_mask(batch.obs)), act)
        reg_loss = imitation_logits.pow(2).mean()
        loss = q_loss + i_loss + self.imitation_logits_penalty * reg_loss
        values = self.optim.step_with_loss_values(
            loss, q_loss=q_loss, i_loss=i_loss, reg_loss=reg_loss
        )
        batch.weight = (returns - q).detach()
        return DiscreteBCQTrainingStats(
            loss=values[0], q_loss=values[1], i_loss=values[2], reg_loss=values[3]
        )
