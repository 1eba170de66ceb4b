"""Soft Actor-Critic: a tanh-squashed Gaussian actor trained with twin soft Q-critics.

SAC maximises return plus ``alpha`` times the policy's entropy. The entropy coefficient is either
fixed (:class:`FixedAlpha`) or tuned to keep the entropy near a target (:class:`AutoAlpha`).
The update does no redundant work: the critics' own parameters are excluded from the actor's
backward pass, both critics are stepped from one backward pass (when they share no parameters),
and the statistics are read from the device together, once per update.
"""

import math
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Independent, Normal

from tianshou.algorithm._update_helpers import finite_loss_values, frozen
from tianshou.algorithm.algorithm_base import PolicyState, TrainingStats
from tianshou.algorithm.compiled_update import UpdateCompiler, is_array
from tianshou.algorithm.modelfree.ddpg import ContinuousPolicyWithExplorationNoise
from tianshou.algorithm.modelfree.entropy_coefficient import (
    Alpha,
    AutoAlpha,
    FixedAlpha,
    alpha_registered_with,
)
from tianshou.algorithm.modelfree.entropy_regularised import soft_actor_loss, soft_value
from tianshou.algorithm.modelfree.td3 import ActorDualCriticsOffPolicyAlgorithm
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.exploration.random import BaseNoise

_TANH_EPS = float(np.finfo(np.float32).eps)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def correct_log_prob_gaussian_tanh(
    log_prob: torch.Tensor,
    tanh_squashed_action: torch.Tensor,
    eps: float = _TANH_EPS,
) -> torch.Tensor:
    """The log-density of ``a = tanh(u)`` from the log-density of the Gaussian sample ``u``.

    By the change of variables, ``log p(a) = log p(u) - sum_i log(1 - a_i^2)`` (Haarnoja et al.
    2018, "Soft Actor-Critic", appendix C, eq. 21); ``eps`` keeps the logarithm finite where
    the squashed action saturates at -1 or 1.

    :param log_prob: ``log p(u)`` summed over the action dimensions, shape ``(B, 1)`` (or
        ``(B,)``; the result then has that shape too).
    :param tanh_squashed_action: the squashed actions ``a``, shape ``(B, action_dim)``.
    :param eps: added inside the logarithm for numerical stability.
    """
    correction = torch.log(1.0 - tanh_squashed_action.square() + eps).sum(-1, keepdim=True)
    if log_prob.dim() < tanh_squashed_action.dim():
        correction = correction.squeeze(-1)
    return log_prob - correction


@dataclass(kw_only=True)
class SACTrainingStats(TrainingStats):
    """Losses of one SAC update; ``alpha`` is the entropy coefficient after the update and
    ``alpha_loss`` the coefficient's loss (None when alpha is fixed)."""

    actor_loss: float
    critic1_loss: float
    critic2_loss: float
    alpha: float | None = None
    alpha_loss: float | None = None


class SACPolicy(ContinuousPolicyWithExplorationNoise):
    """A Gaussian policy squashed by tanh into [-1, 1], as SAC trains it.

    The actor returns ``((mu, sigma), state)``; the action is ``tanh(u)`` with ``u`` sampled
    (reparameterised) from ``Normal(mu, sigma)``, or ``u = mu`` for deterministic evaluation.
    Because tanh already bounds the action, the bound method is ``"clip"`` (a no-op on squashed
    actions) and only the rescaling to the ``Box`` bounds remains.

    :param actor: e.g. a ``ContinuousActorProbabilistic`` (``unbounded=True`` is customary).
    :param exploration_noise: extra noise added to collected actions; ``"default"`` is
        ``GaussianNoise(sigma=0.1)``. Usually None: the policy's own sampling explores.
    :param deterministic_eval: outside training steps, act with ``tanh(mu)`` instead of sampling.
    :param action_scaling: rescale squashed actions to the ``Box`` bounds.
    :param action_space: the environment's ``Box`` action space.
    :param observation_space: the environment's observation space.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        exploration_noise: BaseNoise | Literal["default"] | None = None,
        deterministic_eval: bool = True,
        action_scaling: bool = True,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
    ) -> None:
        super().__init__(
            exploration_noise=exploration_noise,
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method="clip",
        )
        self.actor = actor
        self.deterministic_eval = deterministic_eval
        self._action_shape = tuple(action_space.shape or ())

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Squashed actions for ``batch.obs`` and their log-probabilities.

        :return: a Batch with ``logits`` (``mu`` and ``sigma`` stacked), ``act`` (in [-1, 1]),
            ``state``, ``dist`` (the Gaussian before squashing) and ``log_prob`` ``(B, 1)``,
            the log-density of the squashed action (tanh change of variables included).
        """
        mu, sigma, hidden = self._gaussian_parameters(batch.obs, state, batch.get("info"))
        if self.deterministic_eval and not self.is_within_training_step:
            # the Gaussian's log-density at its mean
            act = torch.tanh(mu)
            log_prob = _squashed_log_prob(mu, act, sigma.log())
        else:
            act, log_prob = self._squashed_sample(mu, sigma, torch.randn_like(mu))
        dist = Independent(Normal(mu, sigma, validate_args=False), 1, validate_args=False)
        return batch_of_parsed_values(
            {
                "logits": torch.stack((mu, sigma)),
                "act": act,
                "state": hidden,
                "dist": dist,
                "log_prob": log_prob,
            }
        )

    @property
    def action_shape(self) -> tuple[int, ...]:
        """The shape of one (unbatched) action."""
        return self._action_shape

    def squashed_actions(
        self, obs: torch.Tensor, noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The actions :meth:`forward` samples for ``obs`` (a tensor, no hidden state) with the
        standard-normal ``noise`` ``(B, *action_shape)`` given rather than drawn, and their
        log-densities ``(B, 1)``: for an update that draws the noise outside a compiled graph.
        """
        mu, sigma, _ = self._gaussian_parameters(obs, None, None)
        return self._squashed_sample(mu, sigma, noise)

    @staticmethod
    def _squashed_sample(
        mu: torch.Tensor, sigma: torch.Tensor, noise: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(tanh(mu + sigma * noise), its log-density (B, 1))``: the reparameterised sample,
        whose Gaussian log-density only needs the standard-normal ``noise``."""
        act = torch.tanh(mu + sigma * noise)
        return act, _squashed_log_prob(mu, act, 0.5 * noise.square() + sigma.log())

    def _gaussian_parameters(
        self, obs: Any, state: PolicyState, info: Any
    ) -> tuple[torch.Tensor, torch.Tensor, PolicyState]:
        """``(mu, sigma, hidden)`` from the actor, with the shapes checked against the space."""
        output = self.actor(obs, state=state, info=info)
        try:
            (mu, sigma), hidden = output
        except (TypeError, ValueError):
            raise TypeError(
                "the SAC actor must return ((mu, sigma), hidden_state), got "
                f"{type(output).__name__}"
            ) from None
        if tuple(mu.shape[1:]) != self._action_shape:
            raise ValueError(
                f"the actor outputs means of shape {tuple(mu.shape)}, but the action space "
                f"{self.action_space} needs (batch_size, *{self._action_shape}); check the "
                "actor's action_shape"
            )
        return mu, sigma.expand_as(mu), hidden


def _squashed_log_prob(
    mu: torch.Tensor, act: torch.Tensor, neg_gaussian_log_prob: torch.Tensor
) -> torch.Tensor:
    """The log-density ``(B, 1)`` of the squashed action ``act``, from the per-dimension
    negated Gaussian log-density without its constant ``log(2 pi) / 2``."""
    summed = neg_gaussian_log_prob.sum(-1, keepdim=True).neg_() - mu.shape[-1] * _HALF_LOG_2PI
    return correct_log_prob_gaussian_tanh(summed, act)


class SAC(ActorDualCriticsOffPolicyAlgorithm[SACPolicy]):
    """Soft Actor-Critic with twin critics and a fixed or learned entropy coefficient.

    :param policy: the squashed-Gaussian policy to train.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the first soft Q-critic, ``(obs, act) -> (B, 1)``.
    :param critic_optim: the factory of the first critic's optimizer.
    :param critic2: the second critic (None: a re-initialised copy of ``critic``).
    :param critic2_optim: the factory of the second critic's optimizer (None: ``critic_optim``).
    :param tau: Polyak coefficient of the target critics.
    :param gamma: discount factor in [0, 1].
    :param alpha: the entropy coefficient: a float (fixed) or an :class:`Alpha` such as
        :class:`AutoAlpha`.
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param deterministic_eval: kept for compatibility; the policy's own ``deterministic_eval``
        decides how it acts outside training steps.

    Its update can run compiled (:meth:`~tianshou.algorithm.Algorithm.compile_update`).
    """

    _supports_compiled_update = True

    def __init__(
        self,
        *,
        policy: SACPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
        critic2: nn.Module | None = None,
        critic2_optim: OptimizerFactory | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | Alpha = 0.2,
        n_step_return_horizon: int = 1,
        deterministic_eval: bool = True,
    ) -> None:
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critic=critic,
            critic_optim=critic_optim,
            critic2=critic2,
            critic2_optim=critic2_optim,
            tau=tau,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
        )
        self.deterministic_eval = deterministic_eval
        self.alpha = alpha_registered_with(self._create_optimizer, alpha)

    def _target_q_compute_action(self, obs_batch: Batch) -> Batch:
        return self.policy(obs_batch)

    def _target_q_compute_value(self, obs_batch: Batch, act_batch: Batch) -> torch.Tensor:
        """Soft value: the twin-critic minimum minus ``alpha * log pi(a'|s')``."""
        min_q = super()._target_q_compute_value(obs_batch, act_batch)
        return soft_value(min_q, act_batch.log_prob, self.alpha.coefficient)

    def _target_values(
        self, obs: torch.Tensor, noise: torch.Tensor, alpha: float | torch.Tensor
    ) -> torch.Tensor:
        """The compiled target: the soft value at actions sampled with ``noise``."""
        act, log_prob = self.policy.squashed_actions(obs, noise)
        min_q = torch.min(self.critic_old(obs, act), self.critic2_old(obs, act))
        return soft_value(min_q, log_prob, alpha)

    def _compiled_target_q(self, compiler: UpdateCompiler, obs_next: torch.Tensor) -> torch.Tensor:
        noise = compiler.standard_normal(len(obs_next), *self.policy.action_shape)
        alpha = self.alpha.coefficient
        return compiler("target", self._target_values, obs_next, noise, alpha)

    def _update_with_batch(self, batch: Batch) -> SACTrainingStats:
        compiler = self._update_compiler if is_array(batch.obs) else None
        if compiler is not None:
            return self._compiled_update_with_batch(batch, compiler)
        critic1_loss, critic2_loss = self._minimize_critics(batch)
        result = self.policy(batch)
        with frozen(self._critic_only_params):
            q1 = self.critic(batch.obs, result.act).flatten()
            q2 = self.critic2(batch.obs, result.act).flatten()
        actor_loss = soft_actor_loss(
            result.log_prob.flatten(), torch.min(q1, q2), self.alpha.coefficient
        )
        return self._step_actor_and_alpha(actor_loss, result.log_prob, critic1_loss, critic2_loss)

    def _actor_losses(
        self, obs: torch.Tensor, noise: torch.Tensor, alpha: float | torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The compiled actor step: ``(actor loss, log-probabilities (B, 1))`` of the actions
        sampled with the standard-normal ``noise``."""
        act, log_prob = self.policy.squashed_actions(obs, noise)
        q1 = self.critic(obs, act).flatten()
        q2 = self.critic2(obs, act).flatten()
        return soft_actor_loss(log_prob.flatten(), torch.min(q1, q2), alpha), log_prob

    def _compiled_update_with_batch(
        self, batch: Batch, compiler: UpdateCompiler
    ) -> SACTrainingStats:
        """The update with the losses and their gradients computed compiled; the noise is
        drawn here, as the eager policy draws it, so both consume the random stream alike."""
        inputs = self._compiled_step_inputs(batch)
        critic1_loss, critic2_loss = self._compiled_minimize_critics(batch, compiler, inputs)
        obs = inputs[0]
        noise = compiler.standard_normal(len(obs), *self.policy.action_shape)
        with frozen(self._critic_only_params):
            actor_loss, log_prob = compiler(
                "actor", self._actor_losses, obs, noise, self.alpha.coefficient
            )
        return self._step_actor_and_alpha(actor_loss, log_prob, critic1_loss, critic2_loss)

    def _step_actor_and_alpha(
        self,
        actor_loss: torch.Tensor,
        log_prob: torch.Tensor,
        critic1_loss: float,
        critic2_loss: float,
    ) -> SACTrainingStats:
        """Step the actor and the entropy coefficient, move the target critics, and report."""
        (actor_value,) = self.policy_optim.step_with_loss_values(actor_loss)
        alpha_loss = self.alpha.loss(-log_prob.detach())
        if alpha_loss is not None and self.alpha.optim is not None:
            self.alpha.optim.step(alpha_loss)
        self._update_lagged_network_weights()
        alpha_value, alpha_loss_value = self._alpha_stats(alpha_loss)
        return SACTrainingStats(
            actor_loss=actor_value,
            critic1_loss=critic1_loss,
            critic2_loss=critic2_loss,
            alpha=alpha_value,
            alpha_loss=alpha_loss_value,
        )

    def _alpha_stats(self, alpha_loss: torch.Tensor | None) -> tuple[float, float | None]:
        """The coefficient after the update and its loss (None if fixed), with one device sync.

        :raises FloatingPointError: if a learned coefficient or its loss became NaN or infinite.
        """
        coefficient = self.alpha.coefficient
        if alpha_loss is None:
            return float(coefficient), None
        alpha_value, alpha_loss_value = finite_loss_values(
            "the entropy coefficient's optimizer",
            alpha=torch.as_tensor(coefficient, device=alpha_loss.device),
            alpha_loss=alpha_loss,
        )
        return alpha_value, alpha_loss_value


__all__ = [
    "SAC",
    "Alpha",
    "AutoAlpha",
    "FixedAlpha",
    "SACPolicy",
    "SACTrainingStats",
    "correct_log_prob_gaussian_tanh",
]
