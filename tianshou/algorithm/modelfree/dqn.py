"""Deep Q-learning: an epsilon-greedy policy over a Q-network and the DQN update.

``DiscreteQLearningPolicy`` acts greedily with respect to the Q-values a model outputs (with
optional epsilon-greedy exploration and action masks). ``QLearningOffPolicyAlgorithm`` holds what
all Q-learning algorithms share: the optimizer, n-step targets and the periodically copied target
network. ``DQN`` adds the squared (or Huber) TD loss with optional double Q-learning.
"""

from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from gymnasium.spaces import Discrete
from torch import nn

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import (
    Algorithm,
    LaggedNetworkFullUpdateAlgorithmMixin,
    OffPolicyAlgorithm,
    Policy,
    PolicyState,
)
from tianshou.algorithm.compiled_update import is_array
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import (
    Mask,
    mask_q_values,
    policy_input,
    random_legal_actions,
    unmask_dead_ends,
)


def _check_eps(name: str, eps: float) -> float:
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {eps}")
    return float(eps)


class DiscreteQLearningPolicy(Policy):
    """Acts with the arg-max of a model's Q-values, exploring epsilon-greedily.

    The model is called as ``model(obs, state=state, info=info)`` and must return
    ``(q_values, hidden_state)`` with ``q_values`` of shape ``(B, n_actions)``; a ``Net`` with
    ``action_shape=n_actions`` does exactly that. Observations that are a Batch with keys
    ``obs`` and ``mask`` (as multi-agent and board-game environments produce) feed ``obs`` to
    the model; actions whose ``mask`` entry is false are never chosen, neither greedily nor by
    random exploration.

    :param model: the Q-network.
    :param action_space: the environment's ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    :param eps_training: probability of a uniformly random (legal) action while collecting
        training data (inside a training step).
    :param eps_inference: the same probability outside training steps, e.g. in a test
        collector created with ``exploration_noise=True``.
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
        if not isinstance(action_space, Discrete):
            raise ValueError(
                f"DiscreteQLearningPolicy needs a Discrete action space, got {action_space}"
            )
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.model = model
        self.eps_training = _check_eps("eps_training", eps_training)
        self.eps_inference = _check_eps("eps_inference", eps_inference)
        self._num_actions = int(action_space.n)

    def set_eps_training(self, eps: float) -> None:
        """Set the exploration probability used inside training steps."""
        self.eps_training = _check_eps("eps_training", eps)

    def set_eps_inference(self, eps: float) -> None:
        """Set the exploration probability used outside training steps."""
        self.eps_inference = _check_eps("eps_inference", eps)

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> Batch:
        """Greedy actions for ``batch.obs``.

        :param model: the network to evaluate instead of ``self.model`` (the algorithm passes
            its target network here).
        :return: a Batch with ``logits`` (the model's raw output, unmasked), ``act`` (the
            arg-max of the Q-values over legal actions, a numpy int array) and ``state`` (the
            model's next hidden state).
        """
        logits, q_values, hidden = self.evaluate(batch, state, model)
        act = q_values.argmax(dim=1)
        return batch_of_parsed_values({"logits": logits, "act": to_numpy(act), "state": hidden})

    def compute_q_value(self, logits: torch.Tensor, mask: Mask | None) -> torch.Tensor:
        """The Q-values ``(B, n_actions)`` to act on, from the model's raw output.

        Illegal actions (``mask`` false) get ``-inf``, so the arg-max never selects them.
        Subclasses with other outputs (e.g. return distributions) reduce them to Q-values here.

        :param logits: the model's output.
        :param mask: legal-action mask ``(B, n_actions)``, or None when every action is legal.
        """
        return mask_q_values(logits, mask)

    def evaluate(
        self, batch: Batch, state: PolicyState = None, model: nn.Module | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, PolicyState]:
        """Run the model: ``(raw output, masked Q-values (B, n_actions), next hidden state)``.

        :raises TypeError: if the model does not return an ``(output, state)`` pair.
        :raises ValueError: if the Q-values do not have one column per action.
        """
        logits, hidden, mask = self._model_output(batch, state, model)
        q_values = self.compute_q_value(logits, mask)
        if q_values.ndim != 2 or q_values.shape[1] != self._num_actions:
            raise ValueError(
                f"the Q-network outputs Q-values of shape {tuple(q_values.shape)}, but the "
                f"action space {self.action_space} needs (batch_size, {self._num_actions}); "
                "check the network's action_shape"
            )
        return logits, q_values, hidden

    def _model_output(
        self, batch: Batch, state: PolicyState = None, model: nn.Module | None = None
    ) -> tuple[torch.Tensor, PolicyState, Mask | None]:
        """Run the model on ``batch.obs``: ``(raw output, next hidden state, legal-action mask)``.

        The first step of :meth:`evaluate`, for callers that need only the raw output (a target
        network's distribution), so no Q-values are reduced from it.

        :raises TypeError: if the model does not return an ``(output, state)`` pair.
        :raises ValueError: if an observation's mask allows no action.
        """
        obs, mask = q_network_input(batch)
        output = (model or self.model)(obs, state=state, info=batch.get("info"))
        if not isinstance(output, tuple) or len(output) != 2:
            raise TypeError(
                "the Q-network must return a pair (q_values, hidden_state), got "
                f"{type(output).__name__}"
            )
        logits, hidden = output
        return logits, hidden, mask

    def add_exploration_noise(self, act: np.ndarray | Batch, batch: Batch) -> np.ndarray | Batch:
        """Replace each action by a uniformly random legal action with probability epsilon.

        Epsilon is ``eps_training`` inside a training step and ``eps_inference`` otherwise.
        """
        eps = self.eps_training if self.is_within_training_step else self.eps_inference
        if eps == 0.0:
            return act
        if isinstance(act, torch.Tensor):
            act = act.detach().cpu().numpy()
        if not isinstance(act, np.ndarray):
            raise TypeError(f"epsilon-greedy exploration needs a numpy action array, got {act!r}")
        num = len(act)
        explore = np.random.rand(num) < eps
        if not explore.any():
            return act
        legal = legal_actions_of(batch, (num, self._num_actions))
        act = act.copy()
        act[explore] = random_legal_actions(legal[explore])
        return act


_BATCH_ROWS: dict[tuple[int, torch.device], torch.Tensor] = {}


def batch_rows(length: int, device: torch.device) -> torch.Tensor:
    """``torch.arange(length)`` on ``device``, cached: the row index that picks one entry per
    sample (``values[batch_rows(B, device), act]``) is the same for every update of a given
    batch size, so it is built once instead of once per call. Treat it as read-only."""
    rows = _BATCH_ROWS.get((length, device))
    if rows is None:
        rows = _BATCH_ROWS[(length, device)] = torch.arange(length, device=device)
    return rows


def q_network_input(batch: Batch) -> tuple[Any, Mask | None]:
    """``(network input, checked mask)`` of ``batch.obs`` for a Q-network.

    As in the published library, a Batch observation with an ``obs`` entry feeds that entry to
    the network even without a mask.
    """
    obs, mask = policy_input(batch)
    if mask is None and isinstance(obs, Batch) and "obs" in obs.__dict__:
        obs = obs.obs
    return obs, mask


def legal_actions_of(batch: Batch, shape: tuple[int, ...]) -> np.ndarray:
    """The boolean legal-action mask of ``batch.obs`` as a numpy array of ``shape`` (all true
    when there is no mask), for random exploration.

    :raises ValueError: if the mask does not have ``shape`` or leaves a row without an action.
    """
    _, mask = policy_input(batch)
    if mask is None:
        return np.ones(shape, dtype=bool)
    legal = np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask, dtype=bool)
    if legal.shape != shape:
        raise ValueError(
            f"the legal-action mask has shape {legal.shape}, but exploration needs {shape}"
        )
    return legal


TDQNPolicy = TypeVar("TDQNPolicy", bound=DiscreteQLearningPolicy)


class QLearningOffPolicyAlgorithm(
    OffPolicyAlgorithm[TDQNPolicy], LaggedNetworkFullUpdateAlgorithmMixin, Generic[TDQNPolicy], ABC
):
    """Base of the Q-learning algorithms: one optimizer, n-step targets, a lagged target network.

    :param policy: the Q-learning policy whose ``model`` is trained.
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping (n-step TD).
    :param target_update_freq: copy the model into the target network every this many updates;
        0 uses no target network (the model bootstraps from itself).
    """

    _checkpointed_counters = ("_iter",)  # when the next target copy is due

    def __init__(
        self,
        *,
        policy: TDQNPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        if n_step_return_horizon < 1:
            raise ValueError(
                f"n_step_return_horizon must be a positive int, got {n_step_return_horizon}"
            )
        if target_update_freq < 0:
            raise ValueError(f"target_update_freq must be >= 0, got {target_update_freq}")
        super().__init__(policy=policy)
        LaggedNetworkFullUpdateAlgorithmMixin.__init__(self)
        self.optim = self._create_policy_optimizer(optim)
        self.gamma = gamma
        self.n_step_return_horizon = n_step_return_horizon
        self.target_update_freq = target_update_freq
        self._iter = 0
        self.model_old: nn.Module | None = (
            self._add_lagged_network(self.policy.model) if target_update_freq > 0 else None
        )

    def _create_policy_optimizer(self, optim: OptimizerFactory) -> Algorithm.Optimizer:
        """The optimizer of the whole policy (subclasses may train more modules with it)."""
        return self._create_optimizer(self.policy, optim)

    @property
    def use_target_network(self) -> bool:
        """Whether targets come from a periodically copied network (``target_update_freq > 0``)."""
        return self.target_update_freq > 0

    def _periodically_update_lagged_network_weights(self) -> None:
        """Copy the model into the target network on every ``target_update_freq``-th update."""
        if self.use_target_network and self._iter % self.target_update_freq == 0:
            self._update_lagged_network_weights()
        self._iter += 1

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Attach the n-step bootstrapped targets ``batch.returns``."""
        sampled_obs_next = batch.obs_next

        def target_q(buf: ReplayBuffer, target_indices: np.ndarray) -> torch.Tensor:
            # with one step the bootstrap rows are the sampled rows: reuse their obs_next
            same_rows = target_indices is indices
            obs_next = sampled_obs_next if same_rows else buf._obs_next_at(target_indices)
            # compute_nstep_return: no_grad
            return self._target_q_compute_value(unmask_dead_ends(obs_next))

        return self.compute_nstep_return(
            batch,
            buffer,
            indices,
            target_q,
            gamma=self.gamma,
            n_step=self.n_step_return_horizon,
        )

    @abstractmethod
    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """The bootstrap value of each next observation, shape ``(B,)``; the max (or arg-max)
        over next actions must range over the legal actions of ``obs_next.mask``."""


class DQN(QLearningOffPolicyAlgorithm[TDQNPolicy], Generic[TDQNPolicy]):
    """Deep Q-Network: regress Q(s, a) onto n-step bootstrapped targets.

    :param policy: the Q-learning policy whose ``model`` is trained.
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the model into the target network every this many updates
        (0: no target network).
    :param is_double: double Q-learning: the online model picks the next action and the target
        network values it, which reduces the over-estimation of plain max-Q targets.
    :param huber_loss_delta: use the Huber loss with this threshold instead of the squared TD
        error, which bounds the gradient of large errors; None keeps the squared error.

    Its update can run compiled (:meth:`~tianshou.algorithm.Algorithm.compile_update`).
    """

    _supports_compiled_update = True

    def __init__(
        self,
        *,
        policy: TDQNPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
        is_double: bool = True,
        huber_loss_delta: float | None = None,
    ) -> None:
        if huber_loss_delta is not None and huber_loss_delta <= 0:
            raise ValueError(f"huber_loss_delta must be positive or None, got {huber_loss_delta}")
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )
        self.is_double = is_double
        self.huber_loss_delta = huber_loss_delta

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """Value of the next action: the max Q-value, or (double) the target network's value
        of the online model's greedy action. Illegal actions (``mask``) are never selected."""
        compiler = self._update_compiler
        if compiler is not None and is_array(obs_next):
            obs = torch.as_tensor(obs_next, device=compiler.device)
            return compiler("target", self._compiled_target_value, obs)
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        if self.model_old is None:
            values, q_values, _ = self.policy.evaluate(obs_batch)
        else:
            values, q_values, _ = self.policy.evaluate(obs_batch, model=self.model_old)
            if self.is_double:
                q_values = self.policy.evaluate(obs_batch)[1]
        next_act = q_values.argmax(dim=1, keepdim=True)
        return values.gather(1, next_act).squeeze(1)

    def _compiled_target_value(self, obs_next: torch.Tensor) -> torch.Tensor:
        """The compiled :meth:`_target_q_compute_value` of tensor observations (no mask)."""
        model = self.policy.model if self.model_old is None else self.model_old
        values, _ = model(obs_next, state=None, info=None)
        q_values = self.policy.compute_q_value(values, None)
        if self.model_old is not None and self.is_double:
            online, _ = self.policy.model(obs_next, state=None, info=None)
            q_values = self.policy.compute_q_value(online, None)
        return values.gather(1, q_values.argmax(dim=1, keepdim=True)).squeeze(1)

    def _update_with_batch(self, batch: Batch) -> SimpleLossTrainingStats:
        """One gradient step on the (importance-weighted) TD loss; stores the TD errors in
        ``batch.weight`` so a prioritized buffer can update its priorities."""
        self._periodically_update_lagged_network_weights()
        weight = batch.__dict__.get("weight")
        compiler = self._update_compiler if is_array(batch.obs) else None
        if compiler is None:
            values = self.policy.evaluate(batch)[0]
            loss, td_error = self._td_loss(values, batch.act, batch.returns, weight)
        else:
            device = batch.returns.device
            loss, td_error = compiler(
                "td_loss",
                self._compiled_td_loss,
                torch.as_tensor(batch.obs, device=device),
                torch.as_tensor(batch.act, device=device, dtype=torch.long),
                batch.returns,
                None if weight is None else torch.as_tensor(weight, device=device),
            )
        (loss_value,) = self.optim.step_with_loss_values(loss)
        batch.weight = td_error.detach()
        return SimpleLossTrainingStats(loss=loss_value)

    def _td_loss(
        self,
        values: torch.Tensor,
        act: Any,
        returns: torch.Tensor,
        weight: np.ndarray | torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss, td_error)``: the mean (importance-weighted) squared or Huber TD error of the
        taken actions' Q-values ``values[act]`` against ``returns``."""
        act = torch.as_tensor(act, device=values.device, dtype=torch.long)
        q = values.gather(1, act.reshape(-1, 1)).squeeze(1)
        returns = returns.reshape(-1).to(q.dtype)
        td_error = returns - q
        if self.huber_loss_delta is None:
            per_sample = td_error.pow(2)
        else:
            per_sample = F.huber_loss(q, returns, reduction="none", delta=self.huber_loss_delta)
        if weight is not None:
            per_sample = per_sample * torch.as_tensor(weight, device=q.device, dtype=q.dtype)
        return per_sample.mean(), td_error

    def _compiled_td_loss(
        self,
        obs: torch.Tensor,
        act: torch.Tensor,
        returns: torch.Tensor,
        weight: torch.Tensor | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The compiled step: :meth:`_td_loss` of the model's Q-values for tensor ``obs``."""
        values, _ = self.policy.model(obs, state=None, info=None)
        return self._td_loss(values, act, returns, weight)
