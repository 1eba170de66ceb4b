"""Critic regularized regression for discrete actions (Wang et al. 2020, "Critic Regularized
Regression").

CRR is behaviour cloning filtered by a critic: the actor maximises ``f(A(s, a)) log pi(a|s)``
over the data's actions, where the advantage ``A(s, a) = Q(s, a) - sum_b pi(b|s) Q(s, b)`` comes
from a critic trained by one-step TD on the data. The weight ``f`` is

* ``"exp"``: ``min(exp(A / beta), ratio_upper_bound)``, a soft filter favouring good actions;
* ``"binary"``: ``1[A > 0]``, cloning only the actions better than the policy's average;
* ``"all"``: ``1``, plain behaviour cloning.

The weight is a constant of the actor's loss (no gradient flows through it). As in the
published library, the critic is additionally kept conservative by the CQL regulariser
``logsumexp_a Q(s, a) - Q(s, a_data)`` weighted by ``min_q_weight``.

With legal-action masks (:mod:`tianshou.spaces.masks`), ``pi`` is restricted to the legal
actions and the regulariser's soft maximum runs over them only.
"""

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium.spaces import Discrete
from torch import nn
from torch.distributions import Categorical

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import (
    LaggedNetworkFullUpdateAlgorithmMixin,
    OfflineAlgorithm,
)
from tianshou.algorithm.imitation.discrete_cql import cql_regulariser
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.spaces.masks import (
    action_mask,
    mask_q_values,
    masked_categorical,
    network_input,
    policy_input,
    unmask_dead_ends,
)

PolicyImprovementMode = Literal["exp", "binary", "all"]
POLICY_IMPROVEMENT_MODES: tuple[str, ...] = ("exp", "binary", "all")


@dataclass(kw_only=True)
class DiscreteCRRTrainingStats(SimpleLossTrainingStats):
    """The losses of one discrete CRR update.

    :param actor_loss: the weighted negative log-likelihood of the data's actions.
    :param critic_loss: half the mean squared TD error of the critic.
    :param cql_loss: the conservative regulariser (before weighting by ``min_q_weight``).
    """

    actor_loss: float
    critic_loss: float
    cql_loss: float


def crr_weights(
    advantage: torch.Tensor, mode: PolicyImprovementMode, beta: float, ratio_upper_bound: float
) -> torch.Tensor:
    """The per-sample weights ``f(A)`` of the actor's log-likelihood (see the module docstring).

    :param advantage: advantages ``(B,)`` of the data's actions.
    :param mode: ``"exp"``, ``"binary"`` or ``"all"``.
    :param beta: the temperature of ``"exp"``.
    :param ratio_upper_bound: the clip of ``"exp"``.
    """
    if mode == "exp":
        return (advantage / beta).exp().clamp(max=ratio_upper_bound)
    if mode == "binary":
        return (advantage > 0).to(advantage.dtype)
    if mode == "all":
        return torch.ones_like(advantage)
    raise ValueError(f"policy_improvement_mode must be one of {POLICY_IMPROVEMENT_MODES}")


class DiscreteCRR(OfflineAlgorithm[DiscreteActorPolicy], LaggedNetworkFullUpdateAlgorithmMixin):
    """Discrete CRR: an actor cloning critic-weighted data actions, and a TD-trained critic.

    The critic's target is ``r + gamma * sum_b pi_old(b|s') Q_old(s', b)`` (zero bootstrap on
    terminal transitions; truncated ones bootstrap), with the target copies refreshed every
    ``target_update_freq`` updates. One optimizer trains actor and critic on
    ``actor_loss + critic_loss + min_q_weight * cql_loss``.

    :param policy: the actor's policy; its ``dist_fn`` must build a ``Categorical`` (e.g.
        ``lambda logits: Categorical(logits=logits)`` for an actor that outputs logits).
    :param critic: maps observations to Q-values ``(B, n_actions)``, e.g. a ``DiscreteCritic``
        with ``last_size=n_actions``.
    :param optim: the factory of the optimizer of actor and critic together.
    :param gamma: discount factor in [0, 1].
    :param policy_improvement_mode: ``"exp"``, ``"binary"`` or ``"all"`` (see the module
        docstring).
    :param ratio_upper_bound: the largest ``"exp"`` weight, which bounds the step any single
        transition can cause.
    :param beta: the temperature of the ``"exp"`` weights; smaller values are greedier.
    :param min_q_weight: weight of the CQL regulariser of the critic.
    :param target_update_freq: copy actor and critic into their target networks every this many
        updates; 0 uses no target networks (the current ones give the targets).
    :param return_standardization: accepted for compatibility with the published signature;
        the critic learns from one-step TD targets, not Monte-Carlo returns, so there are no
        returns to standardise and it has no effect.
    """

    _checkpointed_counters = ("_iter",)  # when the next target copy is due

    def __init__(
        self,
        *,
        policy: DiscreteActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        policy_improvement_mode: PolicyImprovementMode = "exp",
        ratio_upper_bound: float = 20.0,
        beta: float = 1.0,
        min_q_weight: float = 10.0,
        target_update_freq: int = 0,
        return_standardization: bool = False,
    ) -> None:
        num_actions = _check_params(policy, gamma, policy_improvement_mode, ratio_upper_bound, beta)
        if min_q_weight < 0:
            raise ValueError(f"min_q_weight must be non-negative, got {min_q_weight}")
        if target_update_freq < 0:
            raise ValueError(f"target_update_freq must be >= 0, got {target_update_freq}")
        super().__init__(policy=policy)
        LaggedNetworkFullUpdateAlgorithmMixin.__init__(self)
        self.critic = critic
        self.optim = self._create_optimizer([self.policy, self.critic], optim)
        self.gamma = gamma
        self.policy_improvement_mode = policy_improvement_mode
        self.ratio_upper_bound = ratio_upper_bound
        self.beta = beta
        self.min_q_weight = min_q_weight
        self.target_update_freq = target_update_freq
        self.return_standardization = return_standardization
        self._num_actions = num_actions
        self._iter = 0
        if target_update_freq > 0:
            self.actor_old = self._add_lagged_network(policy.actor)
            self.critic_old = self._add_lagged_network(critic)

    def _target_networks(self) -> tuple[nn.Module, nn.Module]:
        """The actor and critic that give the TD targets: the lagged copies, if there are any."""
        if self.target_update_freq > 0:
            return self.actor_old, self.critic_old
        return self.policy.actor, self.critic

    def _dist(self, actor: nn.Module, obs: np.ndarray | torch.Tensor | Batch) -> Categorical:
        """The action distribution of ``actor`` (the policy's or its target copy) at ``obs``,
        restricted to the legal actions when ``obs`` carries a mask."""
        actor_obs, mask = policy_input(batch_of_parsed_values({"obs": obs}))
        dist = self.policy.dist_fn(actor(actor_obs)[0])
        if not isinstance(dist, Categorical):
            raise TypeError(
                "DiscreteCRR needs the policy's dist_fn to build a Categorical, got "
                f"{type(dist).__name__}"
            )
        return masked_categorical(dist, mask)  # type: ignore[return-value]

    def _q_values(self, critic: nn.Module, obs: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """``critic(obs)``, checked to be one Q-value per action ``(B, n_actions)`` (masked
        observations give the critic their ``obs`` entry, as the actor)."""
        q = critic(network_input(obs))
        if not isinstance(q, torch.Tensor) or q.ndim != 2 or q.shape[1] != self._num_actions:
            shape = tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__
            raise ValueError(
                f"the critic must return Q-values of shape (batch_size, {self._num_actions}), "
                f"got {shape}; e.g. DiscreteCritic(..., last_size={self._num_actions})"
            )
        return q

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Attach the one-step TD targets ``batch.returns`` of the critic."""
        sampled_obs_next = batch.obs_next

        def target_value(buf: ReplayBuffer, target_indices: np.ndarray) -> torch.Tensor:
            same_rows = target_indices is indices
            obs_next = sampled_obs_next if same_rows else buf._obs_next_at(target_indices)
            obs_next = unmask_dead_ends(obs_next)
            actor, critic = self._target_networks()
            probs = self._dist(actor, obs_next).probs
            return (self._q_values(critic, obs_next) * probs).sum(dim=1)

        return self.compute_nstep_return(batch, buffer, indices, target_value, gamma=self.gamma)

    def _update_with_batch(self, batch: Batch) -> DiscreteCRRTrainingStats:
        """One gradient step on the actor, critic and CQL losses together."""
        if self.target_update_freq > 0 and self._iter % self.target_update_freq == 0:
            self._update_lagged_network_weights()
        self._iter += 1
        q = self._q_values(self.critic, batch.obs)
        act = torch.as_tensor(batch.act, device=q.device, dtype=torch.long).reshape(-1)
        data_q = q.gather(1, act.unsqueeze(1)).squeeze(1)
        critic_loss = 0.5 * F.mse_loss(data_q, batch.returns.reshape(-1).to(q.dtype))
        dist = self._dist(self.policy.actor, batch.obs)
        with torch.no_grad():
            advantage = data_q - (q * dist.probs).sum(dim=1)
            weight = crr_weights(
                advantage, self.policy_improvement_mode, self.beta, self.ratio_upper_bound
            )
        actor_loss = -(weight * dist.log_prob(act)).mean()
        cql_loss = cql_regulariser(mask_q_values(q, action_mask(batch.obs)), act)
        loss = actor_loss + critic_loss + self.min_q_weight * cql_loss
        values = self.optim.step_with_loss_values(
            loss, actor_loss=actor_loss, critic_loss=critic_loss, cql_loss=cql_loss
        )
        return DiscreteCRRTrainingStats(
            loss=values[0], actor_loss=values[1], critic_loss=values[2], cql_loss=values[3]
        )


def _check_params(
    policy: DiscreteActorPolicy,
    gamma: float,
    policy_improvement_mode: str,
    ratio_upper_bound: float,
    beta: float,
) -> int:
    """Reject what the algorithm cannot work with, before anything is built.

    :return: the number of actions.
    """
    space = getattr(policy, "action_space", None)
    if not isinstance(policy, DiscreteActorPolicy) or not isinstance(space, Discrete):
        raise TypeError(
            "DiscreteCRR needs a DiscreteActorPolicy with a Discrete action space, got "
            f"{type(policy).__name__} with {space}"
        )
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1], got {gamma}")
    if policy_improvement_mode not in POLICY_IMPROVEMENT_MODES:
        raise ValueError(
            f"policy_improvement_mode must be one of {POLICY_IMPROVEMENT_MODES}, "
            f"got {policy_improvement_mode!r}"
        )
    if ratio_upper_bound <= 0:
        raise ValueError(f"ratio_upper_bound must be positive, got {ratio_upper_bound}")
    if beta <= 0:
        raise ValueError(f"beta must be positive, got {beta}")
    return int(space.n)
