"""Branching dueling Q-learning (BDQN; Tavakoli et al. 2018, "Action Branching Architectures for
Deep Reinforcement Learning").

An action is a vector of ``num_branches`` sub-actions, each with ``action_per_branch`` values
(e.g. a continuous action discretised by :class:`~tianshou.env.ContinuousToDiscrete`). A
:class:`~tianshou.utils.net.common.BranchingNet` outputs Q-values of shape
``(B, num_branches, action_per_branch)``; each branch picks its own arg-max, so acting and the
network grow linearly, not exponentially, in the number of sub-actions. All branches regress onto
one shared target: the reward plus the discounted mean over branches of each branch's
bootstrapped value (the paper's "mean operator").

Legal-action masks of branching actions have one row per branch: an observation
``Batch(obs=..., mask=...)`` with ``mask`` of shape ``(num_branches, action_per_branch)`` (a batch
``(B, num_branches, action_per_branch)``), true where that branch may take that sub-action. Each
branch then acts, explores and bootstraps among its own legal sub-actions; every branch must
allow at least one.
"""

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.spaces import MultiDiscrete
from torch import nn

from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.algorithm_base import Policy, PolicyState
from tianshou.algorithm.modelfree.dqn import (
    DiscreteQLearningPolicy,
    QLearningOffPolicyAlgorithm,
    _check_eps,
    legal_actions_of,
    q_network_input,
)
from tianshou.algorithm.optim import OptimizerFactory
from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.utils.converter import to_numpy
from tianshou.spaces.masks import mask_q_values, random_legal_actions


class BDQNPolicy(DiscreteQLearningPolicy):
    """Acts with the per-branch arg-max of a branching Q-network, exploring epsilon-greedily.

    >>> from tianshou.utils.net.common import BranchingNet
    >>> net = BranchingNet(state_shape=3, num_branches=2, action_per_branch=5,
    ...                    common_hidden_sizes=[16])
    >>> policy = BDQNPolicy(model=net, action_space=gym.spaces.MultiDiscrete([5, 5]))
    >>> policy(Batch(obs=np.zeros((4, 3)), info=Batch())).act.shape
    (4, 2)
    >>> mask = np.zeros((4, 2, 5), dtype=bool)
    >>> mask[:, 0, 1] = mask[:, 1, 3] = True  # branch 0 may only take 1, branch 1 only 3
    >>> policy(Batch(obs=Batch(obs=np.zeros((4, 3)), mask=mask), info=Batch())).act.tolist()
    [[1, 3], [1, 3], [1, 3], [1, 3]]

    :param model: the branching Q-network; called as ``model(obs, state=state, info=info)``,
        it returns ``(q_values, hidden_state)`` with ``q_values`` of shape
        ``(B, num_branches, action_per_branch)``, as ``BranchingNet`` does.
    :param action_space: a ``MultiDiscrete`` space with the same number of values in every
        dimension (``num_branches`` dimensions of ``action_per_branch`` values), as
        ``ContinuousToDiscrete`` with one int produces.
    :param observation_space: the environment's observation space.
    :param eps_training: probability of replacing a whole action (every sub-action) by a
        uniformly random one while collecting training data.
    :param eps_inference: the same probability outside training steps.
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
        nvec = np.asarray(getattr(action_space, "nvec", []))
        if not isinstance(action_space, MultiDiscrete) or nvec.ndim != 1 or len(set(nvec)) != 1:
            raise ValueError(
                "BDQNPolicy needs a one-dimensional MultiDiscrete action space with the same "
                f"number of values in every dimension, got {action_space}; wrap a Box env in "
                "ContinuousToDiscrete(env, action_per_dim=<one int>)"
            )
        # DiscreteQLearningPolicy.__init__ accepts Discrete spaces only: set up the same
        # attributes for a MultiDiscrete space here.
        Policy.__init__(
            self,
            action_space=action_space,
            observation_space=observation_space,
            action_scaling=False,
            action_bound_method=None,
        )
        self.model = model
        self.eps_training = _check_eps("eps_training", eps_training)
        self.eps_inference = _check_eps("eps_inference", eps_inference)
        self.num_branches = len(nvec)
        self.action_per_branch = int(nvec[0])
        self._num_actions = self.action_per_branch

    def forward(
        self,
        batch: Batch,
        state: PolicyState = None,
        model: nn.Module | None = None,
        **kwargs: Any,
    ) -> Batch:
        """Greedy sub-actions for ``batch.obs``.

        :param model: the network to evaluate instead of ``self.model`` (the algorithm passes
            its target network here).
        :return: a Batch with ``logits`` (the Q-values ``(B, num_branches,
            action_per_branch)``), ``act`` (each branch's arg-max over its legal sub-actions, a
            numpy int array of shape ``(B, num_branches)``) and ``state`` (the model's next
            hidden state).
        """
        q_BNA, legal_q_BNA, hidden = self.evaluate(batch, state, model)
        act_BN = legal_q_BNA.argmax(dim=-1)
        return batch_of_parsed_values({"logits": q_BNA, "act": to_numpy(act_BN), "state": hidden})

    def evaluate(
        self, batch: Batch, state: PolicyState = None, model: nn.Module | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, PolicyState]:
        """Run the model: ``(Q-values, masked Q-values, next hidden state)``, both of shape
        ``(B, num_branches, action_per_branch)``; the masked ones are ``-inf`` for the
        sub-actions the observation's ``mask`` forbids (the same tensor when there is no mask).

        :raises TypeError: if the model does not return an ``(output, state)`` pair.
        :raises ValueError: if the Q-values do not have one row per branch and one column per
            sub-action value, or a branch's mask allows no sub-action.
        """
        obs, mask = q_network_input(batch)
        output = (model or self.model)(obs, state=state, info=batch.get("info"))
        if not isinstance(output, tuple) or len(output) != 2:
            raise TypeError(
                "the branching Q-network must return a pair (q_values, hidden_state), got "
                f"{type(output).__name__}"
            )
        q_BNA, hidden = output
        expected = (self.num_branches, self.action_per_branch)
        if q_BNA.ndim != 3 or tuple(q_BNA.shape[1:]) != expected:
            raise ValueError(
                f"the branching Q-network outputs Q-values of shape {tuple(q_BNA.shape)}, but "
                f"the action space {self.action_space} needs (batch_size, {expected[0]}, "
                f"{expected[1]}); check the network's num_branches and action_per_branch"
            )
        return q_BNA, mask_q_values(q_BNA, mask), hidden

    def add_exploration_noise(self, act: np.ndarray | Batch, batch: Batch) -> np.ndarray | Batch:
        """Replace each action (all its sub-actions) by a uniformly random legal one with
        probability epsilon: ``eps_training`` inside a training step, ``eps_inference``
        otherwise. The input array is not modified."""
        eps = self.eps_training if self.is_within_training_step else self.eps_inference
        if eps == 0.0:
            return act
        if isinstance(act, torch.Tensor):
            act = act.detach().cpu().numpy()
        if not isinstance(act, np.ndarray) or act.ndim != 2:
            raise TypeError(
                "BDQN exploration needs a numpy action array of shape (B, num_branches), got "
                f"{act!r}"
            )
        explore = np.random.rand(len(act)) < eps
        if not explore.any():
            return act
        legal_BNA = legal_actions_of(batch, (*act.shape, self.action_per_branch))
        act = act.copy()
        act[explore] = random_legal_actions(legal_BNA[explore])
        return act


class BDQN(QLearningOffPolicyAlgorithm[BDQNPolicy]):
    """Branching dueling Q-learning: every branch regresses onto one shared one-step target.

    For a transition ``(s, a, r, s')`` the target is ``r + gamma * mean_d Q_d(s', a'_d)``
    (``r`` alone when ``s'`` is terminal), where ``Q_d`` is branch ``d`` of the target network
    (the online model when ``target_update_freq == 0``) and ``a'_d`` its arg-max over the
    branch's legal sub-actions at ``s'`` (the online model's arg-max when ``is_double``). The
    loss is the squared TD error of each branch's chosen sub-action, averaged over branches and
    then over the (importance-weighted) batch.

    Truncated transitions (time limits) bootstrap from ``s'``; only terminated ones do not.
    The published implementation stops bootstrapping at truncation too; a time limit is not a
    terminal state of the task (Pardo et al. 2018, "Time Limits in Reinforcement Learning").

    :param policy: the BDQN policy whose branching ``model`` is trained.
    :param optim: the factory of the model's optimizer.
    :param gamma: discount factor in [0, 1].
    :param target_update_freq: copy the model into the target network every this many updates;
        0 uses no target network (the model bootstraps from itself).
    :param is_double: double Q-learning per branch: the online model picks each branch's next
        sub-action and the target network values it, which reduces over-estimation.
    """

    def __init__(
        self,
        *,
        policy: BDQNPolicy,
        optim: OptimizerFactory,
        gamma: float = 0.99,
        target_update_freq: int = 0,
        is_double: bool = True,
    ) -> None:
        super().__init__(
            policy=policy,
            optim=optim,
            gamma=gamma,
            n_step_return_horizon=1,
            target_update_freq=target_update_freq,
        )
        self.is_double = is_double

    def _target_q_compute_value(self, obs_next: np.ndarray | torch.Tensor | Batch) -> torch.Tensor:
        """The mean over branches of each branch's bootstrap value, shape ``(B,)``."""
        obs_batch = batch_of_parsed_values({"obs": obs_next, "info": Batch()})
        _, q_online_BNA, _ = self.policy.evaluate(obs_batch)
        if self.model_old is None:
            q_target_BNA = q_online_BNA
        else:
            q_target_BNA = self.policy.evaluate(obs_batch, model=self.model_old)[1]
        chooser_BNA = q_online_BNA if self.is_double else q_target_BNA
        next_act_BN1 = chooser_BNA.argmax(dim=-1, keepdim=True)
        return q_target_BNA.gather(-1, next_act_BN1).squeeze(-1).mean(dim=-1)

    def _update_with_batch(self, batch: Batch) -> SimpleLossTrainingStats:
        """One gradient step on the branch-averaged squared TD loss; stores each transition's
        TD error summed over branches in ``batch.weight`` (for a prioritized buffer)."""
        self._periodically_update_lagged_network_weights()
        q_BNA = self.policy.evaluate(batch)[0]
        act_BN = torch.as_tensor(batch.act, device=q_BNA.device, dtype=torch.long)
        if act_BN.shape != q_BNA.shape[:2]:
            raise ValueError(
                f"batch.act has shape {tuple(act_BN.shape)}, but BDQN needs one sub-action per "
                f"branch: {tuple(q_BNA.shape[:2])}"
            )
        q_BN = q_BNA.gather(-1, act_BN.unsqueeze(-1)).squeeze(-1)
        returns_B1 = batch.returns.reshape(-1, 1).to(device=q_BN.device, dtype=q_BN.dtype)
        td_error_BN = returns_B1 - q_BN
        per_sample_B = td_error_BN.pow(2).mean(dim=-1)
        weight = batch.__dict__.get("weight")
        if weight is not None:
            per_sample_B = per_sample_B * torch.as_tensor(
                weight, device=q_BN.device, dtype=q_BN.dtype
            )
        loss = per_sample_B.mean()
        (loss_value,) = self.optim.step_with_loss_values(loss)
        batch.weight = td_error_BN.detach().sum(dim=-1)
        return SimpleLossTrainingStats(loss=loss_value)
