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
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Independent, Normal

from tianshou.algorithm._lagged_mixins import LaggedNetworkPolyakUpdateAlgorithmMixin
from tianshou.algorithm._sequences import masked_mean, replay_sequences, successors_extended
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, Policy, PolicyState, TrainingStats
from tianshou.algorithm.modelfree._stored_state import numpy_state
from tianshou.algorithm.modelfree.sac import (
    Alpha,
    alpha_registered_with,
    correct_log_prob_gaussian_tanh,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.utils.net.recurrent import RecurrentGaussianActor, RecurrentQCritic
from tianshou.utils.torch_utils import torch_device


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
            for name, net in (("actor", self.actor), *self._named_critics())
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

    def _named_critics(self) -> list[tuple[str, RecurrentQCritic]]:
        return [("critic", self.critic), ("critic2", self.critic2)]

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
        :class:`~tianshou.algorithm.modelfree.sac.Alpha` such as ``AutoAlpha``.
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
            self._create_optimizer(c, critic_optim) for _, c in policy._named_critics()
        ]
        self.critics_old = [self._add_lagged_network(c) for _, c in policy._named_critics()]
        self.gamma = gamma
        self.burn_in = burn_in
        self.train_len = train_len
        self.alpha = alpha_registered_with(self, alpha)

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
        """One critic step, one actor step and one alpha step on the sequences."""
        policy = self.policy
        burn = self.burn_in
        # o_0, then every step's next observation: position t + 1 is the successor of step t
        extended = successors_extended(batch.obs, batch.obs_next)
        states = dict(batch.state.items())
        with torch.no_grad():
            target_features = [
                old.features(extended, states[name], sequence=True)[0][:, burn + 1 :]
                for (name, _), old in zip(policy._named_critics(), self.critics_old, strict=True)
            ]
            if burn > 0:
                states = {
                    "actor": policy.actor(extended[:, :burn], states["actor"], sequence=True)[1],
                    **{
                        name: critic.features(extended[:, :burn], states[name], sequence=True)[1]
                        for name, critic in policy._named_critics()
                    },
                }
        trained = extended[:, burn:]
        valid = batch.valid[:, burn:]
        (mu, sigma), _ = policy.actor(trained, states["actor"], sequence=True)
        act_new, log_prob = policy.squashed_sample(mu, sigma)
        alpha = self.alpha._coefficient()
        with torch.no_grad():
            next_act, next_log_prob = act_new[:, 1:], log_prob[:, 1:]
            next_q = torch.min(
                *[
                    old.value(features, next_act)
                    for old, features in zip(self.critics_old, target_features, strict=True)
                ]
            )
            not_terminal = ~batch.terminated[:, burn:]
            target = batch.rew[:, burn:] + self.gamma * not_terminal * (
                next_q - alpha * next_log_prob
            )
        act = batch.act[:, burn:]
        features = []
        critic_losses = []
        for (name, critic), optim in zip(policy._named_critics(), self.critic_optims, strict=True):
            # the trained steps only: the last position is a successor, valued by the targets
            critic_features = critic.features(trained[:, :-1], states[name], sequence=True)[0]
            q = critic.value(critic_features, act)
            loss = masked_mean((q - target).pow(2), valid)
            critic_losses.append(optim.step_with_loss_values(loss)[0])
            features.append(critic_features.detach())
        q_new = torch.min(
            *[
                critic.value(f, act_new[:, :-1])
                for (_, critic), f in zip(policy._named_critics(), features, strict=True)
            ]
        )
        actor_loss = masked_mean(alpha * log_prob[:, :-1] - q_new, valid)
        (actor_value,) = self.actor_optim.step_with_loss_values(actor_loss)
        entropy = -log_prob[:, :-1].detach()[valid]
        if len(entropy):  # sequences sampled right after episode starts may hold no real step
            self.alpha._loss(entropy)
        self._update_lagged_network_weights()
        return RecurrentSACTrainingStats(
            actor_loss=actor_value,
            critic1_loss=critic_losses[0],
            critic2_loss=critic_losses[1],
            alpha=self.alpha.value,
        )
