"""C51: distributional Q-learning over a fixed categorical support (Bellemare et al., 2017).

The network outputs, per action, a probability distribution over ``num_atoms`` returns evenly
spaced in ``[v_min, v_max]``; Q-values are the distributions' means. The update moves the
distribution of the taken action towards the n-step Bellman target distribution projected back
onto the support (the categorical projection, :func:`project_onto_support`).
"""

from typing import Generic, TypeVar

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.modelfree.dqn import (
    DiscreteQLearningPolicy,
    QLearningOffPolicyAlgorithm,
    batch_rows,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.spaces.masks import Mask, unmask_dead_ends


def project_onto_support(
    target_atoms_BN: torch.Tensor, probs_BN: torch.Tensor, support_N: torch.Tensor
) -> torch.Tensor:
    """Project the distribution with ``probs_BN`` on ``target_atoms_BN`` onto ``support_N``.

    Each target atom is clipped to ``[support[0], support[-1]]`` and its probability is split
    between the two neighbouring support atoms in proportion to their proximity (an atom on a
    support point gives it all its mass), i.e. support atom ``i`` receives
    ``sum_j clamp(1 - |Tz_j - z_i| / delta_z, 0, 1) * p_j``.

    Only the two neighbours of each target atom receive mass, so the sum is computed as two
    scatter-adds at the atom's fractional position on the support, in ``O(B * N)`` time and
    memory instead of the ``(B, N, N)`` weight tensor of the formula above. A NaN target atom
    makes its row NaN (it is not silently dropped).

    :param target_atoms_BN: the target returns ``r + gamma^n * z`` of each sample, ``(B, N)``.
    :param probs_BN: their probabilities, ``(B, N)``.
    :param support_N: the evenly spaced support ``z``, ``(N,)``.
    :return: the projected probabilities, ``(B, N)``.
    """
    probs_BN = probs_BN.to(torch.promote_types(probs_BN.dtype, target_atoms_BN.dtype))
    last = support_N.numel() - 1
    v_min, v_max = support_N[0], support_N[-1]
    # fractional index of each clipped target atom on the support, in [0, last]
    position_BN = (target_atoms_BN.clamp(v_min, v_max) - v_min).mul_(last / (v_max - v_min))
    lower_BN = position_BN.detach().nan_to_num(0.0).floor_()
    upper_share_BN = position_BN - lower_BN
    upper_mass_BN = probs_BN * upper_share_BN
    lower_index_BN = lower_BN.long()
    projected_BN = probs_BN.new_zeros(len(probs_BN), last + 1)
    projected_BN.scatter_add_(1, lower_index_BN, probs_BN - upper_mass_BN)
    # an atom at v_max has no upper neighbour; its upper share is 0, so clamping adds nothing
    projected_BN.scatter_add_(1, (lower_index_BN + 1).clamp_(max=last), upper_mass_BN)
    return projected_BN


class C51Policy(DiscreteQLearningPolicy):
    """Acts greedily with respect to the means of per-action return distributions.

    The model must return ``(probs, state)`` with ``probs`` of shape ``(B, n_actions,
    num_atoms)``, each row a probability distribution over the support (a ``Net`` with
    ``num_atoms=num_atoms, softmax=True``).

    :param model: the distributional Q-network.
    :param action_space: the environment's ``Discrete`` action space.
    :param observation_space: the environment's observation space.
    :param num_atoms: number of support atoms (51 in the paper; more resolve the return
        distribution more finely at a higher cost).
    :param v_min: the smallest representable return; lower targets are clipped to it.
    :param v_max: the largest representable return; higher targets are clipped to it. Choose
        ``[v_min, v_max]`` to cover the task's discounted returns.
    :param eps_training: probability of a random action while collecting training data.
    :param eps_inference: probability of a random action outside training steps.
    """

    def __init__(
        self,
        model: nn.Module,
        action_space: gym.spaces.Space,
        observation_space: gym.Space | None = None,
        num_atoms: int = 51,
        v_min: float = -10.0,
        v_max: float = 10.0,
        eps_training: float = 0.0,
        eps_inference: float = 0.0,
    ) -> None:
        if num_atoms < 2:
            raise ValueError(f"num_atoms must be at least 2, got {num_atoms}")
        if not v_min < v_max:
            raise ValueError(f"v_min must be smaller than v_max, got v_min={v_min}, v_max={v_max}")
        super().__init__(
            model=model,
            action_space=action_space,
            observation_space=observation_space,
            eps_training=eps_training,
            eps_inference=eps_inference,
        )
        self._num_atoms = num_atoms
        self._v_min = v_min
        self._v_max = v_max
        self.support: torch.Tensor
        self.register_buffer("support", torch.linspace(v_min, v_max, num_atoms))
        self.delta_z = (v_max - v_min) / (num_atoms - 1)

    def compute_q_value(self, logits: torch.Tensor, mask: Mask | None) -> torch.Tensor:
        """The Q-values ``(B, n_actions)``: the means of the distributions ``logits``.

        :param logits: per-action probabilities over the support, ``(B, n_actions, num_atoms)``.
        :param mask: legal-action mask ``(B, n_actions)``; illegal actions get ``-inf``.
        """
        if logits.ndim != 3 or logits.shape[-1] != self._num_atoms:
            raise ValueError(
                f"C51Policy needs model outputs of shape (batch, n_actions, {self._num_atoms}), "
                f"got {tuple(logits.shape)}; build the network with num_atoms={self._num_atoms}"
            )
        return super().compute_q_value((logits * self.support.to(logits.dtype)).sum(2), mask)


TC51Policy = TypeVar("TC51Policy", bound=C51Policy)


class C51(QLearningOffPolicyAlgorithm[TC51Policy], Generic[TC51Policy]):
    """C51: minimise the cross-entropy to the projected n-step target distribution.

    The next action is the online model's greedy action; its distribution comes from the target
    network when there is one (``target_update_freq > 0``), as in double Q-learning.

    :param policy: the C51 policy whose ``model`` is trained.
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param n_step_return_horizon: number of rewards summed before bootstrapping.
    :param target_update_freq: copy the model into the target network every this many updates
        (0: no target network).
    """

    def __init__(
        self,
        *,
        policy: TC51Policy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        n_step_return_horizon: int = 1,
        target_update_freq: int = 0,
    ) -> None:
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step_return_horizon=n_step_return_horizon,
            target_update_freq=target_update_freq,
        )

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """The support atoms for each next observation, ``(B, num_atoms)``: n-step returns of
        these are the target atoms ``r + gamma^n * z`` (just the rewards after a terminal)."""
        return self.policy.support.expand(len(obs_next), -1)

    def _next_dist(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """Distribution ``(B, num_atoms)`` of the online model's greedy next action."""
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        probs, q_values, _ = self.policy.evaluate(obs_batch)
        if self.model_old is not None:
            probs = self.policy._model_output(obs_batch, model=self.model_old)[0]
        act = q_values.argmax(dim=1)
        return probs[batch_rows(len(act), probs.device), act]

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Attach ``returns``, the target atoms ``(B, num_atoms)``, and ``target_dist``, the
        projection of the bootstrap state's distribution on them onto the support."""
        sampled_obs_next = batch.obs_next
        next_dist: list[torch.Tensor] = []

        def target_atoms(buf: ReplayBuffer, target_indices: np.ndarray) -> torch.Tensor:
            same_rows = target_indices is indices
            obs_next = sampled_obs_next if same_rows else buf._obs_next_at(target_indices)
            obs_next = unmask_dead_ends(obs_next)
            next_dist.append(self._next_dist(obs_next))  # compute_nstep_return: no_grad
            return self._target_q_compute_value(obs_next)

        batch = self.compute_nstep_return(
            batch, buffer, indices, target_atoms, self.gamma, self.n_step_return_horizon
        )
        batch.target_dist = project_onto_support(
            batch.returns, next_dist[0].to(batch.returns.dtype), self.policy.support
        )
        return batch

    def _update_with_batch(self, batch: Batch) -> SimpleLossTrainingStats:
        """One gradient step on the (importance-weighted) cross-entropy to ``batch.target_dist``;
        stores the per-sample cross-entropies in ``batch.weight`` as new priorities."""
        self._periodically_update_lagged_network_weights()
        probs = self.policy._model_output(batch)[0]  # the taken actions need no Q-values
        act = torch.as_tensor(batch.act, device=probs.device, dtype=torch.long).reshape(-1)
        curr_dist = probs[batch_rows(len(act), probs.device), act]
        target_dist = torch.as_tensor(batch.target_dist, device=probs.device, dtype=probs.dtype)
        cross_entropy = -(target_dist * torch.log(curr_dist + 1e-8)).sum(1)
        weight = batch.__dict__.get("weight")
        per_sample = cross_entropy
        if weight is not None:
            weight = torch.as_tensor(weight, device=probs.device, dtype=probs.dtype)
            per_sample = cross_entropy * weight
        (loss_value,) = self.optim.step_with_loss_values(per_sample.mean())
        batch.weight = cross_entropy.detach()
        return SimpleLossTrainingStats(loss=loss_value)
