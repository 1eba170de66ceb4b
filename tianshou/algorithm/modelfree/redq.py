"""Randomized Ensembled Double Q-learning (REDQ): SAC-style learning with an ensemble of critics.

Chen et al. 2021, "Randomized Ensembled Double Q-Learning: Learning Fast Without a Model". The
critic is one network that returns the Q-values of all ``ensemble_size`` members at once, shape
``(ensemble_size, B, 1)`` (build it with :class:`~tianshou.utils.net.common.EnsembleLinear` as
the linear layer). The TD target uses the minimum (or mean) over a random subset of
``subset_size`` target members, drawn afresh for every target computation; the actor ascends the
mean over all members and is updated once every ``actor_delay`` critic steps.

>>> import functools
>>> from tianshou.utils.net.common import EnsembleLinear, Net
>>> from tianshou.utils.net.continuous import ContinuousCritic
>>> linear = functools.partial(EnsembleLinear, 10)
>>> body = Net(state_shape=3, action_shape=1, hidden_sizes=[16], concat=True, linear_layer=linear)
>>> critic = ContinuousCritic(preprocess_net=body, linear_layer=linear, flatten_input=False)
>>> critic(np.zeros((4, 3)), np.zeros((4, 1))).shape
torch.Size([10, 4, 1])
"""

from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Independent, Normal

from tianshou.algorithm._update_helpers import frozen
from tianshou.algorithm.algorithm_base import ActionBoundMethod, PolicyState
from tianshou.algorithm.modelfree.ddpg import (
    ActorCriticOffPolicyAlgorithm,
    ContinuousPolicyWithExplorationNoise,
    DDPGTrainingStats,
)
from tianshou.algorithm.modelfree.entropy_coefficient import Alpha, alpha_registered_with
from tianshou.algorithm.modelfree.entropy_regularised import soft_actor_loss, soft_value
from tianshou.algorithm.modelfree.sac import correct_log_prob_gaussian_tanh
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.exploration.random import BaseNoise

TargetMode = Literal["min", "mean"]


@dataclass(kw_only=True)
class REDQTrainingStats(DDPGTrainingStats):
    """Losses of one REDQ update. ``actor_loss`` is the loss of the latest actor step (0 before
    the first one); ``alpha`` is the entropy coefficient and ``alpha_loss`` its loss in the
    update that stepped the actor (None otherwise, or when alpha is fixed)."""

    alpha: float | None = None
    alpha_loss: float | None = None


class REDQPolicy(ContinuousPolicyWithExplorationNoise):
    """A Gaussian policy squashed by tanh into [-1, 1], as REDQ trains it.

    :param actor: returns ``((mu, sigma), state)``, e.g. a ``ContinuousActorProbabilistic``.
    :param exploration_noise: extra noise added to collected actions (usually None).
    :param action_space: the environment's ``Box`` action space.
    :param deterministic_eval: outside training steps, act with ``tanh(mu)`` instead of sampling.
    :param action_scaling: rescale squashed actions to the ``Box`` bounds.
    :param action_bound_method: how actions are bounded before scaling (tanh already bounds them,
        so ``"clip"`` is a no-op).
    :param observation_space: the environment's observation space.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        exploration_noise: BaseNoise | Literal["default"] | None = None,
        action_space: gym.Space,
        deterministic_eval: bool = True,
        action_scaling: bool = True,
        action_bound_method: ActionBoundMethod | None = "clip",
        observation_space: gym.Space | None = None,
    ) -> None:
        super().__init__(
            exploration_noise=exploration_noise,
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.actor = actor
        self.deterministic_eval = deterministic_eval

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Squashed actions for ``batch.obs`` and their log-probabilities.

        :return: a Batch with ``logits`` (``mu`` and ``sigma`` stacked), ``act`` (in [-1, 1]),
            ``state``, ``dist`` (the Gaussian before squashing) and ``log_prob`` ``(B, 1)``, the
            log-density of the squashed action (tanh change of variables included).
        """
        (mu, sigma), hidden = self.actor(batch.obs, state=state, info=batch.get("info"))
        dist = Independent(Normal(mu, sigma, validate_args=False), 1, validate_args=False)
        if self.deterministic_eval and not self.is_within_training_step:
            pre_tanh = mu
        else:
            pre_tanh = dist.rsample()
        act = torch.tanh(pre_tanh)
        log_prob = correct_log_prob_gaussian_tanh(dist.log_prob(pre_tanh).unsqueeze(-1), act)
        return batch_of_parsed_values(
            {
                "logits": torch.stack((mu, sigma)),
                "act": act,
                "state": hidden,
                "dist": dist,
                "log_prob": log_prob,
            }
        )


class REDQ(ActorCriticOffPolicyAlgorithm[REDQPolicy]):
    """REDQ: an ensemble critic with a random-subset target and a delayed, entropy-regularised
    actor.

    :param policy: the squashed-Gaussian policy to train.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the ensemble critic, ``(obs, act) -> (ensemble_size, B, 1)``.
    :param critic_optim: the factory of the critic's optimizer.
    :param ensemble_size: number of critic members (N in the paper).
    :param subset_size: number of target members the TD target takes the minimum over (M in the
        paper), in ``[1, ensemble_size]``; larger is more pessimistic.
    :param tau: Polyak coefficient of the target critic.
    :param gamma: discount factor in [0, 1].
    :param alpha: the entropy coefficient: a float (fixed) or an :class:`Alpha` such as
        :class:`~tianshou.algorithm.modelfree.entropy_coefficient.AutoAlpha`.
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param actor_delay: the actor (and a learned alpha) is stepped once every this many critic
        steps, so each update does ``actor_delay`` critic steps per actor step (the paper's
        update-to-data ratio G).
    :param deterministic_eval: kept for compatibility; the policy's own ``deterministic_eval``
        decides how it acts outside training steps.
    :param target_mode: ``"min"`` (the paper) or ``"mean"`` over the sampled subset.
    """

    def __init__(
        self,
        *,
        policy: REDQPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
        ensemble_size: int = 10,
        subset_size: int = 2,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | Alpha = 0.2,
        n_step_return_horizon: int = 1,
        actor_delay: int = 20,
        deterministic_eval: bool = True,
        target_mode: TargetMode = "min",
    ) -> None:
        if not 0 < subset_size <= ensemble_size:
            raise ValueError(
                f"subset_size must be in [1, ensemble_size={ensemble_size}], got {subset_size}"
            )
        if target_mode not in ("min", "mean"):
            raise ValueError(f"target_mode must be 'min' or 'mean', got {target_mode!r}")
        if actor_delay < 1:
            raise ValueError(f"actor_delay must be a positive int, got {actor_delay}")
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critic=critic,
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
        )
        self.ensemble_size = ensemble_size
        self.subset_size = subset_size
        self.actor_delay = actor_delay
        self.deterministic_eval = deterministic_eval
        self.target_mode = target_mode
        self.alpha = alpha_registered_with(self._create_optimizer, alpha)
        self.critic_gradient_step = 0
        self._last_actor_loss = 0.0

    def _ensemble_q(self, critic: nn.Module, obs: Any, act: Any) -> torch.Tensor:
        """The members' Q-values as ``(ensemble_size, B)``, with the critic's shape checked."""
        q = critic(obs, act)
        if q.dim() < 2 or q.shape[0] != self.ensemble_size or q[0].numel() != len(q[0]):
            raise ValueError(
                f"the REDQ critic must return Q-values of shape (ensemble_size={self.ensemble_size}"
                f", batch_size, 1), got {tuple(q.shape)}; build it with EnsembleLinear as its "
                "linear layer (and flatten_input=False in ContinuousCritic)"
            )
        return q.reshape(self.ensemble_size, -1)

    def _sample_subset(self) -> np.ndarray:
        """The indices of ``subset_size`` distinct members, drawn uniformly (numpy's global RNG)."""
        return np.random.choice(self.ensemble_size, self.subset_size, replace=False)

    def _target_q_compute_action(self, obs_batch: Batch) -> Batch:
        return self.policy(obs_batch)

    def _target_q_compute_value(self, obs_batch: Batch, act_batch: Batch) -> torch.Tensor:
        """Soft value over a random subset of target members: its min (or mean) minus
        ``alpha * log pi(a'|s')``, shape ``(B, 1)``."""
        subset_q = self._ensemble_q(self.critic_old, obs_batch.obs, act_batch.act)[
            torch.as_tensor(self._sample_subset())
        ]
        target_q = subset_q.min(dim=0).values if self.target_mode == "min" else subset_q.mean(0)
        return soft_value(target_q.unsqueeze(-1), act_batch.log_prob, self.alpha.coefficient)

    def _update_with_batch(self, batch: Batch) -> REDQTrainingStats:
        critic_loss = self._minimize_ensemble(batch)
        alpha_loss = None
        if self.critic_gradient_step % self.actor_delay == 0:
            alpha_loss = self._step_actor(batch)
        self._update_lagged_network_weights()
        return REDQTrainingStats(
            actor_loss=self._last_actor_loss,
            critic_loss=critic_loss,
            alpha=self.alpha.value,
            alpha_loss=alpha_loss,
        )

    def _minimize_ensemble(self, batch: Batch) -> float:
        """One critic step on the squared TD errors of all members (weighted by ``batch.weight``
        under prioritized replay); sets ``batch.weight`` to the members' mean TD error."""
        current_q = self._ensemble_q(self.critic, batch.obs, batch.act)
        td_error = current_q - batch.returns.flatten()
        squared = td_error.pow(2)
        weight = batch.__dict__.get("weight")
        if weight is not None:
            squared = squared * torch.as_tensor(weight, device=squared.device).flatten()
        (critic_value,) = self.critic_optim.step_with_loss_values(squared.mean())
        batch.weight = td_error.detach().mean(dim=0)
        self.critic_gradient_step += 1
        return critic_value

    def _step_actor(self, batch: Batch) -> float | None:
        """One actor step against the ensemble mean, then one step of a learned alpha.

        :return: the coefficient's loss, or None if alpha is fixed.
        """
        result = self.policy(batch)
        with frozen(self._critic_only_params):
            mean_q = self._ensemble_q(self.critic, batch.obs, result.act).mean(dim=0)
        actor_loss = soft_actor_loss(result.log_prob.flatten(), mean_q, self.alpha.coefficient)
        (self._last_actor_loss,) = self.policy_optim.step_with_loss_values(actor_loss)
        return self.alpha.update(-result.log_prob.detach())
