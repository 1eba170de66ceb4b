"""Implicit quantile networks (Dabney et al. 2018, "Implicit Quantile Networks for Distributional
Reinforcement Learning"): quantiles at randomly sampled fractions instead of QR-DQN's fixed ones.

The loss is QR-DQN's quantile Huber loss (:func:`~tianshou.algorithm.modelfree.qrdqn.
quantile_huber_loss`) with the sampled fractions in place of the fixed midpoints.
"""

from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm.algorithm_base import PolicyState
from tianshou.algorithm.modelfree.dqn import q_network_input
from tianshou.algorithm.modelfree.qrdqn import (
    QRDQN,
    QRDQNPolicy,
    quantiles_of_actions,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import Mask
from tianshou.utils.net.discrete import ImplicitQuantileNetwork


def _check_sample_size(name: str, value: int) -> int:
    if value < 2:
        raise ValueError(f"{name} must be at least 2, got {value}")
    return value


class IQNPolicy(QRDQNPolicy):
    """Acts greedily on the mean of quantiles at freshly sampled fractions.

    How many fractions are drawn depends on the use: ``online_sample_size`` for the model in
    training mode (the update), ``target_sample_size`` when another model (the target network)
    is passed, and ``sample_size`` otherwise (acting in eval mode). More fractions give a less
    noisy Q-value estimate at a higher cost.

    :param model: the implicit quantile network.
    :param action_space: the environment's ``Discrete`` action space.
    :param sample_size: fractions drawn when acting (eval mode), at least 2.
    :param online_sample_size: fractions drawn for the model in training mode, at least 2.
    :param target_sample_size: fractions drawn for the target network, at least 2.
    :param observation_space: the environment's observation space.
    :param eps_training: probability of a random action inside training steps.
    :param eps_inference: probability of a random action outside training steps.
    """

    def __init__(
        self,
        *,
        model: ImplicitQuantileNetwork,
        action_space: gym.spaces.Space,
        sample_size: int = 32,
        online_sample_size: int = 8,
        target_sample_size: int = 8,
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
        self.sample_size = _check_sample_size("sample_size", sample_size)
        self.online_sample_size = _check_sample_size("online_sample_size", online_sample_size)
        self.target_sample_size = _check_sample_size("target_sample_size", target_sample_size)

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: torch.nn.Module | None = None,
        **kwargs: Any,
    ) -> Batch:
        """Greedy actions for ``batch.obs`` from quantiles at sampled fractions.

        :param model: the network to evaluate instead of ``self.model`` (the target network).
        :return: a Batch with ``logits`` (quantiles ``(B, n_actions, N)``), ``act`` (numpy),
            ``state`` and ``taus`` (the sampled fractions ``(B, N)``).
        """
        logits, taus, hidden, mask = self._quantiles(batch, state, model)
        act = self.compute_q_value(logits, mask).argmax(dim=1)
        return batch_of_parsed_values(
            {"logits": logits, "act": to_numpy(act), "state": hidden, "taus": taus}
        )

    def _quantiles(
        self, batch: Batch, state: PolicyState = None, model: torch.nn.Module | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, PolicyState, Mask | None]:
        """Run the model at freshly sampled fractions: ``(quantiles (B, n_actions, N), taus,
        next hidden state, legal-action mask)``, without choosing actions (the update's current
        and target quantiles need no greedy action)."""
        if model is not None:
            sample_size = self.target_sample_size
        elif self.training:
            sample_size = self.online_sample_size
        else:
            sample_size = self.sample_size
        obs, mask = q_network_input(batch)
        (logits, taus), hidden = (model or self.model)(
            obs, sample_size=sample_size, state=state, info=batch.get("info")
        )
        return logits, taus, hidden, mask


class IQN(QRDQN[IQNPolicy]):
    """IQN: the quantile Huber loss at ``online_sample_size`` sampled fractions, against
    ``target_sample_size`` target quantiles (also at sampled fractions).

    :param policy: the IQN policy (its sample sizes set the number of fractions).
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param num_quantiles: kept for the published signature (at least 2); the numbers of
        fractions actually used are the policy's sample sizes.
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the model into the target network every this many updates
        (0: no target network).
    """

    def __init__(
        self,
        *,
        policy: IQNPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        num_quantiles: int = 200,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            num_quantiles=num_quantiles,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """Target quantiles ``(B, target_sample_size)`` at the online policy's greedy next action,
        each network at its own freshly sampled fractions."""
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        online, _, _, mask = self.policy._quantiles(obs_batch)
        next_act = self.policy.compute_q_value(online, mask).argmax(dim=1)
        if self.model_old is None:
            next_quantiles = online
        else:
            next_quantiles = self.policy._quantiles(obs_batch, model=self.model_old)[0]
        return quantiles_of_actions(next_quantiles, next_act)

    def _current_quantiles(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """The quantiles ``(B, N)`` of the taken actions at freshly sampled fractions ``taus``;
        the update's loss is QR-DQN's with these fractions."""
        quantiles, taus, _, _ = self.policy._quantiles(batch)
        return quantiles_of_actions(quantiles, batch.act), taus
