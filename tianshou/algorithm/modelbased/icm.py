"""Intrinsic curiosity (Pathak et al., "Curiosity-driven Exploration by Self-supervised
Prediction", 2017) as a wrapper around another algorithm.

An :class:`~tianshou.utils.net.discrete.IntrinsicCuriosityModule` embeds observations with a
feature net, predicts the action from two consecutive embeddings (inverse model) and the next
embedding from the current one and the action (forward model). The forward model's error
``0.5 * ||phi_hat(s') - phi(s')||^2`` marks transitions the agent cannot yet predict; scaled by
``reward_scale`` it is added to the extrinsic reward, so the wrapped algorithm is drawn towards
novel states.

Each update of a wrapper then runs, on one sampled batch:

1. ``_preprocess_batch``: the ICM's forward pass; ``rew += reward_scale * forward error``; then
   the wrapped algorithm's preprocessing (returns, advantages, targets) on the augmented rewards;
2. the wrapped algorithm's update, then the ICM's own gradient step on
   ``lr_scale * ((1 - forward_loss_weight) * inverse_loss + forward_loss_weight * forward_loss)``
   (inverse loss: cross-entropy of the predicted action; forward loss: the mean forward error);
3. ``_postprocess_batch``: the wrapped algorithm's postprocessing, then the batch's original
   rewards are restored.

Only what reads ``batch.rew`` sees the intrinsic reward: on-policy returns and advantages do,
while n-step targets read the rewards from the buffer itself (DQN and its relatives with
:class:`ICMOffPolicyWrapper`), so there the ICM is trained but does not shape the targets. This is
the published behaviour, kept for compatibility.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

from tianshou.algorithm.algorithm_base import (
    Algorithm,
    OffPolicyAlgorithm,
    OffPolicyWrapperAlgorithm,
    OnPolicyAlgorithm,
    OnPolicyWrapperAlgorithm,
    TPolicy,
    TrainingStats,
    TrainingStatsWrapper,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.spaces.masks import network_input
from tianshou.utils.net.discrete import IntrinsicCuriosityModule

_ICM_KEY = "icm"
"""The batch entry holding the ICM's outputs between preprocessing and postprocessing."""


@dataclass(kw_only=True, init=False)
class ICMTrainingStats(TrainingStatsWrapper):
    """The wrapped algorithm's stats plus the ICM's losses of the same update.

    :param wrapped_stats: the stats of the wrapped algorithm's update.
    :param icm_loss: the ICM's total loss (weighted sum of both losses, times ``lr_scale``).
    :param icm_forward_loss: the forward model's mean error.
    :param icm_inverse_loss: the inverse model's cross-entropy.
    """

    icm_loss: float
    icm_forward_loss: float
    icm_inverse_loss: float

    def __init__(
        self,
        wrapped_stats: TrainingStats,
        *,
        icm_loss: float,
        icm_forward_loss: float,
        icm_inverse_loss: float,
    ) -> None:
        self.icm_loss = icm_loss
        self.icm_forward_loss = icm_forward_loss
        self.icm_inverse_loss = icm_inverse_loss
        super().__init__(wrapped_stats)


class _ICMMixin:
    """What both ICM wrappers share: the intrinsic reward, its removal, the ICM's update.

    :param action_space: the wrapped policy's action space; must be ``Discrete`` with as many
        actions as the ICM predicts.
    :param model: the intrinsic curiosity module.
    :param optim: the optimizer factory of ``model``.
    :param lr_scale: factor of the ICM's loss, i.e. of its effective learning rate (>= 0).
    :param reward_scale: factor of the forward error in the intrinsic reward (>= 0).
    :param forward_loss_weight: weight in [0, 1] of the forward loss; the inverse loss gets
        ``1 - forward_loss_weight``.
    """

    def __init__(
        self,
        *,
        action_space: gym.Space,
        model: IntrinsicCuriosityModule,
        optim: OptimizerFactory,
        lr_scale: float,
        reward_scale: float,
        forward_loss_weight: float,
    ) -> None:
        _check_icm_arguments(action_space, model, lr_scale, reward_scale, forward_loss_weight)
        assert isinstance(self, Algorithm), "the ICM mixin is mixed into algorithms only"
        self.model = model
        self.optim = self._create_optimizer(model, optim)
        self.lr_scale = lr_scale
        self.reward_scale = reward_scale
        self.forward_loss_weight = forward_loss_weight

    def _icm_preprocess_batch(self, batch: Batch) -> None:
        """Add the intrinsic reward to ``batch.rew``, keeping the ICM's outputs (with their
        autograd graph, for the ICM's update) and the original rewards in ``batch.icm``."""
        rew = np.asarray(batch.rew)
        if rew.shape != (len(batch),):
            raise ValueError(
                f"the ICM adds one intrinsic reward per transition and needs scalar rewards of "
                f"shape ({len(batch)},), got rewards of shape {rew.shape}"
            )
        # masked observations: the curiosity module reads what the policy's networks read
        obs, obs_next = network_input(batch.obs), network_input(batch.obs_next)
        forward_error, act_logits = self.model(obs, batch.act, obs_next)
        intrinsic = forward_error.detach().cpu().numpy() * self.reward_scale
        batch[_ICM_KEY] = Batch(orig_rew=rew, act_hat=act_logits, mse_loss=forward_error)
        batch.rew = rew + intrinsic  # a new array: the sampled rewards stay as they were

    @staticmethod
    def _icm_postprocess_batch(batch: Batch) -> None:
        """Restore the extrinsic rewards and drop the ICM's outputs (and their graph)."""
        batch.rew = batch[_ICM_KEY].orig_rew
        del batch[_ICM_KEY]

    def _icm_update(self, batch: Batch, original_stats: TrainingStats) -> ICMTrainingStats:
        """One gradient step of the ICM on the outputs of ``_icm_preprocess_batch``."""
        outputs = batch[_ICM_KEY]
        act_logits = outputs.act_hat
        act = torch.as_tensor(batch.act, device=act_logits.device).long()
        inverse_loss = F.cross_entropy(act_logits, act)
        forward_loss = outputs.mse_loss.mean()
        weight = self.forward_loss_weight
        loss = ((1 - weight) * inverse_loss + weight * forward_loss) * self.lr_scale
        icm_loss, icm_forward_loss, icm_inverse_loss = self.optim.step_with_loss_values(
            loss, icm_forward_loss=forward_loss, icm_inverse_loss=inverse_loss
        )
        return ICMTrainingStats(
            original_stats,
            icm_loss=icm_loss,
            icm_forward_loss=icm_forward_loss,
            icm_inverse_loss=icm_inverse_loss,
        )


def _check_icm_arguments(
    action_space: gym.Space,
    model: Any,
    lr_scale: float,
    reward_scale: float,
    forward_loss_weight: float,
) -> None:
    if not isinstance(model, IntrinsicCuriosityModule):
        raise TypeError(f"model must be an IntrinsicCuriosityModule, got {type(model).__name__}")
    if not isinstance(action_space, gym.spaces.Discrete):
        raise ValueError(
            f"the ICM predicts discrete actions; the wrapped policy's action space is "
            f"{action_space!r}, wrap an algorithm for a Discrete action space"
        )
    if model.action_dim != action_space.n:
        raise ValueError(
            f"the ICM predicts {model.action_dim} actions but the action space {action_space!r} "
            f"has {action_space.n}: build it with action_dim={action_space.n}"
        )
    for name, value in (("lr_scale", lr_scale), ("reward_scale", reward_scale)):
        if value < 0:
            raise ValueError(f"{name} must be non-negative, got {value}")
    if not 0 <= forward_loss_weight <= 1:
        raise ValueError(f"forward_loss_weight must be in [0, 1], got {forward_loss_weight}")


class ICMOffPolicyWrapper(OffPolicyWrapperAlgorithm[TPolicy], _ICMMixin):
    """An off-policy algorithm trained on rewards with an intrinsic curiosity bonus.

    See the module docstring for the order of the steps of an update.

    :param wrapped_algorithm: the off-policy algorithm whose (discrete-action) policy is trained.
    :param model: the intrinsic curiosity module.
    :param optim: the optimizer factory of ``model``.
    :param lr_scale: factor of the ICM's loss, i.e. of its effective learning rate (>= 0).
    :param reward_scale: factor of the forward error in the intrinsic reward (>= 0); 0 trains the
        ICM without changing the rewards.
    :param forward_loss_weight: weight in [0, 1] of the forward loss against the inverse loss
        (Pathak et al. use 0.2).
    """

    def __init__(
        self,
        *,
        wrapped_algorithm: OffPolicyAlgorithm[TPolicy],
        model: IntrinsicCuriosityModule,
        optim: OptimizerFactory,
        lr_scale: float,
        reward_scale: float,
        forward_loss_weight: float,
    ) -> None:
        OffPolicyWrapperAlgorithm.__init__(self, wrapped_algorithm)
        _ICMMixin.__init__(
            self,
            action_space=wrapped_algorithm.policy.action_space,
            model=model,
            optim=optim,
            lr_scale=lr_scale,
            reward_scale=reward_scale,
            forward_loss_weight=forward_loss_weight,
        )

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        self._icm_preprocess_batch(batch)
        return super()._preprocess_batch(batch, buffer, indices)

    def _postprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> None:
        super()._postprocess_batch(batch, buffer, indices)
        self._icm_postprocess_batch(batch)

    def _wrapper_update_with_batch(
        self, batch: Batch, original_stats: TrainingStats
    ) -> ICMTrainingStats:
        return self._icm_update(batch, original_stats)


class ICMOnPolicyWrapper(OnPolicyWrapperAlgorithm[TPolicy], _ICMMixin):
    """An on-policy algorithm trained on rewards with an intrinsic curiosity bonus.

    The returns and advantages of the wrapped algorithm are computed from the augmented rewards;
    see the module docstring for the order of the steps of an update.

    :param wrapped_algorithm: the on-policy algorithm whose (discrete-action) policy is trained.
    :param model: the intrinsic curiosity module.
    :param optim: the optimizer factory of ``model``.
    :param lr_scale: factor of the ICM's loss, i.e. of its effective learning rate (>= 0).
    :param reward_scale: factor of the forward error in the intrinsic reward (>= 0); 0 trains the
        ICM without changing the rewards.
    :param forward_loss_weight: weight in [0, 1] of the forward loss against the inverse loss
        (Pathak et al. use 0.2).
    """

    def __init__(
        self,
        *,
        wrapped_algorithm: OnPolicyAlgorithm[TPolicy],
        model: IntrinsicCuriosityModule,
        optim: OptimizerFactory,
        lr_scale: float,
        reward_scale: float,
        forward_loss_weight: float,
    ) -> None:
        OnPolicyWrapperAlgorithm.__init__(self, wrapped_algorithm)
        _ICMMixin.__init__(
            self,
            action_space=wrapped_algorithm.policy.action_space,
            model=model,
            optim=optim,
            lr_scale=lr_scale,
            reward_scale=reward_scale,
            forward_loss_weight=forward_loss_weight,
        )

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        self._icm_preprocess_batch(batch)
        return super()._preprocess_batch(batch, buffer, indices)

    def _postprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> None:
        super()._postprocess_batch(batch, buffer, indices)
        self._icm_postprocess_batch(batch)

    def _wrapper_update_with_batch(
        self,
        batch: Batch,
        batch_size: int | None,
        repeat: int,
        original_stats: TrainingStats,
    ) -> ICMTrainingStats:
        return self._icm_update(batch, original_stats)


__all__ = ["ICMOffPolicyWrapper", "ICMOnPolicyWrapper", "ICMTrainingStats"]
