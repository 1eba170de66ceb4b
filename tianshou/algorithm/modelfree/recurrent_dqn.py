"""Recurrent DQN in the manner of R2D2: stored states, sequence replay, burn-in, n-step targets.

While collecting, :class:`RecurrentQLearningPolicy` stores the hidden state every step started
from (``policy.state_in``). An update samples ``batch_size`` start positions, follows each for
``burn_in + train_len`` steps of its episode (:mod:`tianshou.data.buffer.sequence`), and runs the
Q-network over the sequence from the state stored at its first step. The first ``burn_in`` steps
only refresh that (stale) state, without gradient; the loss covers the remaining steps, each
regressed onto its n-step target. Targets bootstrap from the target network run over the same
sequence, so every value depends on the history as it did when acting. Padding after an
episode's end is excluded from every target and from the loss.
"""

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tianshou.algorithm._lagged_mixins import LaggedNetworkFullUpdateAlgorithmMixin
from tianshou.algorithm._sequences import masked_mean, replay_sequences, successors_extended
from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, PolicyState
from tianshou.algorithm.modelfree._stored_state import numpy_state
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.spaces.masks import mask_q_values, network_input
from tianshou.utils.torch_utils import torch_device


class RecurrentQLearningPolicy(DiscreteQLearningPolicy):
    """Epsilon-greedy on a recurrent Q-network, storing the state each step started from.

    :param model: a recurrent Q-network with ``initial_state(batch_size)``, e.g.
        :class:`~tianshou.utils.net.recurrent.RecurrentQNet`.
    :param action_space: the environment's ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    :param eps_training: probability of a random action inside training steps.
    :param eps_inference: probability of a random action outside training steps.
    """

    def __init__(
        self,
        *,
        model: nn.Module,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        eps_training: float = 0.0,
        eps_inference: float = 0.0,
    ) -> None:
        if not callable(getattr(model, "initial_state", None)):
            raise TypeError(
                "the model must be a recurrent network with initial_state(batch_size), e.g. "
                f"tianshou.utils.net.recurrent.RecurrentQNet; got {type(model).__name__}"
            )
        super().__init__(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            eps_training=eps_training,
            eps_inference=eps_inference,
        )

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> Batch:
        """Greedy actions for one step; also ``policy.state_in``, the state the step began in.

        A masked observation (the network input ``obs`` and a boolean ``mask``) restricts the
        greedy and the random actions to the legal ones.
        """
        obs = network_input(batch.obs)
        initial: Any = state
        if initial is None:
            initial = self.model.initial_state(len(obs))  # type: ignore[operator]
        result = super().forward(batch, initial, model)
        result.policy = batch_of_parsed_values({"state_in": numpy_state(initial)})
        return result


class RecurrentDQN(
    OffPolicyAlgorithm[RecurrentQLearningPolicy], LaggedNetworkFullUpdateAlgorithmMixin
):
    """R2D2-style recurrent DQN: double Q-learning on replayed sequences with burn-in.

    The trainer's ``batch_size`` is the number of sequences per update; each sequence has
    ``burn_in + train_len`` steps, of which ``train_len`` enter the loss.

    :param policy: a :class:`RecurrentQLearningPolicy`.
    :param optim: the factory of the Q-network's optimizer.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: rewards summed before bootstrapping (cut at episode ends
        and at the end of the sequence).
    :param target_update_freq: copy the Q-network into the target network every this many
        updates (must be positive: R2D2 always uses a target network).
    :param burn_in: steps at the start of each sequence that only refresh the stored state.
    :param train_len: steps per sequence that are trained on.
    :param huber_loss_delta: Huber loss threshold; None for the squared TD error.
    :param priority_eta: with a :class:`~tianshou.data.PrioritizedReplayBuffer`, a sequence's
        new priority is ``eta * max + (1 - eta) * mean`` of the absolute TD errors of its
        trained steps (R2D2 uses 0.9: the mean alone would dilute one surprising step), set
        on its first step, whose importance weight scales the sequence's loss.
    """

    _checkpointed_counters = ("_iter",)  # when the next target copy is due

    def __init__(
        self,
        *,
        policy: RecurrentQLearningPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 100,
        burn_in: int = 4,
        train_len: int = 8,
        huber_loss_delta: float | None = None,
        priority_eta: float = 0.9,
    ) -> None:
        if not isinstance(policy, RecurrentQLearningPolicy):
            raise TypeError(f"RecurrentDQN needs a RecurrentQLearningPolicy, got {policy!r}")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if not 0.0 <= priority_eta <= 1.0:
            raise ValueError(f"priority_eta must be in [0, 1], got {priority_eta}")
        for name, value, low in (
            ("n_step_return_horizon", n_step_return_horizon, 1),
            ("target_update_freq", target_update_freq, 1),
            ("burn_in", burn_in, 0),
            ("train_len", train_len, 1),
        ):
            if value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value}")
        super().__init__(policy=policy)
        LaggedNetworkFullUpdateAlgorithmMixin.__init__(self)
        self.optim = self._create_optimizer(self.policy, optim)
        self.gamma = gamma
        self.n_step_return_horizon = n_step_return_horizon
        self.target_update_freq = target_update_freq
        self.burn_in = burn_in
        self.train_len = train_len
        self.huber_loss_delta = huber_loss_delta
        self.priority_eta = priority_eta
        self.model_old = self._add_lagged_network(self.policy.model)
        self._iter = 0

    @property
    def seq_len(self) -> int:
        """Steps per sampled sequence: ``burn_in + train_len``."""
        return self.burn_in + self.train_len

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Replace the sampled transitions by the sequences that start at them (with their
        importance weights, from a prioritized buffer)."""
        device = torch_device(self.policy)
        sequences = replay_sequences(
            buffer, indices, self.seq_len, torch.long, device, prioritized=True
        )
        if isinstance(buffer, PrioritizedReplayBuffer):
            sequences.weight = torch.as_tensor(batch.weight, device=device, dtype=torch.float32)
        return sequences

    def _update_with_batch(self, batch: Batch) -> SimpleLossTrainingStats:
        """One gradient step on the TD errors of the sequences' steps after the burn-in."""
        if self._iter % self.target_update_freq == 0:
            self._update_lagged_network_weights()
        self._iter += 1
        # observations o_0 .. o_{T-1} then the last next observation: one pass values every
        # step and every successor (within an episode obs_next[t] == obs[t + 1])
        extended = successors_extended(batch.obs, batch.obs_next)
        state = dict(batch.state.items())
        burn = self.burn_in
        model = self.policy.model
        with torch.no_grad():
            target_q, _ = self.model_old(extended, state, sequence=True)
            if burn > 0:
                _, state = model(extended[:, :burn], state, sequence=True)
        online_q, _ = model(extended[:, burn:], state, sequence=True)
        q_taken = online_q[:, :-1].gather(-1, batch.act[:, burn:, None]).squeeze(-1)
        with torch.no_grad():
            next_act = self._greedy_successor_actions(batch, online_q[:, 1:])
            next_value = target_q[:, burn + 1 :].gather(-1, next_act).squeeze(-1)
            targets = self._n_step_targets(batch, next_value)
        trained = batch.valid[:, burn:]
        if self.huber_loss_delta is None:
            errors = (targets - q_taken).pow(2)
        else:
            errors = F.huber_loss(q_taken, targets, reduction="none", delta=self.huber_loss_delta)
        weight = batch.get("weight")
        if weight is not None:
            errors = errors * weight[:, None]
        loss = masked_mean(errors, trained)
        (loss_value,) = self.optim.step_with_loss_values(loss)
        if weight is not None:  # the new priorities, which _postprocess_batch feeds back
            batch.weight = self._sequence_priorities((targets - q_taken).detach().abs(), trained)
        return SimpleLossTrainingStats(loss=loss_value)

    def _sequence_priorities(self, td_abs: torch.Tensor, trained: torch.Tensor) -> torch.Tensor:
        """``eta * max + (1 - eta) * mean`` of each sequence's absolute TD errors over its
        trained steps (0 for a sequence without any)."""
        weights = trained.to(td_abs.dtype)
        count = weights.sum(dim=1)
        mean = (td_abs * weights).sum(dim=1) / count.clamp_min(1.0)
        largest = (td_abs * weights).amax(dim=1)
        return self.priority_eta * largest + (1.0 - self.priority_eta) * mean

    def _greedy_successor_actions(self, batch: Batch, next_q: torch.Tensor) -> torch.Tensor:
        """The online network's greedy legal action ``(B, train_len, 1)`` in every trained
        step's successor. A successor that allows no action (a game's end) takes action 0,
        whose value the target discards as that of a terminal state."""
        if "mask_next" not in batch:
            return next_q.argmax(-1, keepdim=True)
        legal = batch.mask_next[:, self.burn_in :]
        legal = legal | ~legal.any(dim=-1, keepdim=True)
        return mask_q_values(next_q, legal).argmax(-1, keepdim=True)

    def _n_step_targets(self, batch: Batch, next_value: torch.Tensor) -> torch.Tensor:
        """n-step targets of the trained steps, ``(B, train_len)``.

        :param next_value: the bootstrap value of each trained step's successor state.
        """
        burn, length = self.burn_in, self.train_len
        rew, valid = batch.rew[:, burn:], batch.valid[:, burn:]
        done, terminated = batch.done[:, burn:], batch.terminated[:, burn:]
        returns = torch.zeros_like(rew)
        bootstrap = torch.zeros_like(rew)
        alive = valid.clone()
        discount = 1.0
        steps = torch.arange(length, device=rew.device)
        for k in range(self.n_step_return_horizon):
            ahead = (steps + k).clamp(max=length - 1)
            included = alive & (steps + k < length) & valid[:, ahead]
            returns = returns + discount * rew[:, ahead] * included
            ends_here = done[:, ahead] | (steps + k + 1 >= length)
            if k + 1 < length:
                beyond = (steps + k + 1).clamp(max=length - 1)
                ends_here = ends_here | ~valid[:, beyond]
            if k == self.n_step_return_horizon - 1:
                ends_here = torch.ones_like(ends_here)
            last = included & ends_here
            value = discount * self.gamma * next_value[:, ahead] * ~terminated[:, ahead]
            bootstrap = torch.where(last, value, bootstrap)
            alive = included & ~done[:, ahead]
            discount *= self.gamma
        return returns + bootstrap
