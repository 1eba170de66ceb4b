"""Batch-Constrained deep Q-learning (BCQ) for continuous actions, an offline algorithm.

Fujimoto, Meger and Precup (2019), "Off-Policy Deep Reinforcement Learning without Exploration".
Learning Q-values from a fixed data set goes wrong where the policy picks actions the data never
shows: their values are extrapolated, usually over-estimated, and the policy chases the error.
BCQ only considers actions that look like the data's. A conditional VAE learns the data's
actions per state; the policy decodes ``n`` candidate actions from it, lets a perturbation
network shift each by at most ``phi * max_action`` and takes the candidate with the highest
first Q-value. One update (:meth:`BCQ._update_with_batch`) makes, in the paper's order:

1. a VAE step on ``MSE(reconstruction, a) + 0.5 * KL(N(mean, std) || N(0, 1))``;
2. a step of both critics towards the soft clipped double-Q target
   ``r + gamma * (1 - terminated) * max_j [lmbda * min(Q1', Q2') + (1 - lmbda) * max(Q1', Q2')]``,
   the maximum taken over ``num_sampled_action`` candidates ``j`` for the next state, decoded by
   the VAE and perturbed by the target perturbation network (only terminated transitions drop
   the bootstrap term; truncated ones keep it);
3. a perturbation step on ``-Q1(s, perturbation(s, decoded action))``;
4. Polyak averaging of the three target networks with ``tau``.

Dict observations (a ``Batch`` per observation batch) need networks that read them:
:class:`~tianshou.utils.net.dict_heads.DictVAE`,
:class:`~tianshou.utils.net.dict_heads.DictPerturbation` and
:class:`~tianshou.utils.net.dict_encoder.DictActionCritic`. Observations are then repeated for
the candidate actions key by key.
"""

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import torch
import torch.nn.functional as F
from gymnasium.spaces import Box
from torch import nn

from tianshou.algorithm._update_helpers import (
    exclusive_parameters,
    finite_loss_values,
    frozen,
)
from tianshou.algorithm.algorithm_base import (
    ActionBoundMethod,
    LaggedNetworkPolyakUpdateAlgorithmMixin,
    OfflineAlgorithm,
    Policy,
    PolicyState,
    TrainingStats,
    step_jointly,
)
from tianshou.algorithm.modelfree.td3 import fresh_copy
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.spaces.dict_observations import ObsRows, obs_rows, repeat_rows
from tianshou.utils.net.continuous import VAE
from tianshou.utils.torch_utils import torch_device


@dataclass(kw_only=True)
class BCQTrainingStats(TrainingStats):
    """Losses of one BCQ update."""

    actor_loss: float
    critic1_loss: float
    critic2_loss: float
    vae_loss: float


def _observations(values: Any, name: str, device: torch.device, rows: int | None = None) -> ObsRows:
    """Observations on ``device``: a ``(rows, width)`` matrix (see :func:`_matrix`), or the
    tensors of a ``Batch`` of dict observations with ``rows`` rows."""
    if not isinstance(values, Batch):
        return _matrix(values, name, device, rows)
    if rows is not None and len(values) != rows:
        raise ValueError(f"BCQ needs {rows} rows of {name}, got {len(values)}")
    return obs_rows(values, device)


def _matrix(values: Any, name: str, device: torch.device, rows: int | None = None) -> torch.Tensor:
    """``values`` as a float32 ``(rows, width)`` tensor on ``device``, or a clear error."""
    tensor = torch.as_tensor(values, device=device, dtype=torch.float32)
    if tensor.dim() != 2 or (rows is not None and len(tensor) != rows):
        expected = "(batch, width)" if rows is None else f"({rows}, width)"
        raise ValueError(f"BCQ needs {name} of shape {expected}, got {tuple(tensor.shape)}")
    return tensor


class BCQPolicy(Policy):
    """Acts with the best of several perturbed VAE proposals, ranked by the first critic.

    For each observation, ``forward_sampled_times`` latents are drawn (clamped to [-0.5, 0.5],
    see :meth:`VAE.decode`), decoded to candidate actions, perturbed, and the candidate with the
    highest ``critic(obs, action)`` is the action. Actions are raw actions in
    ``[-max_action, max_action]`` (the VAE's range, i.e. that of the data set's actions).

    :param actor_perturbation: maps ``(obs, action)`` to a perturbed action of the same shape,
        e.g. a :class:`~tianshou.utils.net.continuous.Perturbation`.
    :param action_space: the environment's ``Box`` action space.
    :param critic: the first Q-network, ``(obs, act) -> (B, 1)``, e.g. a ``ContinuousCritic``.
    :param vae: the generative model of the data's actions.
    :param forward_sampled_times: candidate actions per observation when acting; more
        candidates find better actions among the data-like ones at a proportional cost.
    :param observation_space: the environment's observation space.
    :param action_scaling: rescale raw actions from [-1, 1] to the ``Box`` bounds; leave it off
        when the data set holds environment actions (the VAE then proposes those directly).
    :param action_bound_method: ``"clip"`` (to [-1, 1]), ``"tanh"`` or None, applied before the
        actions go to the environment; None keeps actions beyond [-1, 1] (e.g. Pendulum's
        [-2, 2] torques with ``max_action=2``).
    """

    def __init__(
        self,
        *,
        actor_perturbation: nn.Module,
        action_space: gym.Space,
        critic: nn.Module,
        vae: VAE,
        forward_sampled_times: int = 100,
        observation_space: gym.Space | None = None,
        action_scaling: bool = False,
        action_bound_method: ActionBoundMethod | None = "clip",
    ) -> None:
        if not isinstance(action_space, Box):
            raise ValueError(f"BCQPolicy needs a continuous (Box) action space, got {action_space}")
        if not isinstance(vae, VAE):
            raise TypeError(f"vae must be a tianshou.utils.net.continuous.VAE, got {type(vae)}")
        if forward_sampled_times < 1:
            raise ValueError(
                f"forward_sampled_times must be a positive int, got {forward_sampled_times}"
            )
        perturbation_bound = getattr(actor_perturbation, "max_action", vae.max_action)
        if perturbation_bound != vae.max_action:
            raise ValueError(
                f"the perturbation's max_action ({perturbation_bound}) must equal the VAE's "
                f"({vae.max_action}): both bound the same actions"
            )
        super().__init__(
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=action_scaling,
            action_bound_method=action_bound_method,
        )
        self.actor_perturbation = actor_perturbation
        self.critic = critic
        self.vae = vae
        self.forward_sampled_times = forward_sampled_times

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        """The best candidate action for each observation in ``batch.obs`` (no gradients).

        :return: a Batch with ``act`` (a ``(B, action_dim)`` tensor) and ``state``.
        """
        obs_BO = _observations(batch.obs, "obs", torch_device(self.critic))
        num = self.forward_sampled_times
        with torch.no_grad():
            act_NA, obs_NO = self.perturbed_candidates(obs_BO, num, self.actor_perturbation)
            best_B = self.critic(obs_NO, act_NA).reshape(-1, num).argmax(dim=1)
            act_BA = act_NA.reshape(len(obs_BO), num, -1)[torch.arange(len(obs_BO)), best_B]
        return batch_of_parsed_values({"act": act_BA, "state": state})

    def perturbed_candidates(
        self, obs_BO: ObsRows, num: int, perturbation: nn.Module
    ) -> tuple[torch.Tensor, ObsRows]:
        """``num`` perturbed VAE proposals per observation, candidates of the same observation
        adjacent: returns ``(actions (B * num, A), repeated observations (B * num, O))`` (the
        observations a ``Batch`` of repeated entries for dict observations)."""
        obs_NO = repeat_rows(obs_BO, num)
        # a Batch of dict observations goes to a DictVAE, which decodes Batches
        return perturbation(obs_NO, self.vae.decode(obs_NO)), obs_NO  # type: ignore[arg-type]


class BCQ(OfflineAlgorithm[BCQPolicy], LaggedNetworkPolyakUpdateAlgorithmMixin):
    """Batch-Constrained deep Q-learning; see the module docstring for the update.

    >>> import numpy as np
    >>> from tianshou.algorithm.optim import AdamOptimizerFactory
    >>> from tianshou.utils.net.common import MLP, Net
    >>> from tianshou.utils.net.continuous import ContinuousCritic, Perturbation
    >>> obs_dim, act_dim, latent_dim = 3, 1, 2
    >>> vae = VAE(encoder=MLP(input_dim=obs_dim + act_dim, hidden_sizes=[16]),
    ...           decoder=MLP(input_dim=obs_dim + latent_dim, output_dim=act_dim,
    ...                       hidden_sizes=[16]),
    ...           hidden_dim=16, latent_dim=latent_dim, max_action=1.0)
    >>> policy = BCQPolicy(
    ...     actor_perturbation=Perturbation(preprocess_net=Net(
    ...         state_shape=obs_dim + act_dim, action_shape=act_dim, hidden_sizes=[16]),
    ...         max_action=1.0),
    ...     action_space=Box(-2.0, 2.0, shape=(act_dim,)),
    ...     critic=ContinuousCritic(preprocess_net=Net(
    ...         state_shape=obs_dim, action_shape=act_dim, hidden_sizes=[16], concat=True)),
    ...     vae=vae, action_scaling=True)
    >>> algorithm = BCQ(policy=policy, actor_perturbation_optim=AdamOptimizerFactory(),
    ...                 critic_optim=AdamOptimizerFactory(), vae_optim=AdamOptimizerFactory())
    >>> policy(Batch(obs=np.zeros((4, obs_dim)), info=Batch())).act.shape
    torch.Size([4, 1])

    :param policy: the policy, holding the perturbation network, the first critic and the VAE.
    :param actor_perturbation_optim: the factory of the perturbation network's optimizer.
    :param critic_optim: the factory of the first critic's optimizer.
    :param vae_optim: the factory of the VAE's optimizer.
    :param critic2: the second critic; None uses a copy of the first with freshly initialised
        parameters.
    :param critic2_optim: the factory of the second critic's optimizer (None: ``critic_optim``).
    :param gamma: discount factor in [0, 1].
    :param tau: Polyak coefficient of the target networks in [0, 1].
    :param lmbda: weight in [0, 1] of the minimum of the two target critics in the target (the
        rest goes to their maximum); 1 is TD3's clipped double Q, the paper uses 0.75.
    :param num_sampled_action: candidate actions per next state in the target; the target
        takes the best of them.
    """

    def __init__(
        self,
        *,
        policy: BCQPolicy,
        actor_perturbation_optim: OptimizerFactory,
        critic_optim: OptimizerFactory,
        vae_optim: OptimizerFactory,
        critic2: nn.Module | None = None,
        critic2_optim: OptimizerFactory | None = None,
        gamma: float = 0.99,
        tau: float = 0.005,
        lmbda: float = 0.75,
        num_sampled_action: int = 10,
    ) -> None:
        for name, value in (("gamma", gamma), ("lmbda", lmbda)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if num_sampled_action < 1:
            raise ValueError(f"num_sampled_action must be a positive int, got {num_sampled_action}")
        if critic2 is policy.critic:
            raise ValueError("critic2 must be a different module from the policy's critic")
        super().__init__(policy=policy)
        LaggedNetworkPolyakUpdateAlgorithmMixin.__init__(self, tau=tau)
        self.critic2 = critic2 if critic2 is not None else fresh_copy(policy.critic)
        self.actor_perturbation_target = self._add_lagged_network(policy.actor_perturbation)
        self.critic_target = self._add_lagged_network(policy.critic)
        self.critic2_target = self._add_lagged_network(self.critic2)
        self.actor_perturbation_optim = self._create_optimizer(
            policy.actor_perturbation, actor_perturbation_optim
        )
        self.critic_optim = self._create_optimizer(policy.critic, critic_optim)
        self.critic2_optim = self._create_optimizer(self.critic2, critic2_optim or critic_optim)
        self.vae_optim = self._create_optimizer(policy.vae, vae_optim)
        self.gamma = gamma
        self.lmbda = lmbda
        self.num_sampled_action = num_sampled_action
        self._critic_only_params = exclusive_parameters([policy.critic], policy.actor_perturbation)
        critic1_params = {id(p) for p in policy.critic.parameters()}
        self._critics_share_parameters = any(
            id(p) in critic1_params for p in self.critic2.parameters()
        )

    def _vae_loss(self, obs_BO: ObsRows, act_BA: torch.Tensor) -> torch.Tensor:
        """Reconstruction error plus half the KL divergence of the latent from ``N(0, 1)``."""
        reconstruction, mean, std = self.policy.vae(obs_BO, act_BA)
        reconstruction_loss = F.mse_loss(reconstruction, act_BA)
        kl = (-torch.log(std) + (std.square() + mean.square() - 1.0) / 2.0).mean()
        return reconstruction_loss + kl / 2.0

    def _target_q(
        self, obs_next_BO: ObsRows, rew_B: torch.Tensor, terminated_B: torch.Tensor
    ) -> torch.Tensor:
        """The TD targets ``(B,)`` (see the module docstring), computed without gradients."""
        num = self.num_sampled_action
        with torch.no_grad():
            act_NA, obs_NO = self.policy.perturbed_candidates(
                obs_next_BO, num, self.actor_perturbation_target
            )
            q1 = self.critic_target(obs_NO, act_NA)
            q2 = self.critic2_target(obs_NO, act_NA)
            soft_q = self.lmbda * torch.min(q1, q2) + (1.0 - self.lmbda) * torch.max(q1, q2)
            best_B = soft_q.reshape(len(obs_next_BO), num).max(dim=1).values
            return rew_B + self.gamma * best_B * terminated_B.logical_not()

    def _actor_loss(self, obs_BO: ObsRows) -> torch.Tensor:
        """``-Q1`` of the perturbed VAE proposals; only the perturbation network learns from it."""
        with torch.no_grad():
            proposal_BA = self.policy.vae.decode(obs_BO)  # type: ignore[arg-type]  # DictVAE
        act_BA = self.policy.actor_perturbation(obs_BO, proposal_BA)
        with frozen(self._critic_only_params):
            return -self.policy.critic(obs_BO, act_BA).mean()

    def _minimize_critics(
        self, obs_BO: ObsRows, act_BA: torch.Tensor, target_B: torch.Tensor
    ) -> tuple[float, float]:
        """One step of each critic on its mean squared error to ``target_B``; returns both losses.

        Critics that share no parameters get their gradients from one backward pass of the
        summed losses (each critic's own gradient); shared ones are stepped one after the other.

        :raises FloatingPointError: if a loss is NaN or infinite; no critic is changed then.
        """
        critics = ((self.policy.critic, self.critic_optim), (self.critic2, self.critic2_optim))
        if self._critics_share_parameters:
            losses = [
                optim.step_with_loss_values(F.mse_loss(critic(obs_BO, act_BA).flatten(), target_B))
                for critic, optim in critics
            ]
            return losses[0][0], losses[1][0]
        critic1_loss, critic2_loss = (
            F.mse_loss(critic(obs_BO, act_BA).flatten(), target_B) for critic, _ in critics
        )
        values = finite_loss_values(
            "the critics' optimizers", critic1_loss=critic1_loss, critic2_loss=critic2_loss
        )
        step_jointly([optim for _, optim in critics], critic1_loss + critic2_loss)
        return values[0], values[1]

    def _update_with_batch(self, batch: Batch) -> BCQTrainingStats:
        device = torch_device(self.policy.critic)
        obs = _observations(batch.obs, "obs", device)
        rows = len(obs)
        act = _matrix(batch.act, "act", device, rows)
        obs_next = _observations(batch.obs_next, "obs_next", device, rows)
        rew = torch.as_tensor(batch.rew, device=device, dtype=torch.float32).reshape(-1)
        terminated = torch.as_tensor(batch.terminated, device=device).reshape(-1)
        if len(rew) != rows or len(terminated) != rows:
            raise ValueError(
                f"BCQ needs one reward and terminated flag per transition ({rows}), got "
                f"{len(rew)} and {len(terminated)}"
            )
        (vae_loss,) = self.vae_optim.step_with_loss_values(self._vae_loss(obs, act))
        target = self._target_q(obs_next, rew, terminated)
        critic1_loss, critic2_loss = self._minimize_critics(obs, act, target)
        (actor_loss,) = self.actor_perturbation_optim.step_with_loss_values(self._actor_loss(obs))
        self._update_lagged_network_weights()
        return BCQTrainingStats(
            actor_loss=actor_loss,
            critic1_loss=critic1_loss,
            critic2_loss=critic2_loss,
            vae_loss=vae_loss,
        )


__all__ = ["BCQ", "BCQPolicy", "BCQTrainingStats"]
