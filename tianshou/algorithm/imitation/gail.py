"""Generative adversarial imitation learning (Ho & Ermon, 2016) on top of PPO.

A discriminator ``D(s, a) = sigmoid(disc_net(cat(s, a)))`` learns to tell the expert's
transitions (``D -> 1``) from the policy's (``D -> 0``) with the logistic loss. The policy never
sees the environment's reward: before each PPO update the discriminator takes
``disc_update_num`` gradient steps on the fresh rollout and on as many expert transitions, and
the rollout's rewards are then replaced by ``-log(1 - D(s, a)) = -logsigmoid(-logits)``, which
is large where the policy behaves like the expert. PPO then maximises these rewards.

With dict observations (a ``Batch`` per observation batch) the discriminator reads the
observation through an encoder instead of a flat concatenation: it is called as
``disc_net(obs, act)``, e.g. a :class:`~tianshou.utils.net.dict_encoder.DictActionCritic`,
which encodes the entries (images through a CNN) before joining them with the action.
"""

from dataclasses import dataclass, fields

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from tianshou.algorithm.modelfree.a2c import A2CTrainingStats
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.stats import SequenceSummaryStats
from tianshou.utils.torch_utils import torch_device


@dataclass(kw_only=True)
class GailTrainingStats(A2CTrainingStats):
    """PPO's loss summaries plus the discriminator's over its steps of one update.

    ``disc_loss`` is the logistic loss (policy part plus expert part), ``acc_pi`` the fraction
    of policy transitions classified as the policy's (logit < 0) and ``acc_exp`` the fraction of
    expert transitions classified as the expert's (logit > 0), both before each step.
    """

    disc_loss: SequenceSummaryStats
    acc_pi: SequenceSummaryStats
    acc_exp: SequenceSummaryStats


class GAIL(PPO):
    """PPO on rewards from a discriminator trained to tell the policy's data from an expert's.

    :param policy: the stochastic policy.
    :param critic: the state-value network.
    :param optim: the optimizer factory for actor and critic together.
    :param expert_buffer: the expert's demonstrations (``obs`` and ``act`` are used; actions as
        the policy outputs them, i.e. raw actions before ``map_action``).
    :param disc_net: maps ``cat(obs, act)`` (observations and actions flattened per sample) to
        one logit per sample; positive logits mean "expert". For dict observations it is
        called as ``disc_net(obs, act)`` with the observation ``Batch`` and the actions
        flattened per sample (e.g. a ``DictActionCritic``).
    :param disc_optim: the factory of the discriminator's optimizer.
    :param disc_update_num: discriminator gradient steps per update; the rollout is split into
        this many shuffled chunks, each paired with as many freshly sampled expert transitions.
    :param eps_clip: the ratio clip range ``epsilon``; also the value-clip range.
    :param dual_clip: the dual-clip constant ``c > 1``; None disables it.
    :param value_clip: clip the new value estimate around the old one.
    :param advantage_normalization: standardise advantages within every minibatch.
    :param recompute_advantage: recompute values and advantages before every pass after the
        first.
    :param vf_coef: weight of the critic's squared error in the total loss.
    :param ent_coef: weight of the entropy bonus.
    :param max_grad_norm: clip the gradients' global norm (None: no clipping).
    :param gae_lambda: GAE lambda in [0, 1].
    :param max_batchsize: chunk size for the no-grad passes in preprocessing.
    :param gamma: discount factor in [0, 1].
    :param return_scaling: scale the critic's targets by running return statistics.
    """

    def __init__(
        self,
        *,
        policy: ProbabilisticActorPolicy,
        critic: nn.Module,
        optim: OptimizerFactory,
        expert_buffer: ReplayBuffer,
        disc_net: nn.Module,
        disc_optim: OptimizerFactory,
        disc_update_num: int = 4,
        eps_clip: float = 0.2,
        dual_clip: float | None = None,
        value_clip: bool = False,
        advantage_normalization: bool = True,
        recompute_advantage: bool = False,
        vf_coef: float = 0.5,
        ent_coef: float = 0.01,
        max_grad_norm: float | None = None,
        gae_lambda: float = 0.95,
        max_batchsize: int = 256,
        gamma: float = 0.99,
        return_scaling: bool = False,
    ) -> None:
        if disc_update_num < 1:
            raise ValueError(f"disc_update_num must be a positive int, got {disc_update_num}")
        super().__init__(
            policy=policy,
            critic=critic,
            optim=optim,
            eps_clip=eps_clip,
            dual_clip=dual_clip,
            value_clip=value_clip,
            advantage_normalization=advantage_normalization,
            recompute_advantage=recompute_advantage,
            vf_coef=vf_coef,
            ent_coef=ent_coef,
            max_grad_norm=max_grad_norm,
            gae_lambda=gae_lambda,
            max_batchsize=max_batchsize,
            gamma=gamma,
            return_scaling=return_scaling,
        )
        _check_expert_buffer(expert_buffer, policy)
        self.expert_buffer = expert_buffer
        self.disc_net = disc_net
        self.disc_optim = self._create_optimizer(disc_net, disc_optim)
        self.disc_update_num = disc_update_num
        self._disc_history: list[list[float]] = []

    def disc(self, batch: Batch) -> torch.Tensor:
        """The discriminator's logits ``(B,)`` for the transitions ``(batch.obs, batch.act)``.

        :raises ValueError: if ``disc_net`` does not return one logit per transition.
        """
        device = torch_device(self.disc_net)
        act = torch.as_tensor(batch.act, dtype=torch.float32, device=device)
        if isinstance(batch.obs, Batch):
            logits = self.disc_net(batch.obs, act.reshape(len(act), -1))
        else:
            obs = torch.as_tensor(batch.obs, dtype=torch.float32, device=device)
            logits = self.disc_net(torch.cat([obs.flatten(1), act.reshape(len(act), -1)], dim=1))
        if logits.numel() != len(act):
            raise ValueError(
                f"disc_net must output one logit per transition, got shape "
                f"{tuple(logits.shape)} for {len(act)} transitions"
            )
        return logits.flatten()

    def discriminator_reward(self, batch: Batch) -> np.ndarray:
        """The imitation reward ``-log(1 - D(s, a)) = -logsigmoid(-logits)`` of each transition."""
        with torch.no_grad():
            return (-F.logsigmoid(-self.disc(batch))).cpu().numpy()

    def disc_loss(
        self, logits_pi: torch.Tensor, logits_exp: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The logistic loss ``-mean log(1 - D_pi) - mean log D_exp`` and the two accuracies.

        :param logits_pi: the discriminator's logits of policy transitions.
        :param logits_exp: its logits of expert transitions.
        :return: ``(loss, acc_pi, acc_exp)``, scalar tensors.
        """
        loss = -F.logsigmoid(-logits_pi).mean() - F.logsigmoid(logits_exp).mean()
        acc_pi = (logits_pi < 0).float().mean()
        acc_exp = (logits_exp > 0).float().mean()
        return loss, acc_pi, acc_exp

    def _train_discriminator(self, batch: Batch) -> list[list[float]]:
        """``disc_update_num`` steps on shuffled chunks of ``batch`` against expert samples;
        returns ``(loss, acc_pi, acc_exp)`` of each step."""
        self._check_rollout(batch)
        chunk_size = max(len(batch) // self.disc_update_num, 1)
        was_training = self.disc_net.training
        self.disc_net.train()
        history = []
        try:
            for chunk in batch.split(chunk_size, merge_last=True):
                expert_batch, _ = self.expert_buffer.sample(len(chunk))
                loss, acc_pi, acc_exp = self.disc_loss(self.disc(chunk), self.disc(expert_batch))
                # the accuracies are read with the loss, in the one device sync of the step
                history.append(
                    self.disc_optim.step_with_loss_values(loss, acc_pi=acc_pi, acc_exp=acc_exp)
                )
        finally:
            self.disc_net.train(was_training)
        return history

    def _check_rollout(self, batch: Batch) -> None:
        """Refuse a rollout whose observations or actions do not match the expert's."""
        for key in ("obs", "act"):
            ours = np.shape(batch[key])[1:]
            theirs = np.shape(self.expert_buffer.get(np.array([0]), key))[1:]
            if ours != theirs:
                raise ValueError(
                    f"the rollout's {key} have shape {ours} per transition, the expert "
                    f"buffer's {theirs}: the discriminator cannot compare them"
                )

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        self._disc_history = self._train_discriminator(batch)
        batch.rew = self.discriminator_reward(batch)
        return super()._preprocess_batch(batch, buffer, indices)

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> GailTrainingStats:
        ppo_stats = super()._update_with_batch(batch, batch_size, repeat)
        disc_loss, acc_pi, acc_exp = (
            SequenceSummaryStats.from_sequence(column)
            for column in np.asarray(self._disc_history, dtype=np.float64).reshape(-1, 3).T
        )
        ppo_fields = {f.name: getattr(ppo_stats, f.name) for f in fields(ppo_stats)}
        return GailTrainingStats(
            **ppo_fields,
            disc_loss=disc_loss,
            acc_pi=acc_pi,
            acc_exp=acc_exp,
        )


def _check_expert_buffer(expert_buffer: ReplayBuffer, policy: ProbabilisticActorPolicy) -> None:
    """Refuse an empty expert buffer or one whose observations/actions cannot be the policy's.

    :raises ValueError: naming the mismatch.
    """
    if len(expert_buffer) == 0:
        raise ValueError("expert_buffer is empty: GAIL needs the expert's demonstrations")
    sample = expert_buffer[np.array([0])]
    expected = {"obs": policy.observation_space, "act": policy.action_space}
    for key, space in expected.items():
        if not isinstance(space, gym.spaces.Box | gym.spaces.Discrete):
            continue
        stored = np.shape(sample[key])[1:]
        if stored != space.shape:
            raise ValueError(
                f"expert_buffer's {key} have shape {stored} per transition, but the policy's "
                f"{'observation' if key == 'obs' else 'action'} space has shape {space.shape}"
            )
