"""Recurrent SAC for continuous control: stored states, sequence replay and burn-in.

While collecting, :class:`RecurrentSACPolicy` carries the hidden states of the actor and of both
critics' encoders (a critic's recurrent state depends on observations only, see
:class:`~tianshou.utils.net.recurrent.RecurrentQCritic`), and stores the states every step started
from under ``policy.state_in``. An update replays ``batch_size`` sequences of
``burn_in + train_len`` steps (as :class:`~tianshou.algorithm.modelfree.recurrent_dqn.RecurrentDQN`
does): every network starts from its stored state, the first ``burn_in`` steps only refresh that
state, and the soft Bellman and actor losses average over the remaining real steps. Targets are
one-step soft targets from the Polyak-averaged target critics run over the same sequences.
"""

from dataclasses import dataclass
from typing import Any, TypeAlias

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Independent, Normal

from tianshou.algorithm._lagged_mixins import LaggedNetworkPolyakUpdateAlgorithmMixin
from tianshou.algorithm._sequences import masked_mean, replay_sequences, successors_extended
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, Policy, PolicyState, TrainingStats
from tianshou.algorithm.modelfree._stored_state import numpy_state
from tianshou.algorithm.modelfree.entropy_coefficient import Alpha, alpha_registered_with
from tianshou.algorithm.modelfree.entropy_regularised import soft_actor_loss, soft_td_target
from tianshou.algorithm.modelfree.sac import correct_log_prob_gaussian_tanh
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.spaces.dict_observations import ObsRows
from tianshou.utils.net.recurrent import RecurrentGaussianActor, RecurrentQCritic, RecurrentState
from tianshou.utils.torch_utils import torch_device

NetworkStates: TypeAlias = dict[str, RecurrentState]
"""The recurrent state of each of the policy's networks, by name: ``actor``, ``critic`` and
``critic2`` (as stored under ``policy.state_in``)."""


@dataclass(kw_only=True)
class RecurrentSACTrainingStats(TrainingStats):
    """Losses of one recurrent SAC update and the entropy coefficient after it."""

    actor_loss: float
    critic1_loss: float
    critic2_loss: float
    alpha: float


class RecurrentSACPolicy(Policy):
    """A tanh-squashed Gaussian policy on a recurrent actor, tracking its critics' states too.

    :param actor: a :class:`~tianshou.utils.net.recurrent.RecurrentGaussianActor` (with
        ``conditioned_sigma=True``, as SAC needs a state-dependent spread).
    :param critic: the first recurrent Q-critic the algorithm trains.
    :param critic2: the second recurrent Q-critic.
    :param action_space: the environment's ``Box`` action space.
    :param observation_space: the environment's observation space.
    :param deterministic_eval: outside training steps act with ``tanh(mean)``.
    :param action_scaling: rescale actions from [-1, 1] to the ``Box`` bounds.
    """

    def __init__(
        self,
        *,
        actor: RecurrentGaussianActor,
        critic: RecurrentQCritic,
        critic2: RecurrentQCritic,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        deterministic_eval: bool = True,
        action_scaling: bool = True,
    ) -> None:
        if not isinstance(action_space, gym.spaces.Box):
            raise ValueError(f"RecurrentSACPolicy needs a Box action space, got {action_space}")
        if not isinstance(actor, RecurrentGaussianActor):
            raise TypeError(
                f"the actor must be a RecurrentGaussianActor, got {type(actor).__name__}"
            )
        for net in (critic, critic2):
            if not isinstance(net, RecurrentQCritic):
                raise TypeError(f"the critics must be RecurrentQCritic, got {type(net).__name__}")
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=None,
        )
        self.actor = actor
        self.critic = critic
        self.critic2 = critic2
        self.deterministic_eval = deterministic_eval

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Act on one step of observations (actions in [-1, 1]), carrying the states.

        :return: a Batch with ``act``, ``state`` and, inside training steps, ``policy.state_in``.
        """
        obs = batch.obs
        training = self.is_within_training_step
        if training and not isinstance(obs, Batch | dict):  # converted once for the networks
            obs = torch.as_tensor(obs, device=self.actor.encoder._input_device, dtype=torch.float32)
        given = state if isinstance(state, dict | Batch) else {}
        states = {
            name: net.initial_state(len(obs)) if given.get(name) is None else given[name]
            for name, net in (("actor", self.actor), *self.critics.items())
        }
        (mu, sigma), actor_next = self.actor(obs, states["actor"])
        next_state = {"actor": actor_next}
        if training:
            next_state["critic"] = self.critic.advance(obs, states["critic"])
            next_state["critic2"] = self.critic2.advance(obs, states["critic2"])
        if self.deterministic_eval and not training:
            act = torch.tanh(mu)
        else:
            act = torch.tanh(Normal(mu, sigma).sample())
        result: dict[str, Any] = {"act": act, "state": next_state}
        if training:
            result["policy"] = batch_of_parsed_values({"state_in": numpy_state(states)})
        return batch_of_parsed_values(result)

    @property
    def critics(self) -> dict[str, RecurrentQCritic]:
        """Both critics, by the name their states are stored under (``critic``, ``critic2``)."""
        return {"critic": self.critic, "critic2": self.critic2}

    def advance_states(self, obs: ObsRows, states: NetworkStates) -> NetworkStates:
        """The states of the actor and of both critics after the observation sequences ``obs``
        ``(B, T, ...)``, each run from its state in ``states`` (as stored under
        ``policy.state_in``): what a burn-in refreshes before the trained steps."""
        return {
            name: net.advance(obs, states[name], sequence=True)
            for name, net in (("actor", self.actor), *self.critics.items())
        }

    def squashed_sample(
        self, mu: torch.Tensor, sigma: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action ``tanh(u)`` and its log-density (tanh-corrected)."""
        dist = Independent(Normal(mu, sigma), 1)
        raw = dist.rsample()
        act = torch.tanh(raw)
        return act, correct_log_prob_gaussian_tanh(dist.log_prob(raw), act)


class RecurrentSAC(OffPolicyAlgorithm[RecurrentSACPolicy], LaggedNetworkPolyakUpdateAlgorithmMixin):
    """SAC on replayed sequences with stored states and burn-in.

    The trainer's ``batch_size`` is the number of sequences per update.

    :param policy: a :class:`RecurrentSACPolicy` (its critics are the ones trained).
    :param policy_optim: the factory of the actor's optimizer.
    :param critic_optim: the factory of each critic's optimizer.
    :param tau: Polyak coefficient of the target critics.
    :param gamma: discount factor in [0, 1].
    :param alpha: the entropy coefficient: a float or an
        :class:`~tianshou.algorithm.modelfree.entropy_coefficient.Alpha` such as ``AutoAlpha``.
    :param burn_in: steps at the start of each sequence that only refresh the stored states.
    :param train_len: steps per sequence that are trained on.
    """

    def __init__(
        self,
        *,
        policy: RecurrentSACPolicy,
        policy_optim: OptimizerFactory,
        critic_optim: OptimizerFactory,
        tau: float = 0.005,
        gamma: float = 0.99,
        alpha: float | Alpha = 0.2,
        burn_in: int = 4,
        train_len: int = 8,
    ) -> None:
        if not isinstance(policy, RecurrentSACPolicy):
            raise TypeError(f"RecurrentSAC needs a RecurrentSACPolicy, got {policy!r}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if burn_in < 0 or train_len < 1:
            raise ValueError(
                f"burn_in must be >= 0 and train_len >= 1, got {burn_in} and {train_len}"
            )
        super().__init__(policy=policy)
        LaggedNetworkPolyakUpdateAlgorithmMixin.__init__(self, tau)
        self.actor_optim = self._create_optimizer(policy.actor, policy_optim)
        self.critic_optims = [
            self._create_optimizer(c, critic_optim) for c in policy.critics.values()
        ]
        self.critics_old = [self._add_lagged_network(c) for c in policy.critics.values()]
        self.gamma = gamma
        self.burn_in = burn_in
        self.train_len = train_len
        self.alpha = alpha_registered_with(self._create_optimizer, alpha)

    @property
    def seq_len(self) -> int:
        """Steps per sampled sequence: ``burn_in + train_len``."""
        return self.burn_in + self.train_len

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Replace the sampled transitions by the sequences that start at them."""
        return replay_sequences(
            buffer, indices, self.seq_len, torch.float32, torch_device(self.policy)
        )

    def _update_with_batch(self, batch: Batch) -> RecurrentSACTrainingStats:
        """One critic step, one actor step and one alpha step on the steps after the burn-in."""
        # o_0, then every step's next observation: position t + 1 is the successor of step t
        extended = successors_extended(batch.obs, batch.obs_next)
        stored = dict(batch.state.items())
        target_features = self._target_features(extended, stored)
        states = self._burned_in_states(extended, stored)
        steps = _TrainedSteps.after_burn_in(batch, extended, self.burn_in)
        (mu, sigma), _ = self.policy.actor(steps.obs, states["actor"], sequence=True)
        # sampled at every trained step and at the last one's successor
        act_new, log_prob = self.policy.squashed_sample(mu, sigma)
        alpha = self.alpha.coefficient
        target = self._soft_targets(steps, target_features, act_new[:, 1:], log_prob[:, 1:], alpha)
        critic_losses, features = self._step_critics(steps, states, target)
        actor_loss = self._step_actor(steps, features, act_new[:, :-1], log_prob[:, :-1], alpha)
        self._step_alpha(log_prob[:, :-1], steps.valid)
        self._update_lagged_network_weights()
        return RecurrentSACTrainingStats(
            actor_loss=actor_loss,
            critic1_loss=critic_losses[0],
            critic2_loss=critic_losses[1],
            alpha=self.alpha.value,
        )

    @torch.no_grad()
    def _target_features(self, extended: ObsRows, stored: NetworkStates) -> list[torch.Tensor]:
        """The target critics' features of every trained step's successor, one tensor
        ``(B, train_len, hidden_size)`` per critic, each run from its stored state."""
        return [
            old.features(extended, stored[name], sequence=True)[0][:, self.burn_in + 1 :]
            for name, old in zip(self.policy.critics, self.critics_old, strict=True)
        ]

    def _burned_in_states(self, extended: ObsRows, stored: NetworkStates) -> NetworkStates:
        """The stored states advanced over the burn-in steps, which only refresh them (no
        gradient flows through them)."""
        if self.burn_in == 0:
            return stored
        with torch.no_grad():
            return self.policy.advance_states(extended[:, : self.burn_in], stored)

    @torch.no_grad()
    def _soft_targets(
        self,
        steps: "_TrainedSteps",
        target_features: list[torch.Tensor],
        next_act: torch.Tensor,
        next_log_prob: torch.Tensor,
        alpha: float | torch.Tensor,
    ) -> torch.Tensor:
        """One-step soft targets ``(B, train_len)`` from the target critics' minimum at the
        actions sampled in the successors."""
        next_q = torch.min(
            *[
                old.value(features, next_act)
                for old, features in zip(self.critics_old, target_features, strict=True)
            ]
        )
        return soft_td_target(
            steps.rew, steps.not_terminal, self.gamma, next_q, next_log_prob, alpha
        )

    def _step_critics(
        self, steps: "_TrainedSteps", states: NetworkStates, target: torch.Tensor
    ) -> tuple[list[float], list[torch.Tensor]]:
        """One step of each critic on its squared errors against ``target`` over the valid
        steps.

        :return: the critics' losses, and their features of the trained steps (detached, from
            before the steps) for the actor's loss.
        """
        losses, features = [], []
        critics = self.policy.critics.items()
        for (name, critic), optim in zip(critics, self.critic_optims, strict=True):
            # the trained steps only: the last position is a successor, valued by the targets
            critic_features = critic.features(steps.obs[:, :-1], states[name], sequence=True)[0]
            q = critic.value(critic_features, steps.act)
            loss = masked_mean((q - target).pow(2), steps.valid)
            losses.append(optim.step_with_loss_values(loss)[0])
            features.append(critic_features.detach())
        return losses, features

    def _step_actor(
        self,
        steps: "_TrainedSteps",
        features: list[torch.Tensor],
        act: torch.Tensor,
        log_prob: torch.Tensor,
        alpha: float | torch.Tensor,
    ) -> float:
        """One actor step on the soft actor loss over the valid steps, the actions valued by the
        stepped critics' heads on ``features``; returns the loss."""
        critics = self.policy.critics.values()
        q = torch.min(*[critic.value(f, act) for critic, f in zip(critics, features, strict=True)])
        loss = soft_actor_loss(log_prob, q, alpha, steps.valid)
        (value,) = self.actor_optim.step_with_loss_values(loss)
        return value

    def _step_alpha(self, log_prob: torch.Tensor, valid: torch.Tensor) -> None:
        """One step of a learned entropy coefficient on the entropy of the valid steps."""
        entropy = -log_prob.detach()[valid]
        if not len(entropy):  # sequences sampled right after episode starts may hold no real step
            return
        alpha_loss = self.alpha.loss(entropy)
        if alpha_loss is not None and self.alpha.optim is not None:
            self.alpha.optim.step(alpha_loss)


@dataclass(frozen=True)
class _TrainedSteps:
    """The steps of the replayed sequences after the burn-in, ``train_len`` per sequence.

    :param obs: each trained step's observation, then the last one's successor,
        ``(B, train_len + 1, ...)``.
    :param act: the taken actions, ``(B, train_len, action_dim)``.
    :param rew: the rewards, ``(B, train_len)``.
    :param not_terminal: whether the episode goes on after each step, ``(B, train_len)``.
    :param valid: which steps are real rather than padding, ``(B, train_len)``.
    """

    obs: ObsRows
    act: torch.Tensor
    rew: torch.Tensor
    not_terminal: torch.Tensor
    valid: torch.Tensor

    @staticmethod
    def after_burn_in(batch: Batch, extended: ObsRows, burn_in: int) -> "_TrainedSteps":
        """The trained part of ``batch``'s sequences, whose observations followed by their
        successors are ``extended``."""
        return _TrainedSteps(
            obs=extended[:, burn_in:],
            act=batch.act[:, burn_in:],
            rew=batch.rew[:, burn_in:],
            not_terminal=~batch.terminated[:, burn_in:],
            valid=batch.valid[:, burn_in:],
        )
