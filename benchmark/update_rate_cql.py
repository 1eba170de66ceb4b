"""Update rate of CQL next to a bare PyTorch update of the same work.

It builds the library's CQL and :class:`benchmark.bare_cql.BareCQL` on Hopper-v5 shapes (obs 11,
act 3), 256x256 networks, batch 256 and 10 repeated actions per proposal, gives the bare learner
the library's initial weights, and measures both alternately (best of several windows, one torch
thread, this process's CPU time by default). It prints one JSON line: library and bare updates
per second and their ratio (target: at least 0.9). Both run with a learned entropy coefficient
and the Lagrange multiplier; Cal-QL's bound is off (``calibrated=False``), since random data has
no meaningful returns-to-go.

    python -m benchmark.update_rate_cql [--rounds 5] [--clock wall]
"""

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from benchmark.bare_cql import BareCQL
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
from tianshou.algorithm.imitation.cql import CQL
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import ReplayBuffer
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic

REPLAY_SIZE = 20_000
ACTOR_LR, CRITIC_LR, ALPHA_LR, CQL_ALPHA_LR = 1e-4, 3e-4, 1e-4, 1e-4


def build_cql(obs_dim: int, act_dim: int, hidden: int, num_repeat_actions: int) -> CQL:
    """The library's CQL with the hyper-parameters :class:`BareCQL` defaults to."""
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_dim, hidden_sizes=[hidden, hidden]),
        action_shape=act_dim,
        unbounded=True,
        conditioned_sigma=True,
    )

    def critic() -> ContinuousCritic:
        return ContinuousCritic(
            preprocess_net=Net(
                state_shape=obs_dim,
                action_shape=act_dim,
                hidden_sizes=[hidden, hidden],
                concat=True,
            )
        )

    return CQL(
        policy=SACPolicy(actor=actor, action_space=box(act_dim)),
        policy_optim=AdamOptimizerFactory(lr=ACTOR_LR),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=CRITIC_LR),
        critic2=critic(),
        alpha=AutoAlpha(-float(act_dim), 0.0, AdamOptimizerFactory(lr=ALPHA_LR)),
        cql_alpha_lr=CQL_ALPHA_LR,
        num_repeat_actions=num_repeat_actions,
        calibrated=False,
    )


def load_cql(bare: BareCQL, library: CQL) -> None:
    """Give ``bare`` the library's actor (mean and log-std heads stacked), critics, target
    critics, entropy coefficient and Lagrange multiplier."""
    actor: Any = library.policy.actor
    head_w = torch.cat([actor.mu.model[0].weight, actor.sigma.model[0].weight])
    head_b = torch.cat([actor.mu.model[0].bias, actor.sigma.model[0].bias])
    copy_into(list(bare.actor.parameters()), [*actor.preprocess.parameters(), head_w, head_b])
    for bare_net, library_net in zip(
        [*bare.critics, *bare.targets],
        [library.critic, library.critic2, library.critic_old, library.critic2_old],
        strict=True,
    ):
        copy_into(list(bare_net.parameters()), list(library_net.parameters()))
    copy_into(
        [bare.log_alpha, bare.log_alpha_prime],
        [library.alpha._log_alpha, library.cql_log_alpha.log_alpha],  # type: ignore[attr-defined]
    )


def cql_case(hidden: int = 256, batch_size: int = 256, num_repeat_actions: int = 10) -> Case:
    data = random_transitions(REPLAY_SIZE, HOPPER_OBS, HOPPER_ACT, discrete=False)
    library = build_cql(HOPPER_OBS, HOPPER_ACT, hidden, num_repeat_actions)
    bare = BareCQL(data, hidden, batch_size, num_repeat_actions)
    load_cql(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    return Case(
        "cql",
        f"obs {HOPPER_OBS}, act {HOPPER_ACT}, {hidden}x{hidden}, batch {batch_size}, "
        f"{num_repeat_actions} repeated actions, Lagrangian, learned alpha",
        in_training_step(library, lambda: library.update(buffer, batch_size)),
        bare.update,
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per timed repeat")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()  # the trainers' allocator settings, for every side alike
    torch.manual_seed(0)
    np.random.seed(0)
    emit(measure(cql_case(), args.rounds, args.min_time, args.clock))


if __name__ == "__main__":
    main()
