"""Update rate of the library's BCQ next to the bare PyTorch update of ``benchmark/bare_bcq.py``.

The library's BCQ and the bare learner are built on the same shapes and data, the bare learner
gets the library's initial weights, and both are measured alternately (best of several windows,
one torch thread; the measurement is ``benchmark.common.measure``). One JSON line
per case: library and bare updates per second and their ratio (target: at least 0.9). The
default clock is this process's CPU time, which stays meaningful when other processes crowd
the cores (``--clock wall`` for wall-clock seconds).

* ``bcq``: Hopper-v5 shapes (obs 11, act 3) and the published MuJoCo sizes: 400x300
  perturbation network and critics, a 750x750 VAE with a latent of 6, 10 sampled actions per
  next state, batch 256;
* ``bcq_small``: Pendulum shapes (obs 3, act 1) and the learning test's sizes (64x64, a 32x32
  VAE), batch 256 (reported without a target: the library's fixed per-update cost of sampling
  the buffer and calling its modules weighs more on such small networks).

    python -m benchmark.update_rate_bcq [--algorithms bcq bcq_small] [--rounds 5] [--clock wall]
"""

import argparse
import functools
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

from benchmark.bare_bcq import BareBCQ
from benchmark.common import CLOCKS, Case, emit, in_training_step, measure, random_transitions
from tianshou.algorithm.imitation.bcq import BCQ, BCQPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import ReplayBuffer
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.continuous import VAE, ContinuousCritic, Perturbation

REPLAY_SIZE = 20_000
LR = 1e-3


def build_bcq(
    obs_dim: int, act_dim: int, hidden: list[int], vae_hidden: list[int], num_sampled: int = 10
) -> BCQ:
    """The library's BCQ: ``Net`` perturbation network and critics, an MLP VAE (latent twice
    the action width), Adam with lr 1e-3, phi 0.05, lmbda 0.75, raw actions in [-1, 1]."""
    latent_dim = 2 * act_dim

    def critic() -> ContinuousCritic:
        body = Net(state_shape=obs_dim, action_shape=act_dim, hidden_sizes=hidden, concat=True)
        return ContinuousCritic(preprocess_net=body)

    perturbation = Perturbation(
        preprocess_net=Net(
            state_shape=obs_dim + act_dim, action_shape=act_dim, hidden_sizes=hidden
        ),
        max_action=1.0,
        phi=0.05,
    )
    vae = VAE(
        encoder=MLP(input_dim=obs_dim + act_dim, hidden_sizes=vae_hidden),
        decoder=MLP(input_dim=obs_dim + latent_dim, output_dim=act_dim, hidden_sizes=vae_hidden),
        hidden_dim=vae_hidden[-1],
        latent_dim=latent_dim,
        max_action=1.0,
    )
    policy = BCQPolicy(
        actor_perturbation=perturbation,
        action_space=gym.spaces.Box(-1.0, 1.0, shape=(act_dim,)),
        critic=critic(),
        vae=vae,
    )
    return BCQ(
        policy=policy,
        actor_perturbation_optim=AdamOptimizerFactory(lr=LR),
        critic_optim=AdamOptimizerFactory(lr=LR),
        vae_optim=AdamOptimizerFactory(lr=LR),
        critic2=critic(),
        gamma=0.99,
        tau=0.005,
        lmbda=0.75,
        num_sampled_action=num_sampled,
    )


def load_bcq(bare: BareBCQ, library: BCQ) -> None:
    """Give ``bare`` the library's perturbation network, critics and VAE (and, as copies of
    them, its target networks, which equal the library's at construction)."""
    pairs = [
        (bare.perturbation, library.policy.actor_perturbation),
        (bare.critics[0], library.policy.critic),
        (bare.critics[1], library.critic2),
        (bare.vae, library.policy.vae),
    ]
    with torch.no_grad():
        for bare_net, library_net in pairs:
            bare_params, library_params = (
                list(bare_net.parameters()),
                list(library_net.parameters()),
            )
            if len(bare_params) != len(library_params):
                raise ValueError(f"{len(bare_params)} bare tensors for {len(library_params)}")
            for ours, theirs in zip(bare_params, library_params, strict=True):
                ours.copy_(theirs)
    bare.sync_targets()


def bcq_case(
    obs_dim: int, act_dim: int, hidden: list[int], vae_hidden: list[int], main: bool
) -> Case:
    batch_size = 256
    data = random_transitions(REPLAY_SIZE, obs_dim, act_dim, discrete=False)
    library = build_bcq(obs_dim, act_dim, hidden, vae_hidden)
    bare = BareBCQ(data, hidden, vae_hidden, batch_size)
    load_bcq(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    sizes = "x".join(map(str, hidden))
    return Case(
        "bcq" if main else "bcq_small",
        f"obs {obs_dim}, act {act_dim}, {sizes}, VAE {'x'.join(map(str, vae_hidden))}, "
        f"10 sampled actions, batch {batch_size}",
        in_training_step(library, lambda: library.update(buffer, batch_size)),
        bare.update,
        0.9 if main else None,
    )


CASES: dict[str, Callable[[], Case]] = {
    "bcq": functools.partial(bcq_case, 11, 3, [400, 300], [750, 750], main=True),
    "bcq_small": functools.partial(bcq_case, 3, 1, [64, 64], [32, 32], main=False),
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithms", nargs="*", choices=list(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per timed repeat")
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
