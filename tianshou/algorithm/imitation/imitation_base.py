"""Imitation learning (behaviour cloning): train a policy to reproduce demonstrated actions.

``ImitationPolicy`` acts with an actor network: for a continuous action space the actor's output
is the action, for a discrete one it outputs one score (logit) per action and the policy takes
the arg-max. ``ImitationLearningAlgorithmMixin`` holds the loss both learners minimise (squared
error to the demonstrated actions, or the cross-entropy of the demonstrated discrete actions);
``OffPolicyImitationLearning`` samples its demonstrations from a replay buffer filled while
training (e.g. beside an online learner) and ``OfflineImitationLearning`` from a fixed data set.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from gymnasium.spaces import Box, Discrete
from torch import nn

from tianshou.algorithm.algorithm_base import (
    ActionBoundMethod,
    Algorithm,
    OfflineAlgorithm,
    OffPolicyAlgorithm,
    Policy,
    PolicyState,
    TrainingStats,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.spaces.masks import action_mask, mask_logits, mask_q_values, policy_input


@dataclass(kw_only=True)
class ImitationTrainingStats(TrainingStats):
    """The imitation loss of one update."""

    loss: float = 0.0


class ImitationPolicy(Policy):
    """A policy that acts with an actor network trained to imitate demonstrated actions.

    :param actor: called as ``actor(obs, state=..., info=...)``, returns ``(output, state)``;
        the output is the raw action ``(B, action_dim)`` for a ``Box`` action space and one
        logit per action ``(B, n_actions)`` for a ``Discrete`` one.
    :param action_space: the environment's ``Box`` or ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    :param action_scaling: rescale raw continuous actions from [-1, 1] to the ``Box`` bounds.
    :param action_bound_method: ``"clip"``, ``"tanh"`` or None; how raw continuous actions are
        brought into [-1, 1] before they are sent to the environment.
    """

    def __init__(
        self,
        *,
        actor: nn.Module,
        action_space: gym.Space,
        observation_space: gym.Space | None = None,
        action_scaling: bool = False,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        if not isinstance(action_space, Box | Discrete):
            raise ValueError(
                f"ImitationPolicy needs a Box or Discrete action space, got {action_space}"
            )
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.actor = actor

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """The actor's actions for ``batch.obs``.

        Observations that carry a legal-action mask (``Batch(obs=..., mask=...)``, see
        :mod:`tianshou.spaces.masks`) feed ``obs`` to the actor, and the discrete arg-max
        ranges over the legal actions only.

        :return: a Batch with ``logits`` (the actor's output, a tensor), ``act`` (that output
            for a continuous space, its arg-max over the legal actions for a discrete one) and
            ``state``.
        :raises TypeError: if the actor does not return an ``(output, state)`` pair.
        :raises ValueError: if an observation's mask allows no action.
        """
        obs, mask = policy_input(batch)
        result = self.actor(obs, state=state, info=batch.get("info"))
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(
                f"the actor of ImitationPolicy must return (output, state), got {type(result)}"
            )
        logits, hidden = result
        if self.action_type == "discrete":
            act = mask_q_values(logits, mask).argmax(dim=-1)
        else:
            act = logits
        return batch_of_parsed_values({"logits": logits, "act": act, "state": hidden})


class ImitationLearningAlgorithmMixin:
    """The behaviour-cloning loss, shared by the off-policy and the offline learner.

    Continuous action spaces: the mean squared error between the policy's actions and the
    demonstrated ones. Discrete: the cross-entropy of the demonstrated actions under the
    softmax of the policy's logits (its negative log-likelihood), over the legal actions when the
    observations carry a mask.
    """

    policy: ImitationPolicy
    optim: Algorithm.Optimizer

    def _imitation_loss(self, batch: Batch) -> torch.Tensor:
        """The loss of ``self.policy`` imitating ``batch.act`` on ``batch.obs``."""
        output = self.policy(batch)
        if self.policy.action_type == "continuous":
            act = output.act
            target = torch.as_tensor(batch.act, dtype=act.dtype, device=act.device)
            if target.shape != act.shape:
                raise ValueError(
                    f"demonstrated actions have shape {tuple(target.shape)} but the actor "
                    f"outputs {tuple(act.shape)}; they must match"
                )
            return F.mse_loss(act, target)
        logits = mask_logits(output.logits, action_mask(batch.obs))
        target = torch.as_tensor(batch.act, dtype=torch.long, device=logits.device)
        return F.cross_entropy(logits, target.reshape(-1))

    def _imitation_update(self, batch: Batch) -> ImitationTrainingStats:
        """One optimizer step on the imitation loss of ``batch``."""
        (loss,) = self.optim.step_with_loss_values(self._imitation_loss(batch))
        return ImitationTrainingStats(loss=loss)


class OffPolicyImitationLearning(
    OffPolicyAlgorithm[ImitationPolicy], ImitationLearningAlgorithmMixin
):
    """Behaviour cloning from transitions sampled from a replay buffer filled during training.

    :param policy: the imitation policy to train.
    :param optim: the factory of the policy's optimizer.
    """

    def __init__(self, *, policy: ImitationPolicy, optim: OptimizerFactory) -> None:
        super().__init__(policy=policy)
        self.optim = self._create_optimizer(policy, optim)

    def _update_with_batch(self, batch: Batch) -> ImitationTrainingStats:
        return self._imitation_update(batch)


class OfflineImitationLearning(OfflineAlgorithm[ImitationPolicy], ImitationLearningAlgorithmMixin):
    """Behaviour cloning from a fixed data set of demonstrations (trained by ``OfflineTrainer``).

    :param policy: the imitation policy to train.
    :param optim: the factory of the policy's optimizer.
    """

    def __init__(self, *, policy: ImitationPolicy, optim: OptimizerFactory) -> None:
        super().__init__(policy=policy)
        self.optim = self._create_optimizer(policy, optim)

    def _update_with_batch(self, batch: Batch) -> ImitationTrainingStats:
        return self._imitation_update(batch)
