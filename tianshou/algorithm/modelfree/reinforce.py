"""Stochastic actor policies and REINFORCE, the Monte-Carlo policy-gradient algorithm.

``ProbabilisticActorPolicy`` turns an actor network's output into a torch distribution and
samples actions from it; the on-policy actor-critic algorithms (A2C, PPO) reuse it. The update
loops share their helpers (minibatches, the finite-loss guard) through
:mod:`tianshou.algorithm._update_helpers`.
"""

import warnings
from collections.abc import Callable
from typing import Any, TypeAlias

import gymnasium as gym
import numpy as np
import torch
from gymnasium.spaces import Box, Discrete
from torch import nn
from torch.distributions import Categorical, Distribution

from tianshou.algorithm._training_stats import LossSequenceTrainingStats, SimpleLossTrainingStats
from tianshou.algorithm._update_helpers import (
    action_tensor,
    iterate_minibatches,
    per_sample,
    training_view,
)
from tianshou.algorithm.algorithm_base import (
    ActionBoundMethod,
    Algorithm,
    OnPolicyAlgorithm,
    Policy,
    PolicyState,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.stats import SequenceSummaryStats
from tianshou.spaces.masks import masked_categorical, policy_input
from tianshou.spaces.product_distributions import (
    ActionLayout,
    ProductDistribution,
    is_structured_action_space,
    product_dist_fn,
)
from tianshou.utils.net.discrete import dist_fn_categorical_from_logits
from tianshou.utils.statistics import RunningMeanStd
from tianshou.utils.torch_utils import torch_device

TDistFnContinuous: TypeAlias = Callable[[tuple[torch.Tensor, torch.Tensor]], Distribution]
"""Builds a continuous action distribution from the actor's ``(mu, sigma)`` output, e.g.
``lambda loc_scale: Independent(Normal(*loc_scale), 1)``."""

TDistFnDiscrete: TypeAlias = Callable[[torch.Tensor], Distribution]
"""Builds a discrete action distribution from the actor's ``(B, n)`` output, e.g.
``torch.distributions.Categorical`` (probabilities) or ``lambda l: Categorical(logits=l)``."""

TDistFnDiscrOrCont: TypeAlias = TDistFnContinuous | TDistFnDiscrete
"""Either kind of distribution builder; what :class:`ProbabilisticActorPolicy` accepts."""


class ProbabilisticActorPolicy(Policy):
    """A policy that samples its actions from a distribution parameterised by an actor network.

    Observations that carry a legal-action mask (``Batch(obs=..., mask=...)``, see
    :mod:`tianshou.spaces.masks`) feed ``obs`` to the actor, and the (categorical)
    distribution is restricted to the legal actions: illegal actions have probability 0, and
    log-probabilities, entropies and KL divergences are those of the renormalised distribution
    over the legal actions.

    Structured action spaces (``MultiDiscrete``, ``MultiBinary``, ``Tuple``, ``Dict``) take
    ``dist_fn=product_dist_fn(action_space)``: the actor outputs one flat vector of
    ``actor_output_dim(action_space)`` parameters, the policy splits it into one distribution
    per part (see :mod:`tianshou.spaces.product_distributions`) and stores each action as one
    flat row; :meth:`map_action` turns rows into the tuples or dicts of ``Tuple``/``Dict`` spaces,
    with ``Box`` parts clipped to their bounds.

    :param actor: a module called as ``actor(obs, state=..., info=...)`` that returns
        ``(dist_input, hidden_state)``; ``dist_input`` is whatever ``dist_fn`` accepts, e.g.
        class probabilities ``(B, n)`` or a ``(mu, sigma)`` tuple for continuous actions.
    :param dist_fn: builds the action distribution from ``dist_input``, e.g.
        ``torch.distributions.Categorical`` (from probabilities) or
        ``lambda loc_scale: Independent(Normal(*loc_scale), 1)``.
    :param deterministic_eval: outside training steps, act with the distribution's mode
        (arg-max / mean) instead of sampling, which usually evaluates a policy more fairly.
    :param action_space: the environment's action space.
    :param observation_space: the environment's observation space.
    :param action_scaling: rescale raw actions from [-1, 1] to the ``Box`` bounds.
    :param action_bound_method: ``"clip"``, ``"tanh"`` or None; how raw continuous actions are
        brought into [-1, 1] before they are sent to the environment.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        dist_fn: TDistFnDiscrOrCont,
        deterministic_eval: bool = False,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = True,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        if not callable(dist_fn):
            raise TypeError(f"dist_fn must be callable, got {type(dist_fn).__name__}")
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling and isinstance(action_space, Box),
            action_bound_method=action_bound_method,
        )
        self.actor = actor
        self.dist_fn = dist_fn
        self.deterministic_eval = deterministic_eval
        self._action_shape: tuple[int, ...] = tuple(action_space.shape or ())
        self._num_classes = action_space.n if isinstance(action_space, Discrete) else None
        self._action_layout: ActionLayout | None = None
        """How flat action rows map to the tuples/dicts of a ``Tuple``/``Dict`` action space."""
        if isinstance(action_space, gym.spaces.Tuple | gym.spaces.Dict):
            self._action_layout = ActionLayout(action_space)
            self._action_shape = (self._action_layout.action_width,)

    def _action_type_of(self, action_space: gym.Space) -> str:
        if isinstance(action_space, gym.spaces.Tuple | gym.spaces.Dict):
            return "discrete" if ActionLayout(action_space).is_discrete else "continuous"
        return super()._action_type_of(action_space)

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """Sample actions (or take the mode, see ``deterministic_eval``) for ``batch.obs``.

        :return: a Batch with ``logits`` (the actor's raw output), ``act``, ``state`` (the
            actor's next hidden state) and ``dist`` (the action distribution, restricted to
            the legal actions when the observations carry a mask).
        :raises ValueError: if an observation's mask allows no action.
        """
        dist, dist_input, hidden = self._distribution(batch, state)
        if self.deterministic_eval and not self.is_within_training_step:
            act = dist.mode
        else:
            act = dist.sample()
        if self._action_layout is not None and not isinstance(dist, ProductDistribution):
            raise ValueError(
                f"the action space {self.action_space} needs a product distribution, but "
                f"dist_fn built a {type(dist).__name__}; pass "
                "dist_fn=product_dist_fn(action_space) from tianshou.spaces.product_distributions"
            )
        self._check_action_shape(act, dist, len(batch.obs))
        return batch_of_parsed_values(
            {"logits": dist_input, "act": act, "state": hidden, "dist": dist}
        )

    def _distribution(self, batch: Batch, state: PolicyState) -> tuple[Distribution, Any, Any]:
        """``(dist, dist_input, hidden_state)`` of the actor at ``batch.obs``, masked if it
        carries a legal-action mask."""
        obs, mask = policy_input(batch)
        output = self.actor(obs, state=state, info=batch.get("info"))
        if not isinstance(output, tuple) or len(output) != 2:
            raise TypeError(
                "the actor must return a pair (dist_input, hidden_state), got "
                f"{type(output).__name__}"
            )
        dist_input, hidden = output
        return masked_categorical(self.dist_fn(dist_input), mask), dist_input, hidden

    def _update_dist(self, batch: Batch) -> Distribution:
        """``self(batch).dist``, the distribution a gradient step differentiates.

        Unless a subclass overrides :meth:`forward` or hooks are registered on the policy, no
        action is drawn and no output Batch is built: the update only needs the
        distribution, and sampling an action per minibatch was ~5% of a PPO update.
        """
        if (
            type(self).forward is not ProbabilisticActorPolicy.forward
            or self._forward_hooks
            or self._forward_pre_hooks
        ):
            return self(batch).dist
        return self._distribution(batch, None)[0]

    def map_action(self, act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
        """Raw actions as the env takes them; for ``Tuple``/``Dict`` action spaces the flat
        rows become tuples/dicts (an object array; a single tuple/dict for one unbatched row),
        ``Box`` parts clipped to their bounds."""
        mapped = super().map_action(act)
        layout = self._action_layout
        if layout is None or not isinstance(mapped, np.ndarray):
            return mapped
        if mapped.ndim == 1:  # one unbatched action (compute_action)
            return layout.to_env_actions(mapped[None])[0]
        return layout.to_env_actions(mapped)

    def map_action_inverse(self, act: np.ndarray | Batch | torch.Tensor) -> np.ndarray | Batch:
        """Invert :meth:`map_action`: env actions (tuples/dicts of ``Tuple``/``Dict`` spaces)
        back to flat rows."""
        layout = self._action_layout
        if layout is not None and not isinstance(act, Batch):
            return layout.from_env_actions(act)
        return super().map_action_inverse(act)

    def _check_action_shape(self, act: torch.Tensor, dist: Distribution, num_obs: int) -> None:
        """Fail early, naming the shapes, when the actor does not fit the action space."""
        if act.shape[0] != num_obs or tuple(act.shape[1:]) != self._action_shape:
            raise ValueError(
                f"the actor's distribution yields actions of shape {tuple(act.shape)} for "
                f"{num_obs} observations, but the action space {self.action_space} needs "
                f"{(num_obs, *self._action_shape)}; check the actor's output layer"
            )
        if self._num_classes is not None and isinstance(dist, Categorical):
            num_categories = dist.param_shape[-1]
            if num_categories != self._num_classes:
                raise ValueError(
                    f"the actor outputs {num_categories} action probabilities (or logits), but "
                    f"the action space {self.action_space} has {self._num_classes} actions"
                )


class DiscreteActorPolicy(ProbabilisticActorPolicy):
    """A :class:`ProbabilisticActorPolicy` for discrete actions (no action scaling or bounding).

    :param actor: returns ``(logits, hidden_state)``, e.g. a ``DiscreteActor`` built with
        ``softmax_output=False`` (or probabilities, with a matching ``dist_fn``).
    :param dist_fn: builds the distribution from the actor's output; the default,
        :func:`~tianshou.utils.net.discrete.dist_fn_categorical_from_logits`, reads it as
        logits. Pass ``torch.distributions.Categorical`` for an actor that outputs
        probabilities, such as a ``DiscreteActor`` with its default ``softmax_output=True``
        (reading probabilities as logits flattens the distribution, so that pairing warns).
        For ``MultiDiscrete``, ``MultiBinary`` and all-discrete ``Tuple``/``Dict`` spaces
        the default becomes
        :func:`~tianshou.spaces.product_distributions.product_dist_fn`, which reads the actor's
        ``actor_output_dim(action_space)`` logits as one categorical (or Bernoulli) per part.
    :param deterministic_eval: outside training steps, act with the most probable action.
    :param action_space: the environment's discrete action space.
    :param observation_space: the environment's observation space.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        dist_fn: TDistFnDiscrete = dist_fn_categorical_from_logits,
        deterministic_eval: bool = False,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
    ) -> None:
        if isinstance(action_space, Box):
            raise ValueError(
                f"DiscreteActorPolicy needs a discrete action space, got {action_space}; "
                "use ProbabilisticActorPolicy for continuous actions"
            )
        composite = isinstance(action_space, gym.spaces.Tuple | gym.spaces.Dict)
        if composite and not ActionLayout(action_space).is_discrete:
            raise ValueError(
                f"DiscreteActorPolicy needs a discrete action space, got {action_space} "
                "with a Box part; use ProbabilisticActorPolicy with "
                "dist_fn=product_dist_fn(action_space) (tianshou.spaces.product_distributions) "
                "for hybrid actions"
            )
        if dist_fn is dist_fn_categorical_from_logits and is_structured_action_space(action_space):
            if getattr(actor, "softmax_output", False):
                raise ValueError(
                    f"the action space {action_space} is read as one distribution per part "
                    "from logits, but the actor outputs probabilities over all its outputs "
                    "(softmax_output=True); build the actor with softmax_output=False"
                )
            dist_fn = product_dist_fn(action_space)
        if dist_fn is dist_fn_categorical_from_logits and getattr(actor, "softmax_output", False):
            warnings.warn(
                "the actor outputs probabilities (softmax_output=True) but dist_fn reads logits; "
                "pass dist_fn=torch.distributions.Categorical or build the actor with "
                "softmax_output=False",
                stacklevel=2,
            )
        super().__init__(
            actor=actor,
            dist_fn=dist_fn,
            deterministic_eval=deterministic_eval,
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )


class DiscountedReturnComputation:
    """Adds Monte-Carlo discounted returns (optionally standardised) to a batch.

    :param gamma: discount factor in [0, 1].
    :param return_standardization: divide the returns by a running estimate of their
        standard deviation (after subtracting its running mean), which stabilises the scale of
        the policy gradient across training.
    """

    def __init__(self, gamma: float = 0.99, return_standardization: bool = False) -> None:
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1], got {gamma}")
        self.gamma = gamma
        self.return_standardization = return_standardization
        self.ret_rms = RunningMeanStd()
        self.eps = 1e-8

    def add_discounted_returns(
        self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray
    ) -> Batch:
        """Set ``batch.returns`` to the discounted return-to-go of every transition.

        Unfinished or truncated episodes are completed with the running mean of the returns
        (zero without standardisation), the only value estimate REINFORCE has.
        """
        v_s_ = np.full(indices.shape, self.ret_rms.mean, dtype=np.float64)
        returns, _ = Algorithm.compute_episodic_return(
            batch, buffer, indices, v_s_=v_s_, gamma=self.gamma, gae_lambda=1.0
        )
        if self.return_standardization:
            batch.returns = (returns - self.ret_rms.mean) / np.sqrt(self.ret_rms.var + self.eps)
            self.ret_rms.update(returns)
        else:
            batch.returns = returns
        return batch


class Reinforce(OnPolicyAlgorithm[ProbabilisticActorPolicy]):
    """REINFORCE: ascend ``E[log pi(a|s) * G]`` with Monte-Carlo returns ``G``.

    :param policy: the stochastic policy to train.
    :param gamma: discount factor in [0, 1].
    :param return_standardization: standardise returns with running statistics.
    :param optim: the factory of the policy's optimizer.
    """

    def __init__(
        self,
        *,
        policy: ProbabilisticActorPolicy,
        gamma: float = 0.99,
        return_standardization: bool = False,
        optim: OptimizerFactory,
    ) -> None:
        super().__init__(policy=policy)
        self.optim = self._create_optimizer(self.policy, optim)
        self.gamma = gamma
        self.discounted_return_computation = DiscountedReturnComputation(
            gamma=gamma, return_standardization=return_standardization
        )

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        batch = self.discounted_return_computation.add_discounted_returns(batch, buffer, indices)
        device = torch_device(self.policy)
        batch.returns = torch.as_tensor(batch.returns, dtype=torch.float32, device=device)
        batch.act = action_tensor(batch.act, device)
        return batch

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> LossSequenceTrainingStats:
        losses = []
        for minibatch in iterate_minibatches(training_view(batch), batch_size, repeat):
            dist = self.policy._update_dist(minibatch)
            log_prob = per_sample(dist.log_prob(minibatch.act), len(minibatch.returns))
            loss = -(log_prob * minibatch.returns).mean()
            losses.extend(self.optim.step_with_loss_values(loss))
        return LossSequenceTrainingStats(loss=SequenceSummaryStats.from_sequence(losses))


__all__ = [
    "DiscountedReturnComputation",
    "DiscreteActorPolicy",
    "LossSequenceTrainingStats",
    "ProbabilisticActorPolicy",
    "Reinforce",
    "SimpleLossTrainingStats",
    "TDistFnContinuous",
    "TDistFnDiscrOrCont",
    "TDistFnDiscrete",
]
