"""TD3+BC (Fujimoto & Gu, 2021): offline TD3 whose actor also imitates the data set's actions.

The critics are trained exactly as in TD3 (twin critics, smoothed target actions). The delayed
actor step minimises ``-lambda * mean(Q(s, pi(s))) + mean((pi(s) - a)^2)`` with
``lambda = alpha / mean|Q(s, pi(s))|``: normalising by the Q scale (treated as a constant) keeps
the balance between maximising Q and staying close to the data independent of the reward scale,
so one ``alpha`` works across tasks.
"""

import torch
import torch.nn.functional as F
from torch import nn

from tianshou.algorithm._update_helpers import frozen
from tianshou.algorithm.algorithm_base import OfflineAlgorithm
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.td3 import TD3
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch


# OfflineAlgorithm comes first so that the offline trainer runs it; mypy flags the differing
# trainer types of the two bases, which is the point of the override
class TD3BC(OfflineAlgorithm[ContinuousDeterministicPolicy], TD3):  # type: ignore[misc]
    """TD3 with a behaviour-cloning term in the actor loss, trained on a fixed data set.

    :param policy: the deterministic policy to train; the stored actions are its raw outputs
        (before ``map_action``), which the cloning term compares the actor's outputs with.
    :param policy_optim: the factory of the actor's optimizer.
    :param critic: the first critic, ``(obs, act) -> (B, 1)``.
    :param critic_optim: the factory of the first critic's optimizer.
    :param critic2: the second critic (None: a re-initialised copy of ``critic``).
    :param critic2_optim: the factory of the second critic's optimizer (None: ``critic_optim``).
    :param tau: Polyak coefficient of the target networks.
    :param gamma: discount factor in [0, 1].
    :param policy_noise: standard deviation of the Gaussian noise added to target actions.
    :param update_actor_freq: update the actor (and the targets) every this many critic updates.
    :param noise_clip: the target-action noise is clipped to ``[-noise_clip, noise_clip]``
        (0: not clipped).
    :param alpha: weight of the normalised Q term against the cloning term (non-negative);
        0 is pure behaviour cloning, larger values trust the critic more.
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    """

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
        alpha: float = 2.5,
        n_step_return_horizon: int = 1,
    ) -> None:
        if alpha < 0:
            raise ValueError(f"alpha must be non-negative, got {alpha}")
        super().__init__(
            policy=policy,
            policy_optim=policy_optim,
            critic=critic,
            critic_optim=critic_optim,
            critic2=critic2,
            critic2_optim=critic2_optim,
            tau=tau,
            gamma=gamma,
            policy_noise=policy_noise,
            update_actor_freq=update_actor_freq,
            noise_clip=noise_clip,
            n_step_return_horizon=n_step_return_horizon,
        )
        self.alpha = alpha

    def _actor_loss(self, batch: Batch) -> torch.Tensor:
        """``-alpha / mean|Q| * mean(Q(s, pi(s))) + mean((pi(s) - a)^2)`` on ``batch``.

        :raises ValueError: if the stored actions do not have the actor's output shape.
        """
        act = self.policy(batch).act
        data_act = torch.as_tensor(batch.act, dtype=act.dtype, device=act.device)
        if data_act.shape != act.shape:
            raise ValueError(
                f"the data set's actions have shape {tuple(data_act.shape)}, the actor outputs "
                f"{tuple(act.shape)}; TD3BC needs the actor's raw action for every observation"
            )
        with frozen(self._critic_only_params):
            q_value = self.critic(batch.obs, act)
        lmbda = self.alpha / q_value.abs().mean().detach()
        return -lmbda * q_value.mean() + F.mse_loss(act, data_act)

    # OfflineAlgorithm's abstract declaration precedes TD3's update in the method order
    _update_with_batch = TD3._update_with_batch
