"""Discrete Soft Actor-Critic: a categorical actor trained with twin soft Q-critics.

With finitely many actions the expectations over the policy are exact sums instead of
reparameterised samples (Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings"):
the critics output one Q-value per action, the soft value of a state is
``sum_a pi(a|s) * (min(Q1, Q2)(s, a) - alpha * log pi(a|s))``, and the actor minimises
``-(alpha * H(pi(.|s)) + sum_a pi(a|s) * min(Q1, Q2)(s, a))``. The entropy coefficient is the
one SAC uses: fixed (:class:`~tianshou.algorithm.modelfree.entropy_coefficient.FixedAlpha`) or
learned (:class:`~tianshou.algorithm.modelfree.entropy_coefficient.AutoAlpha`, fed the exact
entropy of each state).

With legal-action masks (:mod:`tianshou.spaces.masks`) the policy is the softmax over the
legal actions only, so every sum above, the entropy included, runs over the legal actions; the
critics read the observations' ``obs`` entry.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
from gymnasium.spaces import Discrete
from torch import nn
from torch.distributions import Categorical

from tianshou.algorithm.algorithm_base import Policy, PolicyState
from tianshou.algorithm.modelfree.entropy_coefficient import Alpha, alpha_registered_with
from tianshou.algorithm.modelfree.entropy_regularised import (
    categorical_entropy,
    categorical_soft_actor_loss,
    categorical_soft_value,
)
from tianshou.algorithm.modelfree.sac import SACTrainingStats
from tianshou.algorithm.modelfree.td3 import ActorDualCriticsOffPolicyAlgorithm
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.spaces.masks import (
    Mask,
    mask_logits,
    network_input,
    policy_input,
    unmask_dead_ends,
)


@dataclass(kw_only=True)
class DiscreteSACTrainingStats(SACTrainingStats):
    """Losses of one discrete SAC update (the fields of :class:`SACTrainingStats`)."""


class DiscreteSACPolicy(Policy):
    """A categorical policy over the actor's logits, as discrete SAC trains it.

    >>> import numpy as np
    >>> from tianshou.utils.net.common import Net
    >>> from tianshou.utils.net.discrete import DiscreteActor
    >>> body = Net(state_shape=4, hidden_sizes=[8])
    >>> actor = DiscreteActor(preprocess_net=body, action_shape=2, softmax_output=False)
    >>> policy = DiscreteSACPolicy(actor=actor, action_space=gym.spaces.Discrete(2))
    >>> out = policy(Batch(obs=np.zeros((3, 4), dtype=np.float32)))
    >>> out.act.shape, out.dist.probs.shape
    (torch.Size([3]), torch.Size([3, 2]))

    :param actor: called as ``actor(obs, state=..., info=...)``, returns ``(logits, hidden)``
        with logits of shape ``(B, n_actions)``, e.g. a ``DiscreteActor`` built with
        ``softmax_output=False``.
    :param deterministic_eval: outside training steps, act with the most probable action
        instead of sampling.
    :param action_space: the environment's ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        deterministic_eval: bool = True,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
    ) -> None:
        if not isinstance(action_space, Discrete):
            raise ValueError(
                f"DiscreteSACPolicy needs a Discrete action space, got {action_space}; use "
                "SACPolicy (tianshou.algorithm.modelfree.sac) for continuous actions"
            )
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.actor = actor
        self.deterministic_eval = deterministic_eval
        self._num_actions = int(action_space.n)

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Sample actions (or take the arg-max, see ``deterministic_eval``) for ``batch.obs``.

        :return: a Batch with ``logits`` ``(B, n_actions)`` (the actor's raw output), ``act``
            ``(B,)``, ``state`` (the actor's next hidden state) and ``dist`` (the
            ``Categorical`` over the logits of the legal actions).
        """
        logits, hidden, mask = self._logits(batch, state)
        dist = Categorical(logits=mask_logits(logits, mask), validate_args=False)
        if self.deterministic_eval and not self.is_within_training_step:
            act = dist.logits.argmax(dim=-1)
        else:
            act = dist.sample()
        return batch_of_parsed_values({"logits": logits, "act": act, "state": hidden, "dist": dist})

    def _logits(
        self, batch: Batch, state: PolicyState
    ) -> tuple[torch.Tensor, PolicyState, Mask | None]:
        """The actor's ``(logits, hidden)`` for ``batch.obs`` with the shapes checked, and the
        observations' checked legal-action mask (None without one)."""
        obs, mask = policy_input(batch)
        output = self.actor(obs, state=state, info=batch.get("info"))
        if not isinstance(output, tuple) or len(output) != 2:
            raise TypeError(
                "the discrete SAC actor must return a pair (logits, hidden_state), got "
                f"{type(output).__name__}"
            )
        logits, hidden = output
        if logits.dim() != 2 or logits.shape[-1] != self._num_actions:
            raise ValueError(
                f"the actor outputs logits of shape {tuple(logits.shape)}, but the action space "
                f"{self.action_space} needs (batch_size, {self._num_actions}); check the "
                "actor's action_shape"
            )
        return logits, hidden, mask

    def log_probs(self, batch: Batch) -> torch.Tensor:
        """``log pi(.|s)`` of shape ``(B, n_actions)``, for the update's exact expectations (no
        action is sampled); illegal actions get probability 0 (log-probability -inf).

        :param batch: holds ``obs`` (with its legal-action mask, if any) and optionally ``info``.
        """
        logits, _, mask = self._logits(batch, None)
        return mask_logits(logits, mask).log_softmax(dim=-1)


class DiscreteSAC(ActorDualCriticsOffPolicyAlgorithm[DiscreteSACPolicy]):
    """Soft Actor-Critic for discrete actions, with twin critics and exact expectations.

    The critics are trained on n-step soft TD targets (see the module docstring for the soft
    value); the actor and the entropy coefficient each take one step per update, both from the
    entropy before the actor's step, and the target critics follow by Polyak averaging.

    :param policy: the categorical policy to train.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the first soft Q-critic, ``obs -> (B, n_actions)`` (e.g. a
        ``DiscreteCritic`` with ``last_size=n_actions``).
    :param critic_optim: the factory of the first critic's optimizer.
    :param critic2: the second critic (None: a re-initialised copy of ``critic``).
    :param critic2_optim: the factory of the second critic's optimizer (None: ``critic_optim``).
    :param tau: Polyak coefficient of the target critics.
    :param gamma: discount factor in [0, 1].
    :param alpha: the entropy coefficient: a float (fixed) or an :class:`Alpha` such as
        :class:`AutoAlpha` (a customary target entropy is a fraction of ``log(n_actions)``,
        the entropy of the uniform policy).
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    """

    def __init__(
        self,
        *,
        policy: DiscreteSACPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
        critic2: nn.Module | None = None,
        critic2_optim: OptimizerFactory | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | Alpha = 0.2,
        n_step_return_horizon: int = 1,
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
        self.alpha = alpha_registered_with(self._create_optimizer, alpha)

    def _target_q_compute_action(self, obs_batch: Batch) -> Batch:
        """The policy's ``log_probs`` at the next observations (the soft value is an exact
        expectation over the actions, so none is sampled); a next observation without legal
        actions (the game is over) counts all actions legal, as its value is discarded."""
        next_batch = batch_of_parsed_values(
            {"obs": unmask_dead_ends(obs_batch.obs), "info": obs_batch.get("info")}
        )
        return batch_of_parsed_values({"log_probs": self.policy.log_probs(next_batch)})

    def _target_q_compute_value(self, obs_batch: Batch, act_batch: Batch) -> torch.Tensor:
        """The soft value ``sum_a pi(a|s') * (min_i Q_i'(s', a) - alpha * log pi(a|s'))``."""
        log_probs = act_batch.log_probs
        probs = log_probs.exp()
        obs = network_input(obs_batch.obs)
        min_q = torch.min(self.critic_old(obs), self.critic2_old(obs))
        entropy = categorical_entropy(probs, log_probs)
        return categorical_soft_value(probs, min_q, entropy, self.alpha.coefficient)

    @staticmethod
    def _critic_td_loss(batch: Batch, critic: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        """``(td_error, loss)`` of the taken actions' Q-values against ``batch.returns``,
        weighted by ``batch.weight`` (prioritized replay) when present."""
        q_BA = critic(network_input(batch.obs))
        act_B = torch.as_tensor(batch.act, device=q_BA.device, dtype=torch.long)
        current_q = q_BA.gather(1, act_B.reshape(-1, 1)).flatten()
        td_error = current_q - batch.returns.flatten()
        squared = td_error.pow(2)
        weight = batch.__dict__.get("weight")
        if weight is not None:
            squared = squared * torch.as_tensor(weight, device=squared.device).flatten()
        return td_error, squared.mean()

    def _update_with_batch(self, batch: Batch) -> DiscreteSACTrainingStats:
        critic1_loss, critic2_loss = self._minimize_critics(batch)
        log_probs = self.policy.log_probs(batch)
        probs = log_probs.exp()
        entropy = categorical_entropy(probs, log_probs)
        with torch.no_grad():
            obs = network_input(batch.obs)
            min_q = torch.min(self.critic(obs), self.critic2(obs))
        actor_loss = categorical_soft_actor_loss(probs, min_q, entropy, self.alpha.coefficient)
        # the coefficient learns from the entropy before the actor's step, as the actor's loss
        alpha_loss = self.alpha.loss(entropy.detach())
        if alpha_loss is not None and self.alpha.optim is not None:
            self.alpha.optim.step(alpha_loss)
        actor_value, alpha_value, alpha_loss_value = self._step_actor(actor_loss, alpha_loss)
        self._update_lagged_network_weights()
        return DiscreteSACTrainingStats(
            actor_loss=actor_value,
            critic1_loss=critic1_loss,
            critic2_loss=critic2_loss,
            alpha=alpha_value,
            alpha_loss=alpha_loss_value,
        )

    def _step_actor(
        self, actor_loss: torch.Tensor, alpha_loss: torch.Tensor | None
    ) -> tuple[float, float, float | None]:
        """Step the actor; return its loss, the entropy coefficient and the coefficient's loss
        (None if it does not learn), read with the actor's one device sync."""
        if alpha_loss is None:
            (actor_value,) = self.policy_optim.step_with_loss_values(actor_loss)
            return actor_value, float(self.alpha.coefficient), None
        alpha = torch.as_tensor(self.alpha.coefficient, device=alpha_loss.device)
        actor_value, alpha_value, alpha_loss_value = self.policy_optim.step_with_loss_values(
            actor_loss, alpha=alpha, alpha_loss=alpha_loss
        )
        return actor_value, alpha_value, alpha_loss_value
