"""Off-policy actor-critic foundations and DDPG.

``ContinuousPolicyWithExplorationNoise`` is the base of continuous-action policies that explore by
adding noise to their actions. ``ActorCriticOffPolicyAlgorithm`` holds what DDPG, TD3 and SAC share:
a Q-critic with a Polyak-averaged target copy, n-step TD targets and the critic's squared-error
step. ``DDPG`` trains a deterministic actor to maximise that critic.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import gymnasium as gym
import numpy as np
import torch
from gymnasium.spaces import Box
from torch import nn

from tianshou.algorithm._update_helpers import exclusive_parameters, frozen
from tianshou.algorithm.algorithm_base import (
    ActionBoundMethod,
    Algorithm,
    LaggedNetworkPolyakUpdateAlgorithmMixin,
    OffPolicyAlgorithm,
    Policy,
    PolicyState,
    TrainingStats,
)
from tianshou.algorithm.compiled_update import UpdateCompiler, is_array
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.exploration.random import BaseNoise, GaussianNoise


@dataclass(kw_only=True)
class DDPGTrainingStats(TrainingStats):
    """Losses of one DDPG update."""

    actor_loss: float
    critic_loss: float


class ContinuousPolicyWithExplorationNoise(Policy, ABC):
    """A continuous-action policy that explores by adding noise to the actions it collects.

    :param exploration_noise: the noise added to actions by :meth:`add_exploration_noise`;
        ``"default"`` is ``GaussianNoise(sigma=0.1)``, the customary noise of DDPG and TD3 (in
        units of the raw action in [-1, 1], i.e. 10% of the action range's half-width when
        ``action_scaling`` is on); None adds no noise.
    :param action_space: the environment's ``Box`` action space.
    :param observation_space: the environment's observation space.
    :param action_scaling: rescale raw actions from [-1, 1] to the ``Box`` bounds.
    :param action_bound_method: ``"clip"``, ``"tanh"`` or None; how raw actions are brought into
        [-1, 1] before they are sent to the environment.
    """

    def __init__(
        self,
        *,
        exploration_noise: BaseNoise | Literal["default"] | None = None,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        if not isinstance(action_space, Box):
            raise ValueError(
                f"{type(self).__name__} needs a continuous (Box) action space, got {action_space}"
            )
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.exploration_noise: BaseNoise | None = None
        self.set_exploration_noise(exploration_noise)

    def set_exploration_noise(self, noise: BaseNoise | Literal["default"] | None) -> None:
        """Replace the exploration noise (``"default"``: ``GaussianNoise(sigma=0.1)``)."""
        if noise == "default":
            noise = GaussianNoise(sigma=0.1)
        if noise is not None and not isinstance(noise, BaseNoise):
            raise TypeError(
                f"exploration_noise must be a BaseNoise, 'default' or None, got {noise!r}"
            )
        self.exploration_noise = noise

    def add_exploration_noise(self, act: np.ndarray | Batch, batch: Batch) -> np.ndarray | Batch:
        """Return ``act`` plus a draw of the exploration noise (unchanged without noise)."""
        if self.exploration_noise is None:
            return act
        if isinstance(act, torch.Tensor):
            act = act.detach().cpu().numpy()
        if not isinstance(act, np.ndarray):
            raise TypeError(f"exploration noise needs a numpy action array, got {type(act)}")
        return act + self.exploration_noise(act.shape)


class ContinuousDeterministicPolicy(ContinuousPolicyWithExplorationNoise):
    """A deterministic continuous policy ``a = actor(s)``, exploring with additive noise.

    :param actor: called as ``actor(obs, state=..., info=...)``, returns ``(action, state)``,
        e.g. a ``ContinuousActorDeterministic``.
    :param exploration_noise: noise added to collected actions; ``"default"`` is
        ``GaussianNoise(sigma=0.1)``, None (the default) adds none, so pass one of the two for
        DDPG and TD3, whose deterministic actor does not explore by itself.
    :param action_space: the environment's ``Box`` action space.
    :param observation_space: the environment's observation space.
    :param action_scaling: rescale raw actions from [-1, 1] to the ``Box`` bounds.
    :param action_bound_method: how raw actions are bounded before scaling.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        exploration_noise: BaseNoise | Literal["default"] | None = None,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        super().__init__(
            exploration_noise=exploration_noise,
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.actor = actor

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> Batch:
        """Actions ``actor(obs)``; ``model`` evaluates another actor (e.g. a target copy).

        :return: a Batch with ``act`` and ``state``.
        """
        act, hidden = (model or self.actor)(batch.obs, state=state, info=batch.get("info"))
        return batch_of_parsed_values({"act": act, "state": hidden})


TPolicy = TypeVar("TPolicy", bound=Policy)


def critic_td_loss(
    critic: nn.Module,
    obs: Any,
    act: Any,
    returns: torch.Tensor,
    weight: np.ndarray | torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(td_error, loss)`` of a Q-critic: ``critic(obs, act) - returns`` and its mean square,
    each sample's square weighted by ``weight`` (prioritized replay) when given.

    :param critic: maps ``(obs, act)`` to Q-values ``(B, 1)``.
    :param obs: the observations (an array, a tensor or a Batch the critic understands).
    :param act: the actions taken.
    :param returns: the TD targets, ``(B,)`` or ``(B, 1)``.
    :param weight: importance weights ``(B,)``, or None.
    """
    current_q = critic(obs, act).flatten()
    td_error = current_q - returns.flatten()
    squared = td_error.pow(2)
    if weight is not None:
        squared = squared * torch.as_tensor(weight, device=squared.device).flatten()
    return td_error, squared.mean()


class ActorCriticOffPolicyAlgorithm(
    OffPolicyAlgorithm[TPolicy], LaggedNetworkPolyakUpdateAlgorithmMixin, Generic[TPolicy], ABC
):
    """Base of the off-policy actor-critic algorithms with a Q-critic and its target copy.

    :param policy: the policy whose actor is trained.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: maps ``(obs, act)`` to Q-values ``(B, 1)``, e.g. a ``ContinuousCritic``.
    :param critic_optim: the factory of the critic's optimizer.
    :param tau: Polyak coefficient in [0, 1]: after each update the target critic moves this
        fraction of the way towards the critic.
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
        tau: float = 0.005,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
    ) -> None:
        if not 0.0 <= tau <= 1.0:
            raise ValueError(f"tau must be in [0, 1], got {tau}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if n_step_return_horizon < 1:
            raise ValueError(
                f"n_step_return_horizon must be a positive int, got {n_step_return_horizon}"
            )
        super().__init__(policy=policy)
        LaggedNetworkPolyakUpdateAlgorithmMixin.__init__(self, tau=tau)
        self.policy_optim = self._create_optimizer(policy, policy_optim)
        self.critic = critic
        self.critic_old = self._add_lagged_network(critic)
        self.critic_optim = self._create_optimizer(critic, critic_optim)
        self.gamma = gamma
        self.n_step_return_horizon = n_step_return_horizon
        self._critic_only_params = exclusive_parameters([critic], policy)

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Attach the n-step bootstrapped targets ``batch.returns``."""
        sampled_obs_next = batch.obs_next
        compiler = self._update_compiler

        def target_q(buf: ReplayBuffer, target_indices: np.ndarray) -> torch.Tensor:
            # with one step the bootstrap rows are the sampled rows: reuse their obs_next
            same_rows = target_indices is indices or np.array_equal(target_indices, indices)
            obs_next = sampled_obs_next if same_rows else buf._obs_next_at(target_indices)
            if compiler is not None and is_array(obs_next):
                with torch.no_grad():
                    obs = torch.as_tensor(obs_next, device=compiler.device)
                    return self._compiled_target_q(compiler, obs)
            obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
            with torch.no_grad():
                act_batch = self._target_q_compute_action(obs_batch)
                return self._target_q_compute_value(obs_batch, act_batch)

        return self.compute_nstep_return(
            batch,
            buffer,
            indices,
            target_q,
            gamma=self.gamma,
            n_step=self.n_step_return_horizon,
        )

    def _compiled_target_q(self, compiler: UpdateCompiler, obs_next: torch.Tensor) -> torch.Tensor:
        """The target values of the tensor ``obs_next``, computed compiled (under no_grad);
        algorithms that support :meth:`compile_update` implement it."""
        raise NotImplementedError(f"{type(self).__name__} has no compiled target computation")

    @abstractmethod
    def _target_q_compute_action(self, obs_batch: Batch) -> Batch:
        """The policy's output (at least ``act``) for the next observations."""

    @abstractmethod
    def _target_q_compute_value(self, obs_batch: Batch, act_batch: Batch) -> torch.Tensor:
        """The bootstrap value of the next observations given the actions chosen there."""

    @staticmethod
    def _critic_td_loss(batch: Batch, critic: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
        """``(td_error, loss)`` of ``critic`` against ``batch.returns``; the loss is the mean
        squared TD error, weighted by ``batch.weight`` (prioritized replay) when present."""
        return critic_td_loss(
            critic, batch.obs, batch.act, batch.returns, batch.__dict__.get("weight")
        )

    @staticmethod
    def _compiled_step_inputs(
        batch: Batch,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(obs, act, returns, weight)`` of ``batch`` as tensors on the device of its
        returns (the networks' device), the arguments of the compiled update steps."""
        device = batch.returns.device
        weight = batch.__dict__.get("weight")
        return (
            torch.as_tensor(batch.obs, device=device),
            torch.as_tensor(batch.act, device=device),
            batch.returns,
            None if weight is None else torch.as_tensor(weight, device=device),
        )

    @staticmethod
    def _minimize_critic_squared_loss(
        batch: Batch, critic: nn.Module, optimizer: Algorithm.Optimizer
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One gradient step of ``critic`` on its squared TD error; returns ``(td, loss)``."""
        td_error, loss = ActorCriticOffPolicyAlgorithm._critic_td_loss(batch, critic)
        optimizer.step(loss)
        return td_error, loss


class DDPG(ActorCriticOffPolicyAlgorithm[ContinuousDeterministicPolicy]):
    """Deep Deterministic Policy Gradient: the actor ascends the critic's Q(s, actor(s)).

    :param policy: the deterministic policy to train.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: maps ``(obs, act)`` to Q-values.
    :param critic_optim: the factory of the critic's optimizer.
    :param tau: Polyak coefficient of the target networks (actor and critic).
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    """

    def __init__(
        self,
        *,
        policy: ContinuousDeterministicPolicy,
        policy_optim: OptimizerFactory,
        critic: nn.Module,
        critic_optim: OptimizerFactory,
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
        self.actor_old = self._add_lagged_network(policy.actor)

    def _target_q_compute_action(self, obs_batch: Batch) -> Batch:
        return self.policy(obs_batch, model=self.actor_old)

    def _target_q_compute_value(self, obs_batch: Batch, act_batch: Batch) -> torch.Tensor:
        return self.critic_old(obs_batch.obs, act_batch.act)

    def _update_with_batch(self, batch: Batch) -> DDPGTrainingStats:
        td_error, critic_loss = self._minimize_critic_squared_loss(
            batch, self.critic, self.critic_optim
        )
        batch.weight = td_error.detach()
        act = self.policy(batch).act
        with frozen(self._critic_only_params):
            actor_loss = -self.critic(batch.obs, act).mean()
        actor_value, critic_value = self.policy_optim.step_with_loss_values(
            actor_loss, critic_loss=critic_loss
        )
        self._update_lagged_network_weights()
        return DDPGTrainingStats(actor_loss=actor_value, critic_loss=critic_value)
