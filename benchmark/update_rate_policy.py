"""Update rates of discrete SAC, REDQ, NPG and TRPO next to bare PyTorch updates of the same work.

For each algorithm it builds the library's algorithm and the matching bare learner of
``benchmark/bare_policy_gradient.py`` on the same shapes and data, gives the bare learner the
library's initial weights, and measures both alternately (best of several windows, one torch
thread). It prints one JSON line per algorithm: library and bare updates per second, and their
ratio (target: at least 0.9, as SAC reaches). Both sides run with the allocator settings the
trainers apply (``tianshou.utils.host_memory``), so freed tensors are reused, not faulted in
again. The default clock is this process's CPU time, which stays meaningful when other processes
crowd the cores; ``--clock wall`` times wall-clock seconds, as ``benchmark/train.py`` does for
SAC.

* ``discrete_sac``: CartPole-like shapes (obs 4, 2 actions), 256x256 networks and batch 256 (the
  sizes of SAC's case in ``benchmark/train.py``), twin critics, learned alpha;
  ``discrete_sac_small`` the same with the learning test's 64x64 networks and batch 64
  (reported without a target);
* ``redq``: Hopper-v5 shapes (obs 11, act 3), 256x256 networks, an ensemble of 10 critics with
  ``EnsembleLinear`` layers, subsets of 2, actor delay 20, batch 256, learned alpha; one update
  is one critic step (plus the actor step every 20th update);
* ``npg`` / ``trpo``: Hopper-v5 shapes, 64x64 tanh networks, one update on a 2048-transition
  rollout as one minibatch (GAE, normalised advantages, 10 conjugate-gradient steps with
  damping 0.1, TRPO's line search, 20 critic steps).

    python -m benchmark.update_rate_policy [--algorithms redq npg ...] [--rounds 5] [--clock wall]
"""

import argparse
import functools
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from benchmark.bare_policy_gradient import BareDiscreteSAC, BareNPG, BareREDQ, BareTRPO
from benchmark.common import (
    CLOCKS,
    HOPPER_ACT,
    HOPPER_OBS,
    Case,
    box,
    copy_into,
    emit,
    in_training_step,
    measure,
    random_transitions,
)
from tianshou.algorithm import NPG, REDQ, TRPO, DiscreteSAC
from tianshou.algorithm.modelfree.discrete_sac import DiscreteSACPolicy
from tianshou.algorithm.modelfree.redq import REDQPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import ReplayBuffer
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.common import EnsembleLinear, Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

REPLAY_SIZE = 20_000
ROLLOUT_SIZE = 2048
DSAC_TARGET_ENTROPY = 0.5


# -------------------------------------------------------------------------- library algorithms
def build_discrete_sac(obs_dim: int, num_actions: int, hidden: int) -> DiscreteSAC:
    """The library's discrete SAC: twin ``DiscreteCritic`` s, a logits actor, learned alpha."""

    def body() -> Net:
        return Net(state_shape=obs_dim, hidden_sizes=[hidden, hidden])

    def critic() -> DiscreteCritic:
        return DiscreteCritic(preprocess_net=body(), last_size=num_actions)

    actor = DiscreteActor(preprocess_net=body(), action_shape=num_actions, softmax_output=False)
    return DiscreteSAC(
        policy=DiscreteSACPolicy(actor=actor, action_space=gym.spaces.Discrete(num_actions)),
        policy_optim=AdamOptimizerFactory(lr=3e-4),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.99,
        alpha=AutoAlpha(DSAC_TARGET_ENTROPY, 0.0, AdamOptimizerFactory(lr=3e-4)),
    )


def build_redq(
    obs_dim: int, act_dim: int, hidden: int, ensemble_size: int, subset_size: int, actor_delay: int
) -> REDQ:
    """The library's REDQ with an ``EnsembleLinear`` critic and a learned alpha."""
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[hidden, hidden]),
        action_shape=act_dim,
        unbounded=True,
        conditioned_sigma=True,
    )
    linear = functools.partial(EnsembleLinear, ensemble_size)
    body = Net(
        state_shape=obs_dim,
        action_shape=act_dim,
        hidden_sizes=[hidden, hidden],
        concat=True,
        linear_layer=linear,
    )
    return REDQ(
        policy=REDQPolicy(actor=actor, action_space=box(act_dim)),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=ContinuousCritic(preprocess_net=body, linear_layer=linear, flatten_input=False),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        ensemble_size=ensemble_size,
        subset_size=subset_size,
        actor_delay=actor_delay,
        tau=0.005,
        gamma=0.99,
        alpha=AutoAlpha(-float(act_dim), 0.0, AdamOptimizerFactory(lr=3e-4)),
    )


def build_natural_gradient(
    algorithm: type[NPG],
    obs_dim: int,
    act_dim: int,
    hidden: int,
    critic_iters: int,
    **kwargs: float,
) -> NPG:
    """The library's NPG or TRPO with 64x64-style tanh networks and a state-independent std."""

    def body() -> Net:
        return Net(state_shape=obs_dim, hidden_sizes=[hidden, hidden], activation=nn.Tanh)

    actor = ContinuousActorProbabilistic(
        preprocess_net=body(), action_shape=act_dim, unbounded=True
    )
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=lambda loc_scale: torch.distributions.Independent(
            torch.distributions.Normal(*loc_scale), 1
        ),
        action_space=box(act_dim),
    )
    return algorithm(
        policy=policy,
        critic=ContinuousCritic(preprocess_net=body()),
        optim=AdamOptimizerFactory(lr=1e-3),
        optim_critic_iters=critic_iters,
        gamma=0.99,
        gae_lambda=0.95,
        advantage_normalization=True,
        **kwargs,
    )


# --------------------------------------------------------------- library weights into the bare
def load_discrete_sac(bare: BareDiscreteSAC, library: DiscreteSAC) -> None:
    """Give ``bare`` the library's actor, critics, target critics and alpha."""
    copy_into(list(bare.actor.parameters()), list(library.policy.actor.parameters()))
    for bare_net, library_net in zip(
        [*bare.critics, *bare.targets],
        [library.critic, library.critic2, library.critic_old, library.critic2_old],
        strict=True,
    ):
        copy_into(list(bare_net.parameters()), list(library_net.parameters()))
    copy_into([bare.log_alpha], [library.alpha._log_alpha])  # type: ignore[union-attr]


def load_redq(bare: BareREDQ, library: REDQ) -> None:
    """Give ``bare`` the library's actor (the mean and log-std heads stacked), ensemble critic,
    target critic and alpha."""
    actor = library.policy.actor
    body = list(actor.preprocess.parameters())
    head_w = torch.cat([actor.mu.model[0].weight, actor.sigma.model[0].weight])
    head_b = torch.cat([actor.mu.model[0].bias, actor.sigma.model[0].bias])
    copy_into(list(bare.actor.parameters()), [*body, head_w, head_b])
    for bare_net, library_net in [(bare.critic, library.critic), (bare.target, library.critic_old)]:
        layers = [m for m in library_net.modules() if isinstance(m, EnsembleLinear)]
        copy_into(list(bare_net.weights), [m.weight for m in layers])
        copy_into(list(bare_net.biases), [m.bias for m in layers])  # type: ignore[misc]
    copy_into([bare.log_alpha], [library.alpha._log_alpha])  # type: ignore[union-attr]


def load_natural_gradient(bare: BareNPG, library: NPG) -> None:
    """Give ``bare`` the library's actor (with its log std) and critic."""
    actor = library.policy.actor
    copy_into(
        [*bare.actor.parameters(), bare.log_std],
        [*actor.preprocess.parameters(), *actor.mu.parameters(), actor.sigma_param],
    )
    copy_into(list(bare.critic.parameters()), list(library.critic.parameters()))


# -------------------------------------------------------------------------------------- cases
def discrete_sac_case(hidden: int = 256, batch_size: int = 256) -> Case:
    """Discrete SAC on CartPole's shapes; the default networks and batch are SAC's benchmark
    sizes, which carry the target ratio. Smaller ones (the learning test's 64x64, batch 64)
    are reported without a target: there the library's fixed per-update cost (about 1 ms on
    this machine: buffer sampling, n-step targets, module and optimizer calls) dominates."""
    obs_dim, num_actions = 4, 2
    main = (hidden, batch_size) == (256, 256)
    data = random_transitions(REPLAY_SIZE, obs_dim, num_actions, discrete=True)
    library = build_discrete_sac(obs_dim, num_actions, hidden)
    bare = BareDiscreteSAC(
        data, num_actions, hidden, batch_size, target_entropy=DSAC_TARGET_ENTROPY
    )
    load_discrete_sac(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    return Case(
        "discrete_sac" if main else "discrete_sac_small",
        f"obs {obs_dim}, {num_actions} actions, {hidden}x{hidden}, batch {batch_size}",
        in_training_step(library, lambda: library.update(buffer, batch_size)),
        bare.update,
        0.9 if main else None,
    )


def redq_case() -> Case:
    hidden, ensemble, subset, delay, batch_size = 256, 10, 2, 20, 256
    data = random_transitions(REPLAY_SIZE, HOPPER_OBS, HOPPER_ACT, discrete=False)
    library = build_redq(HOPPER_OBS, HOPPER_ACT, hidden, ensemble, subset, delay)
    bare = BareREDQ(data, hidden, ensemble, subset, delay, batch_size)
    load_redq(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    return Case(
        "redq",
        f"obs {HOPPER_OBS}, act {HOPPER_ACT}, {hidden}x{hidden}, ensemble {ensemble}, subset "
        f"{subset}, actor delay {delay}, batch {batch_size}",
        in_training_step(library, lambda: library.update(buffer, batch_size)),
        bare.update,
    )


def natural_gradient_case(name: str) -> Case:
    hidden, critic_iters = 64, 20
    data = random_transitions(ROLLOUT_SIZE, HOPPER_OBS, HOPPER_ACT, discrete=False)
    bare: BareNPG
    if name == "trpo":
        library = build_natural_gradient(TRPO, HOPPER_OBS, HOPPER_ACT, hidden, critic_iters)
        bare = BareTRPO(data, hidden=hidden, critic_iters=critic_iters)
    else:
        library = build_natural_gradient(
            NPG, HOPPER_OBS, HOPPER_ACT, hidden, critic_iters, trust_region_size=0.1
        )
        bare = BareNPG(data, hidden=hidden, critic_iters=critic_iters, step_size=0.1)
    load_natural_gradient(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    return Case(
        name,
        f"obs {HOPPER_OBS}, act {HOPPER_ACT}, {hidden}x{hidden} tanh, rollout {ROLLOUT_SIZE} as "
        f"one minibatch, {critic_iters} critic steps, 10 CG steps",
        in_training_step(library, lambda: library.update(buffer, None, 1)),
        bare.update,
    )


CASES: dict[str, Callable[[], Case]] = {
    "discrete_sac": discrete_sac_case,
    "discrete_sac_small": functools.partial(discrete_sac_case, hidden=64, batch_size=64),
    "redq": redq_case,
    "npg": functools.partial(natural_gradient_case, "npg"),
    "trpo": functools.partial(natural_gradient_case, "trpo"),
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithms", nargs="*", choices=list(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per timed repeat")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()  # the trainers' allocator settings, for every side alike
    for name in args.algorithms:
        torch.manual_seed(0)
        np.random.seed(0)
        emit(measure(CASES[name](), args.rounds, args.min_time, args.clock))


if __name__ == "__main__":
    main()
