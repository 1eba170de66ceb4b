"""Conservative Q-Learning (Kumar et al. 2020, "Conservative Q-Learning for Offline
Reinforcement Learning", arXiv:2006.04779) for continuous actions, on top of SAC.

Offline, a critic trained only by TD errors over-estimates the value of actions the data never
shows, and the actor exploits exactly those errors. CQL adds to each critic's loss a penalty
that pushes Q down on actions drawn away from the data and up on the data's own actions,

    penalty = T * mean_s log sum_a exp(Q(s, a) / T) - mean_(s,a in data) Q(s, a),

the CQL(H) variant with the log-sum-exp estimated by importance sampling over
``num_repeat_actions`` actions per state from each of three proposals (paper, appendix F):
uniform random actions (corrected by the uniform log-density), current-policy actions at ``s``
and at ``s'`` (corrected by their log-probabilities). The penalty is scaled by ``cql_weight``;
with ``with_lagrange`` also by a learned multiplier ``alpha'`` that grows while the scaled
penalty exceeds ``lagrange_threshold`` (CQL-Lagrange, paper section 5, eq. 5).

Deviations from the published implementation, all towards the papers: the log-sum-exp runs over
the ``3 * num_repeat_actions`` sampled actions of each state; random actions are drawn from
``[min_action, max_action]`` with that box's density; the policy's actions for the penalty are
sampled without gradients (the critic's step never used them); ``calibrated`` bounds only the
Q-values of the policy's actions by the returns-to-go, before the log-probability correction,
as Cal-QL does (Nakamoto et al. 2023, arXiv:2303.05479, eq. 5.1); only terminated (not
truncated) transitions cut the bootstrap; a missing ``critic2`` is a freshly initialised copy.

Dict observations (a ``Batch`` per observation batch) need an actor body and critics that read
them (:class:`~tianshou.utils.net.dict_encoder.DictEncoder`,
:class:`~tianshou.utils.net.dict_encoder.DictActionCritic`); the penalty's repeated states are
then repeated and stacked key by key.
"""

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from tianshou.algorithm._update_helpers import (
    exclusive_parameters,
    finite_loss_values,
    frozen,
)
from tianshou.algorithm.algorithm_base import (
    LaggedNetworkPolyakUpdateAlgorithmMixin,
    OfflineAlgorithm,
    step_jointly,
)
from tianshou.algorithm.modelfree.entropy_coefficient import Alpha, alpha_registered_with
from tianshou.algorithm.modelfree.entropy_regularised import soft_actor_loss, soft_td_target
from tianshou.algorithm.modelfree.sac import SACPolicy, SACTrainingStats
from tianshou.algorithm.modelfree.td3 import fresh_copy
from tianshou.algorithm.optim import AdamOptimizerFactory, OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.spaces.dict_observations import ObsRows, cat_rows, obs_rows, repeat_rows
from tianshou.utils.torch_utils import torch_device

CALIBRATION_KEY = "calibration_returns"
"""The buffer field :meth:`CQL.process_buffer` adds when ``calibrated``."""


@dataclass(kw_only=True)
class CQLTrainingStats(SACTrainingStats):
    """Losses of one CQL update; ``critic1_loss``/``critic2_loss`` include the conservative
    penalty, ``cql_alpha`` is the multiplier ``alpha'`` used in this update and
    ``cql_alpha_loss`` its loss (both None without ``with_lagrange``)."""

    cql_alpha: float | None = None
    cql_alpha_loss: float | None = None


class _LogAlphaPrime(nn.Module):
    """Holds the learned ``log alpha'`` of CQL-Lagrange (a module, so it is checkpointed)."""

    def __init__(self) -> None:
        super().__init__()
        self.log_alpha = nn.Parameter(torch.zeros(()))


class CQL(OfflineAlgorithm[SACPolicy], LaggedNetworkPolyakUpdateAlgorithmMixin):
    """Conservative Q-Learning: SAC whose twin critics carry the CQL(H) penalty.

    :param policy: the squashed-Gaussian policy to train.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the first critic, ``(obs, act) -> (B, 1)``.
    :param critic_optim: the factory of the first critic's optimizer.
    :param critic2: the second critic (None: a freshly initialised copy of ``critic``).
    :param critic2_optim: the factory of the second critic's optimizer (None: ``critic_optim``).
    :param cql_alpha_lr: Adam learning rate of ``log alpha'`` (only with ``with_lagrange``).
    :param cql_weight: the penalty's weight; larger is more conservative (closer to the data).
    :param tau: Polyak coefficient of the target critics.
    :param gamma: discount factor in [0, 1].
    :param alpha: SAC's entropy coefficient: a float (fixed) or an ``Alpha`` such as
        ``AutoAlpha``.
    :param temperature: ``T`` of the log-sum-exp; smaller approaches a hard maximum.
    :param with_lagrange: learn the multiplier ``alpha'`` of the penalty (CQL-Lagrange).
    :param lagrange_threshold: the penalty level (after ``cql_weight``) above which ``alpha'``
        grows and below which it shrinks.
    :param min_action: lower bound of the uniform random actions (the policy's raw scale).
    :param max_action: upper bound of the uniform random actions.
    :param num_repeat_actions: actions sampled per state from each of the three proposals.
    :param alpha_min: lower clamp of ``alpha'``.
    :param alpha_max: upper clamp of ``alpha'``.
    :param max_grad_norm: clip each critic's gradient norm to this before stepping.
    :param calibrated: bound the penalised policy-action Q-values from below by the
        discounted returns-to-go of the data (Cal-QL); :meth:`process_buffer` adds them.
    """

    def __init__(
        self,
        *,
        policy: SACPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
        critic2: nn.Module | None = None,
        critic2_optim: OptimizerFactory | None = None,
        cql_alpha_lr: float = 1e-4,
        cql_weight: float = 1.0,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | Alpha = 0.2,
        temperature: float = 1.0,
        with_lagrange: bool = True,
        lagrange_threshold: float = 10.0,
        min_action: float = -1.0,
        max_action: float = 1.0,
        num_repeat_actions: int = 10,
        alpha_min: float = 0.0,
        alpha_max: float = 1e6,
        max_grad_norm: float = 1.0,
        calibrated: bool = True,
    ) -> None:
        _check_params(
            cql_alpha_lr, cql_weight, gamma, temperature, min_action, max_action,
            num_repeat_actions, alpha_min, alpha_max,
        )  # fmt: skip
        super().__init__(policy=policy)
        LaggedNetworkPolyakUpdateAlgorithmMixin.__init__(self, tau=tau)
        if critic2 is not None and {id(p) for p in critic.parameters()} & {
            id(p) for p in critic2.parameters()
        }:
            raise ValueError("critic2 must share no parameters with critic (or be None)")
        self.policy_optim = self._create_optimizer(policy, policy_optim)
        self.critic = critic
        self.critic2 = critic2 if critic2 is not None else fresh_copy(critic)
        self.critic_optim = self._create_optimizer(critic, critic_optim, max_grad_norm)
        self.critic2_optim = self._create_optimizer(
            self.critic2, critic2_optim or critic_optim, max_grad_norm
        )
        self.critic_old = self._add_lagged_network(self.critic)
        self.critic2_old = self._add_lagged_network(self.critic2)
        self.alpha = alpha_registered_with(self._create_optimizer, alpha)
        self.cql_log_alpha = _LogAlphaPrime().to(torch_device(policy))
        self.cql_alpha_optim = self._create_optimizer(
            self.cql_log_alpha, AdamOptimizerFactory(lr=cql_alpha_lr)
        )
        self.gamma = gamma
        self.cql_weight = cql_weight
        self.temperature = temperature
        self.with_lagrange = with_lagrange
        self.lagrange_threshold = lagrange_threshold
        self.min_action, self.max_action = min_action, max_action
        self.num_repeat_actions = num_repeat_actions
        self.alpha_min, self.alpha_max = alpha_min, alpha_max
        self.max_grad_norm = max_grad_norm
        self.calibrated = calibrated
        self._critic_only_params = exclusive_parameters([self.critic, self.critic2], policy)
        self._act_dim = int(np.prod(policy.action_space.shape or (1,)))
        # the log-density of the uniform random actions on [min_action, max_action]^act_dim
        self._random_log_density = -self._act_dim * math.log(max_action - min_action)

    def process_buffer(self, buffer: ReplayBuffer) -> ReplayBuffer:
        """With ``calibrated``, store each transition's discounted return-to-go (to the end of
        its stored episode, ``gamma``-discounted) in the buffer as ``calibration_returns``."""
        if self.calibrated:
            batch, indices = buffer.sample(0)
            returns, _ = self.compute_episodic_return(
                batch, buffer, indices, gamma=self.gamma, gae_lambda=1.0
            )
            buffer.set_array_at_key(returns.astype(np.float32), CALIBRATION_KEY, indices)
        return buffer

    def _update_with_batch(self, batch: Batch) -> CQLTrainingStats:
        obs, act, rew, obs_next, not_terminal, lower_bound = self._tensors(batch)
        actor_loss, alpha_loss = self._actor_and_alpha_step(obs)
        obs_rep = repeat_rows(obs, self.num_repeat_actions)
        target_q, pi_act, pi_log_prob = self._target_and_policy_samples(
            rew, obs_rep, obs_next, not_terminal
        )
        rand_act = torch.empty(len(obs_rep), self._act_dim, device=act.device).uniform_(
            self.min_action, self.max_action
        )
        sampled_act = torch.cat([rand_act, pi_act])
        penalties, td_losses = [], []
        for critic in (self.critic, self.critic2):
            td_loss, penalty = self._critic_losses(
                critic, obs, act, target_q, obs_rep, sampled_act, pi_log_prob, lower_bound
            )
            td_losses.append(td_loss)
            penalties.append(self.cql_weight * penalty)
        cql_alpha, cql_alpha_loss = self._lagrange_step(penalties)
        if cql_alpha is not None:
            penalties = [cql_alpha * (p - self.lagrange_threshold) for p in penalties]
        critic1_loss, critic2_loss = (td + p for td, p in zip(td_losses, penalties, strict=True))
        values = finite_loss_values(
            "the critics' optimizers", critic1_loss=critic1_loss, critic2_loss=critic2_loss
        )
        self._step_critics(critic1_loss + critic2_loss)
        self._update_lagged_network_weights()
        return self._stats(values, actor_loss, alpha_loss, cql_alpha, cql_alpha_loss)

    # ------------------------------------------------------------------ pieces of the update
    def _tensors(
        self, batch: Batch
    ) -> tuple[ObsRows, torch.Tensor, torch.Tensor, ObsRows, torch.Tensor, torch.Tensor]:
        """``obs, act, rew, obs_next, not_terminal, lower_bound`` as float tensors on the
        policy's device (dict observations as a ``Batch`` of tensors), with the shapes checked
        (``lower_bound`` is empty unless calibrated)."""
        device = torch_device(self.policy)
        data = batch.__dict__

        def tensor(key: str) -> torch.Tensor:
            return torch.as_tensor(data[key], device=device, dtype=torch.float32)

        obs, act = obs_rows(data["obs"], device), tensor("act")
        size = len(obs)
        if act.shape != (size, self._act_dim):
            raise ValueError(
                f"CQL needs actions of shape (batch_size, {self._act_dim}) = ({size}, "
                f"{self._act_dim}) for the action space {self.policy.action_space}, got "
                f"{tuple(act.shape)}"
            )
        rew = tensor("rew")
        if rew.shape != (size,):
            raise ValueError(f"CQL needs scalar rewards of shape ({size},), got {tuple(rew.shape)}")
        not_terminal = 1.0 - tensor("terminated")
        lower_bound = torch.empty(0, device=device)
        if self.calibrated:
            if CALIBRATION_KEY not in data:
                raise ValueError(
                    f"calibrated CQL needs '{CALIBRATION_KEY}' in the batch: pass the buffer "
                    "through algorithm.process_buffer(buffer) first (the OfflineTrainer does), "
                    "or build CQL with calibrated=False"
                )
            lower_bound = tensor(CALIBRATION_KEY).reshape(size, 1)
        return obs, act, rew, obs_rows(data["obs_next"], device), not_terminal, lower_bound

    def _actor_and_alpha_step(self, obs: ObsRows) -> tuple[torch.Tensor, torch.Tensor | None]:
        """SAC's actor step (``alpha * log pi - min Q``, through frozen critics) and the entropy
        coefficient's step; returns both (unsynchronised) losses."""
        result = self.policy(batch_of_parsed_values({"obs": obs, "info": Batch()}))
        with frozen(self._critic_only_params):
            q1 = self.critic(obs, result.act).flatten()
            q2 = self.critic2(obs, result.act).flatten()
        log_prob = result.log_prob.flatten()
        actor_loss = soft_actor_loss(log_prob, torch.min(q1, q2), self.alpha.coefficient)
        self.policy_optim.step(actor_loss)
        alpha_loss = self.alpha.loss(-log_prob.detach())
        if alpha_loss is not None and self.alpha.optim is not None:
            self.alpha.optim.step(alpha_loss)
        return actor_loss.detach(), alpha_loss

    @torch.no_grad()
    def _target_and_policy_samples(
        self,
        rew: torch.Tensor,
        obs_rep: ObsRows,
        obs_next: ObsRows,
        not_terminal: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The soft TD targets ``(B,)`` and the penalty's policy actions: one sampling pass
        over ``[s'; s repeated N times; s' repeated N times]`` (each state's repeats adjacent).

        :return: ``(target_q, pi_act, pi_log_prob)``, the latter two of shapes
            ``(2 * B * N, act_dim)`` and ``(2 * B * N,)``: first sampled at ``s``, then at ``s'``.
        """
        size = len(obs_next)
        next_rep = repeat_rows(obs_next, self.num_repeat_actions)
        sampled = self.policy(
            batch_of_parsed_values(
                {"obs": cat_rows([obs_next, obs_rep, next_rep]), "info": Batch()}
            )
        )
        act_next, pi_act = sampled.act[:size], sampled.act[size:]
        log_prob_next, pi_log_prob = sampled.log_prob[:size, 0], sampled.log_prob[size:, 0]
        next_q = torch.min(
            self.critic_old(obs_next, act_next), self.critic2_old(obs_next, act_next)
        )
        target_q = soft_td_target(
            rew, not_terminal, self.gamma, next_q.flatten(), log_prob_next, self.alpha.coefficient
        )
        return target_q, pi_act, pi_log_prob

    def _critic_losses(
        self,
        critic: nn.Module,
        obs: ObsRows,
        act: torch.Tensor,
        target_q: torch.Tensor,
        obs_rep: ObsRows,
        sampled_act: torch.Tensor,
        pi_log_prob: torch.Tensor,
        lower_bound: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One critic's squared TD error and its (unweighted) CQL(H) penalty, from one forward
        pass over the data actions and the ``3 * N`` sampled actions of each state
        (``sampled_act``: random, policy at ``s``, policy at ``s'``; all evaluated at ``s``)."""
        size, repeat = len(obs), self.num_repeat_actions
        q = critic(cat_rows([obs, obs_rep, obs_rep, obs_rep]), torch.cat([act, sampled_act]))
        q = q.flatten()
        q_data, q_rand, q_pi = q[:size], q[size : size * (repeat + 1)], q[size * (repeat + 1) :]
        q_rand = q_rand.reshape(size, repeat) - self._random_log_density
        q_pi = q_pi.reshape(2, size, repeat)
        if self.calibrated:
            q_pi = torch.maximum(q_pi, lower_bound)
        q_pi = q_pi - pi_log_prob.reshape(2, size, repeat)
        sampled = torch.cat([q_rand, q_pi[0], q_pi[1]], dim=1)
        temperature = self.temperature
        log_sum_exp = temperature * torch.logsumexp(sampled / temperature, dim=1)
        return (q_data - target_q).square().mean(), log_sum_exp.mean() - q_data.mean()

    def _lagrange_step(
        self, penalties: list[torch.Tensor]
    ) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """With ``with_lagrange``: ``alpha' = clamp(exp(log alpha'), alpha_min, alpha_max)``
        before its step, and one step on ``-alpha' * (mean penalty - lagrange_threshold)``,
        which raises ``alpha'`` while the penalties exceed the threshold."""
        if not self.with_lagrange:
            return None, None
        log_alpha = self.cql_log_alpha.log_alpha
        cql_alpha = log_alpha.exp().clamp(self.alpha_min, self.alpha_max)
        gap = (penalties[0] + penalties[1]).detach() * 0.5 - self.lagrange_threshold
        cql_alpha_loss = -(cql_alpha * gap)
        self.cql_alpha_optim.step(cql_alpha_loss)
        return cql_alpha.detach(), cql_alpha_loss.detach()

    def _step_critics(self, loss: torch.Tensor) -> None:
        """Both critics from one backward pass of their summed losses (they share no
        parameters), each clipped to ``max_grad_norm`` and stepped by its own optimizer."""
        step_jointly((self.critic_optim, self.critic2_optim), loss)

    def _stats(
        self,
        critic_values: list[float],
        actor_loss: torch.Tensor,
        alpha_loss: torch.Tensor | None,
        cql_alpha: torch.Tensor | None,
        cql_alpha_loss: torch.Tensor | None,
    ) -> CQLTrainingStats:
        """The update's statistics, read with one device sync."""
        optional = {
            "alpha_loss": alpha_loss,
            "cql_alpha": cql_alpha,
            "cql_alpha_loss": cql_alpha_loss,
        }
        present = {k: v for k, v in optional.items() if v is not None}
        alpha = torch.as_tensor(self.alpha.coefficient, device=actor_loss.device)
        values = dict(
            zip(
                ["actor_loss", "alpha", *present],
                finite_loss_values("CQL's update", actor_loss=actor_loss, alpha=alpha, **present),
                strict=True,
            )
        )
        critic1_loss, critic2_loss = critic_values
        return CQLTrainingStats(
            actor_loss=values["actor_loss"],
            critic1_loss=critic1_loss,
            critic2_loss=critic2_loss,
            alpha=values["alpha"],
            alpha_loss=values.get("alpha_loss"),
            cql_alpha=values.get("cql_alpha"),
            cql_alpha_loss=values.get("cql_alpha_loss"),
        )


def _check_params(
    cql_alpha_lr: float,
    cql_weight: float,
    gamma: float,
    temperature: float,
    min_action: float,
    max_action: float,
    num_repeat_actions: int,
    alpha_min: float,
    alpha_max: float,
) -> None:
    """Raise ``ValueError`` naming the first invalid hyper-parameter of :class:`CQL`."""
    checks = [
        (cql_alpha_lr > 0, f"cql_alpha_lr must be positive, got {cql_alpha_lr}"),
        (cql_weight >= 0, f"cql_weight must be non-negative, got {cql_weight}"),
        (0.0 <= gamma <= 1.0, f"gamma must be in [0, 1], got {gamma}"),
        (temperature > 0, f"temperature must be positive, got {temperature}"),
        (
            min_action < max_action,
            f"min_action must be below max_action, got {min_action} and {max_action}",
        ),
        (
            isinstance(num_repeat_actions, int) and num_repeat_actions >= 1,
            f"num_repeat_actions must be a positive int, got {num_repeat_actions!r}",
        ),
        (
            0.0 <= alpha_min <= alpha_max,
            f"need 0 <= alpha_min <= alpha_max, got {alpha_min} and {alpha_max}",
        ),
    ]
    for ok, message in checks:
        if not ok:
            raise ValueError(message)
