"""The networks and policies of the procedural MuJoCo scripts, sized by ``--hidden-sizes``,
and the entropy coefficient of the maximum-entropy ones.

Off-policy actors and critics use ReLU layers; the on-policy scripts' actor-critic uses tanh
layers initialised for on-policy learning (:func:`on_policy_actor_critic`). The offline scripts
use the same networks.
"""

import argparse
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution, Independent, Normal

from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha
from tianshou.algorithm.optim import (
    AdamOptimizerFactory,
    LRSchedulerFactoryLinear,
    OptimizerFactory,
)
from tianshou.distributed import current_rank_group
from tianshou.exploration import GaussianNoise
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)


def _spaces(env: gym.Env) -> tuple[Any, Any]:
    return env.observation_space.shape, env.action_space.shape


def probabilistic_actor(args: argparse.Namespace, env: gym.Env) -> ContinuousActorProbabilistic:
    """The SAC/REDQ actor: a state-conditioned Gaussian on ``--hidden-sizes`` ReLU layers."""
    obs_shape, act_shape = _spaces(env)
    return ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=args.hidden_sizes),
        action_shape=act_shape,
        unbounded=True,
        conditioned_sigma=True,
    ).to(args.device)


def deterministic_actor(args: argparse.Namespace, env: gym.Env) -> ContinuousActorDeterministic:
    """The DDPG/TD3 actor: ``--hidden-sizes`` ReLU layers and a tanh output in [-1, 1]."""
    obs_shape, act_shape = _spaces(env)
    return ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=args.hidden_sizes),
        action_shape=act_shape,
    ).to(args.device)


def deterministic_policy(args: argparse.Namespace, env: gym.Env) -> ContinuousDeterministicPolicy:
    """The DDPG/TD3 policy on :func:`deterministic_actor`, exploring with Gaussian noise of std
    ``--exploration-noise``."""
    return ContinuousDeterministicPolicy(
        actor=deterministic_actor(args, env),
        exploration_noise=GaussianNoise(sigma=args.exploration_noise),
        action_space=env.action_space,
    )


def q_critic(args: argparse.Namespace, env: gym.Env) -> ContinuousCritic:
    """A Q-network of the concatenated observation and action on ``--hidden-sizes`` layers."""
    obs_shape, act_shape = _spaces(env)
    net = Net(
        state_shape=obs_shape, action_shape=act_shape, hidden_sizes=args.hidden_sizes, concat=True
    )
    return ContinuousCritic(preprocess_net=net).to(args.device)


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    """A diagonal Gaussian over the action vector (one log-probability per action).

    The actor's output is the pair ``(loc, scale)``, passed whole to the distribution function.
    """
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def on_policy_actor_critic(
    args: argparse.Namespace, env: gym.Env
) -> tuple[ContinuousActorProbabilistic, ContinuousCritic]:
    """A Gaussian actor and a state-value critic on ``--hidden-sizes`` tanh layers.

    Initialised as Andrychowicz et al. (2020) recommend for on-policy methods: orthogonal
    weights, zero biases, a state-independent log standard deviation of -0.5, and a last policy
    layer scaled by 0.01 so that the policy starts near zero mean.
    """
    obs_shape, act_shape = _spaces(env)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(
            state_shape=obs_shape, hidden_sizes=args.hidden_sizes, activation=nn.Tanh
        ),
        action_shape=act_shape,
        unbounded=True,
    ).to(args.device)
    critic = ContinuousCritic(
        preprocess_net=Net(
            state_shape=obs_shape, hidden_sizes=args.hidden_sizes, activation=nn.Tanh
        )
    ).to(args.device)
    nn.init.constant_(actor.sigma_param, -0.5)
    for module in [*actor.modules(), *critic.modules()]:
        if isinstance(module, nn.Linear):
            nn.init.orthogonal_(module.weight, gain=np.sqrt(2))
            nn.init.zeros_(module.bias)
    for module in actor.mu.modules():
        if isinstance(module, nn.Linear):
            module.weight.data.mul_(0.01)
    return actor, critic


def gaussian_policy(
    args: argparse.Namespace, actor: nn.Module, env: gym.Env
) -> ProbabilisticActorPolicy:
    """The on-policy scripts' policy: :func:`gaussian` actions, bounded by
    ``--action-bound-method``, mean actions in testing with ``--deterministic-eval``."""
    return ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=gaussian,
        deterministic_eval=args.deterministic_eval,
        action_space=env.action_space,
        action_scaling=True,
        action_bound_method=args.action_bound_method,
    )


def with_lr_decay(optim: OptimizerFactory, args: argparse.Namespace) -> OptimizerFactory:
    """``optim`` with a learning rate decaying linearly to 0 over the run if ``--lr-decay``.

    In a data-parallel run an epoch's env steps are those of all ranks, so each update stands
    for ``world_size`` collections.
    """
    if not args.lr_decay:
        return optim
    return optim.with_lr_scheduler_factory(
        LRSchedulerFactoryLinear(
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps
            * current_rank_group().world_size,
        )
    )


def entropy_alpha(args: argparse.Namespace, env: gym.Env) -> float | AutoAlpha:
    """The entropy coefficient of ``args`` (options of
    :func:`~tianshou.scripts.mujoco.cli.add_alpha_options`): ``--alpha`` fixed, or with
    ``--auto-alpha`` tuned by Adam (``--alpha-lr``) towards an entropy of ``-dim(A)``."""
    if not args.auto_alpha:
        return float(args.alpha)
    return AutoAlpha(
        target_entropy=-float(np.prod(env.action_space.shape)),  # type: ignore[arg-type]
        log_alpha=0.0,
        optim=AdamOptimizerFactory(lr=args.alpha_lr),
    )
