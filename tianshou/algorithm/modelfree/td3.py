"""Twin-critic off-policy actor-critic algorithms and TD3.

``ActorDualCriticsOffPolicyAlgorithm`` adds a second Q-critic (and its target copy) to
``ActorCriticOffPolicyAlgorithm`` and bootstraps from the minimum of the two target critics, which
counters the over-estimation a single critic suffers from. ``TD3`` uses it with a deterministic
actor, target-policy smoothing and delayed actor updates; ``SAC`` with a stochastic actor.
"""

import copy
from abc import ABC
from dataclasses import dataclass
from typing import Generic

import torch
from torch import nn

from tianshou.algorithm._update_helpers import exclusive_parameters, finite_loss_values, frozen
from tianshou.algorithm.algorithm_base import TrainingStats, step_jointly
from tianshou.algorithm.compiled_update import UpdateCompiler, is_array
from tianshou.algorithm.modelfree.ddpg import (
    ActorCriticOffPolicyAlgorithm,
    ContinuousDeterministicPolicy,
    TPolicy,
    critic_td_loss,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch


@dataclass(kw_only=True)
class TD3TrainingStats(TrainingStats):
    """Losses of one TD3 update (``actor_loss`` is that of the latest actor step)."""

    actor_loss: float
    critic1_loss: float
    critic2_loss: float


def fresh_copy(module: nn.Module) -> nn.Module:
    """A deep copy of ``module`` whose layers are re-initialised (independent parameters)."""
    clone = copy.deepcopy(module)
    for submodule in clone.modules():
        reset = getattr(submodule, "reset_parameters", None)
        if callable(reset):
            reset()
    return clone


class ActorDualCriticsOffPolicyAlgorithm(
    ActorCriticOffPolicyAlgorithm[TPolicy], Generic[TPolicy], ABC
):
    """Base of the actor-critic algorithms with two Q-critics (clipped double Q-learning).

    :param policy: the policy whose actor is trained.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the first critic, ``(obs, act) -> (B, 1)``.
    :param critic_optim: the factory of the first critic's optimizer.
    :param critic2: the second critic; None uses a copy of ``critic`` with freshly initialised
        parameters.
    :param critic2_optim: the factory of the second critic's optimizer; None reuses
        ``critic_optim``.
    :param tau: Polyak coefficient of the target networks.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    """

    def __init__(
        self,
        *,
        policy: TPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
        critic2: nn.Module | None = None,
        critic2_optim: OptimizerFactory | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
    ) -> None:
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critic=critic,
            critic_optim=critic_optim,
            tau=tau,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
        )
        if critic2 is critic:
            raise ValueError("critic2 must be a different module from critic (or None)")
        self.critic2 = critic2 if critic2 is not None else fresh_copy(critic)
        self.critic2_old = self._add_lagged_network(self.critic2)
        self.critic2_optim = self._create_optimizer(self.critic2, critic2_optim or critic_optim)
        self._critic_only_params = exclusive_parameters([self.critic, self.critic2], policy)
        critic1_params = {id(p) for p in self.critic.parameters()}
        self._critics_share_parameters = any(
            id(p) in critic1_params for p in self.critic2.parameters()
        )

    def _target_q_compute_value(self, obs_batch: Batch, act_batch: Batch) -> torch.Tensor:
        """The minimum of the two target critics at the next observations and actions."""
        return torch.min(
            self.critic_old(obs_batch.obs, act_batch.act),
            self.critic2_old(obs_batch.obs, act_batch.act),
        )

    def _minimize_critics(self, batch: Batch) -> tuple[float, float]:
        """One gradient step of both critics on their squared TD errors; returns both losses
        and stores the mean TD error in ``batch.weight`` (new priorities).

        Critics that share no parameters get their gradients from a single backward pass of
        the summed losses, which is each critic's own gradient.

        :raises FloatingPointError: if a loss is NaN or infinite; no critic is changed then.
        """
        td1, critic1_loss = self._critic_td_loss(batch, self.critic)
        td2, critic2_loss = self._critic_td_loss(batch, self.critic2)
        batch.weight = ((td1 + td2) / 2.0).detach()
        return self._step_critics(critic1_loss, critic2_loss, critic1_loss + critic2_loss)

    def _step_critics(
        self, critic1_loss: torch.Tensor, critic2_loss: torch.Tensor, loss_sum: torch.Tensor
    ) -> tuple[float, float]:
        """Check both losses, then step both critics (from one backward pass of ``loss_sum``
        when they share no parameters); returns the losses as floats."""
        critic1_value, critic2_value = finite_loss_values(
            "the critics' optimizers", critic1_loss=critic1_loss, critic2_loss=critic2_loss
        )
        if self._critics_share_parameters:
            self.critic_optim.step(critic1_loss)
            self.critic2_optim.step(critic2_loss)
            return critic1_value, critic2_value
        step_jointly((self.critic_optim, self.critic2_optim), loss_sum)
        return critic1_value, critic2_value

    def _critic_losses(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        returns: torch.Tensor,
        weight: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """The compiled critics' step: ``(mean TD error, loss 1, loss 2, loss 1 + loss 2)``."""
        td1, critic1_loss = critic_td_loss(self.critic, obs, act, returns, weight)
        td2, critic2_loss = critic_td_loss(self.critic2, obs, act, returns, weight)
        return (td1 + td2) / 2.0, critic1_loss, critic2_loss, critic1_loss + critic2_loss

    def _compiled_minimize_critics(
        self, batch: Batch, compiler: UpdateCompiler, inputs: tuple[torch.Tensor | None, ...]
    ) -> tuple[float, float]:
        """:meth:`_minimize_critics` with the losses and their gradients computed compiled."""
        td_error, critic1_loss, critic2_loss, loss_sum = compiler(
            "critics", self._critic_losses, *inputs
        )
        batch.weight = td_error.detach()
        return self._step_critics(critic1_loss, critic2_loss, loss_sum)


class TD3(ActorDualCriticsOffPolicyAlgorithm[ContinuousDeterministicPolicy]):
    """Twin Delayed DDPG: twin critics, smoothed target actions and delayed actor updates.

    :param policy: the deterministic policy to train.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the first critic.
    :param critic_optim: the factory of the first critic's optimizer.
    :param critic2: the second critic (None: a re-initialised copy of ``critic``).
    :param critic2_optim: the factory of the second critic's optimizer (None: ``critic_optim``).
    :param tau: Polyak coefficient of the target networks.
    :param gamma: discount factor in [0, 1].
    :param policy_noise: standard deviation of the Gaussian noise added to target actions.
    :param update_actor_freq: update the actor (and the targets) every this many critic updates.
    :param noise_clip: the target-action noise is clipped to ``[-noise_clip, noise_clip]``
        (0: not clipped).
    :param n_step_return_horizon: number of rewards summed before bootstrapping.

    Its update can run compiled (:meth:`~tianshou.algorithm.Algorithm.compile_update`).
    """

    _supports_compiled_update = True
    _checkpointed_counters = ("_cnt",)  # when the next delayed actor update is due

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
        critic2: nn.Module | None = None,
        critic2_optim: OptimizerFactory | None = None,
        tau: float = 0.005,
        gamma: float = 0.99,
        policy_noise: float = 0.2,
        update_actor_freq: int = 2,
        noise_clip: float = 0.5,
        n_step_return_horizon: int = 1,
    ) -> None:
        if update_actor_freq < 1:
            raise ValueError(f"update_actor_freq must be a positive int, got {update_actor_freq}")
        if noise_clip < 0:
            raise ValueError(f"noise_clip must be non-negative, got {noise_clip}")
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
        self.actor_old = self._add_lagged_network(policy.actor)
        self.policy_noise = policy_noise
        self.update_actor_freq = update_actor_freq
        self.noise_clip = noise_clip
        self._cnt = 0
        self._last_actor_loss = 0.0

    def _target_q_compute_action(self, obs_batch: Batch) -> Batch:
        """The target actor's actions with clipped Gaussian smoothing noise."""
        act_batch = self.policy(obs_batch, model=self.actor_old)
        act = act_batch.act
        if self.policy_noise > 0:
            noise = torch.randn_like(act) * self.policy_noise
            if self.noise_clip > 0:
                noise = noise.clamp(-self.noise_clip, self.noise_clip)
            act_batch.act = act + noise
        return act_batch

    def _target_values(self, obs: torch.Tensor, noise: torch.Tensor | None) -> torch.Tensor:
        """The compiled target: the twin-critic minimum at the target actor's actions,
        smoothed with the standard-normal ``noise`` (None without smoothing)."""
        act, _ = self.actor_old(obs, state=None, info=None)
        if noise is not None:
            noise = noise * self.policy_noise
            if self.noise_clip > 0:
                noise = noise.clamp(-self.noise_clip, self.noise_clip)
            act = act + noise
        return torch.min(self.critic_old(obs, act), self.critic2_old(obs, act))

    def _compiled_target_q(self, compiler: UpdateCompiler, obs_next: torch.Tensor) -> torch.Tensor:
        noise = None
        if self.policy_noise > 0:
            shape = self.policy.action_space.shape or ()
            noise = compiler.standard_normal(len(obs_next), *shape)
        return compiler("target", self._target_values, obs_next, noise)

    def _actor_loss(self, batch: Batch) -> torch.Tensor:
        """The delayed actor step's loss: ``-mean(Q1(s, pi(s)))``, the critic held fixed."""
        act = self.policy(batch).act
        with frozen(self._critic_only_params):
            return -self.critic(batch.obs, act).mean()

    def _compiled_actor_loss(self, obs: torch.Tensor) -> torch.Tensor:
        """The compiled actor step's loss, :meth:`_actor_loss` on tensor observations."""
        act, _ = self.policy.actor(obs, state=None, info=None)
        return -self.critic(obs, act).mean()

    def _update_with_batch(self, batch: Batch) -> TD3TrainingStats:
        compiler = self._update_compiler if is_array(batch.obs) else None
        if compiler is None:
            critic1_loss, critic2_loss = self._minimize_critics(batch)
        else:
            inputs = self._compiled_step_inputs(batch)
            critic1_loss, critic2_loss = self._compiled_minimize_critics(batch, compiler, inputs)
        if self._cnt % self.update_actor_freq == 0:
            if compiler is None:
                actor_loss = self._actor_loss(batch)
            else:
                with frozen(self._critic_only_params):
                    actor_loss = compiler("actor", self._compiled_actor_loss, inputs[0])
            (self._last_actor_loss,) = self.policy_optim.step_with_loss_values(actor_loss)
            self._update_lagged_network_weights()
        self._cnt += 1
        return TD3TrainingStats(
            actor_loss=self._last_actor_loss,
            critic1_loss=critic1_loss,
            critic2_loss=critic2_loss,
        )
