"""Gradient steps per second of the library's Q-learning family against bare PyTorch.

For each of C51, RainbowDQN, QRDQN, IQN, FQF and BDQN, the library algorithm and the bare update
of ``benchmark/bare_qlearning.py`` are built with the same networks and hyper-parameters and fed
the same transitions (a ``VectorReplayBuffer`` of 8 sub-buffers for the library, Rainbow's
prioritized; preallocated tensors for the bare loop). Their update rates are measured alternately
on one thread, best of several rounds, and printed as one JSON line per algorithm with the ratio
(target: at least 0.9, as SAC reaches in ``benchmark/train.py``). BDQN is measured twice: at
128x128 and batch 64 (``bdqn``) and at SAC's sizes, 256x256 and batch 256 (``bdqn_256``)::

    python -m benchmark.update_rate_qlearning [--algorithms c51 iqn] [--rounds 5] [--clock wall]

Both sides run with the allocator settings the trainers apply
(``tianshou.utils.host_memory.retain_freed_host_memory``): with glibc's defaults, whichever side's
heap happened to lie badly faulted its freed tensors in again on every update (up to 100 page
faults per update for bare C51, 800 for FQF), which swung the ratios by up to 0.15 from one
process to the next.

The default clock is this process's CPU time: on a machine whose cores other processes share,
wall-clock rates swing with their load, while the CPU time one single-threaded update takes does
not (``--clock wall`` measures wall-clock time, as ``benchmark/train.py`` does for SAC).
"""

import argparse
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from benchmark import bare_qlearning as bare
from benchmark.common import CLOCKS, Case, emit, in_training_step, measure
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm
from tianshou.algorithm.modelfree.bdqn import BDQN, BDQNPolicy
from tianshou.algorithm.modelfree.c51 import C51, C51Policy
from tianshou.algorithm.modelfree.fqf import FQF, FQFPolicy
from tianshou.algorithm.modelfree.iqn import IQN, IQNPolicy
from tianshou.algorithm.modelfree.qrdqn import QRDQN, QRDQNPolicy
from tianshou.algorithm.modelfree.rainbow import RainbowDQN
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, PrioritizedVectorReplayBuffer, ReplayBuffer, VectorReplayBuffer
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.branching import BranchingNet
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import (
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
    NoisyLinear,
)

NUM_STREAMS = 8
STREAM_LENGTH = 2500
DISCRETE = gym.spaces.Discrete(bare.NUM_ACTIONS)
BRANCHED = gym.spaces.MultiDiscrete([bare.ACTION_PER_BRANCH] * bare.NUM_BRANCHES)
QLEARNING_KWARGS: dict[str, Any] = {
    "optim": AdamOptimizerFactory(lr=bare.LR),
    "gamma": bare.GAMMA,
    "n_step_return_horizon": bare.N_STEP,
    "target_update_freq": bare.TARGET_UPDATE_FREQ,
}
HIDDEN2 = [bare.HIDDEN, bare.HIDDEN]


def library_c51() -> C51:
    net = Net(
        state_shape=bare.OBS_DIM,
        action_shape=bare.NUM_ACTIONS,
        hidden_sizes=HIDDEN2,
        softmax=True,
        num_atoms=bare.NUM_ATOMS,
    )
    return C51(policy=c51_policy(net), **QLEARNING_KWARGS)


def c51_policy(net: Net) -> C51Policy:
    return C51Policy(
        model=net,
        action_space=DISCRETE,
        num_atoms=bare.NUM_ATOMS,
        v_min=-bare.V_MAX,
        v_max=bare.V_MAX,
    )


def library_rainbow() -> RainbowDQN:
    noisy = {"linear_layer": NoisyLinear}
    net = Net(
        state_shape=bare.OBS_DIM,
        action_shape=bare.NUM_ACTIONS,
        hidden_sizes=HIDDEN2,
        softmax=True,
        num_atoms=bare.NUM_ATOMS,
        dueling_param=(noisy, noisy),
    )
    return RainbowDQN(policy=c51_policy(net), **QLEARNING_KWARGS)


def library_qrdqn() -> QRDQN:
    net = Net(
        state_shape=bare.OBS_DIM,
        action_shape=bare.NUM_ACTIONS,
        hidden_sizes=HIDDEN2,
        num_atoms=bare.NUM_QUANTILES,
    )
    policy = QRDQNPolicy(model=net, action_space=DISCRETE)
    return QRDQN(policy=policy, num_quantiles=bare.NUM_QUANTILES, **QLEARNING_KWARGS)


def quantile_net_kwargs() -> dict[str, Any]:
    return {
        "preprocess_net": Net(state_shape=bare.OBS_DIM, hidden_sizes=[bare.HIDDEN]),
        "action_shape": bare.NUM_ACTIONS,
        "hidden_sizes": [bare.HIDDEN],
        "num_cosines": bare.NUM_COSINES,
    }


def library_iqn() -> IQN:
    policy = IQNPolicy(
        model=ImplicitQuantileNetwork(**quantile_net_kwargs()),
        action_space=DISCRETE,
        online_sample_size=bare.IQN_SAMPLE_SIZE,
        target_sample_size=bare.IQN_SAMPLE_SIZE,
    )
    return IQN(policy=policy, **QLEARNING_KWARGS)


def library_fqf() -> FQF:
    policy = FQFPolicy(
        model=FullQuantileFunction(**quantile_net_kwargs()),
        fraction_model=FractionProposalNetwork(bare.NUM_FRACTIONS, bare.HIDDEN),
        action_space=DISCRETE,
    )
    return FQF(
        policy=policy,
        fraction_optim=TorchOptimizerFactory(torch.optim.RMSprop, lr=bare.FRACTION_LR),
        num_fractions=bare.NUM_FRACTIONS,
        ent_coef=bare.FQF_ENT_COEF,
        **QLEARNING_KWARGS,
    )


def library_bdqn(hidden: int = bare.HIDDEN) -> BDQN:
    net = BranchingNet(
        state_shape=bare.BDQN_OBS_DIM,
        num_branches=bare.NUM_BRANCHES,
        action_per_branch=bare.ACTION_PER_BRANCH,
        common_hidden_sizes=[hidden, hidden],
        value_hidden_sizes=[hidden],
        action_hidden_sizes=[hidden],
    )
    return BDQN(
        policy=BDQNPolicy(model=net, action_space=BRANCHED),
        optim=AdamOptimizerFactory(lr=bare.LR),
        gamma=bare.GAMMA,
        target_update_freq=bare.TARGET_UPDATE_FREQ,
    )


CARTPOLE = "CartPole-v1 obs 4, 2 actions, batch 64, 3-step returns, hidden 128x128"
HOPPER_BRANCHES = "Hopper-v5 obs 11, 3 branches x 25 values"
BDQN_DATA: dict[str, Any] = {
    "obs_dim": bare.BDQN_OBS_DIM,
    "act_shape": (bare.NUM_BRANCHES,),
    "num_values": bare.ACTION_PER_BRANCH,
}
# SAC's benchmark sizes (``benchmark/train.py``), at which ``bdqn_256`` measures BDQN as well:
# at 128x128 and batch 64 its three forward passes of five MLPs each are short enough for the
# library's fixed per-update cost (sampling, n-step targets, module calls) to show.
SAC_HIDDEN = 256
SAC_BATCH = 256


@dataclass(frozen=True)
class Setup:
    """One algorithm of the comparison: how to build both sides and what data they learn from."""

    build_library: Callable[[], OffPolicyAlgorithm]
    build_bare: Callable[[bare.Transitions], bare.BareQLearner]
    shapes: str
    obs_dim: int = bare.OBS_DIM
    act_shape: tuple[int, ...] = ()
    num_values: int = bare.NUM_ACTIONS
    prioritized: bool = False
    batch_size: int = bare.BATCH


CASES = {
    "c51": Setup(library_c51, bare.BareC51, f"{CARTPOLE}, 51 atoms"),
    "rainbow": Setup(
        library_rainbow,
        bare.BareRainbow,
        f"{CARTPOLE}, 51 atoms, noisy dueling heads, prioritized replay",
        prioritized=True,
    ),
    "qrdqn": Setup(library_qrdqn, bare.BareQRDQN, f"{CARTPOLE}, 50 quantiles"),
    "iqn": Setup(
        library_iqn, bare.BareIQN, f"{CARTPOLE} (body + head), 8 sampled fractions, 64 cosines"
    ),
    "fqf": Setup(library_fqf, bare.BareFQF, f"{CARTPOLE} (body + head), 32 proposed fractions"),
    "bdqn": Setup(
        library_bdqn,
        bare.BareBDQN,
        f"{HOPPER_BRANCHES}, batch 64, 1-step, hidden 128x128",
        **BDQN_DATA,
    ),
    "bdqn_256": Setup(
        functools.partial(library_bdqn, SAC_HIDDEN),
        functools.partial(bare.BareBDQN, hidden=SAC_HIDDEN, batch_size=SAC_BATCH),
        f"{HOPPER_BRANCHES}, batch {SAC_BATCH}, 1-step, hidden {SAC_HIDDEN}x{SAC_HIDDEN}",
        **BDQN_DATA,
        batch_size=SAC_BATCH,
    ),
}


def transitions(case: Setup, stream_length: int = STREAM_LENGTH) -> bare.Transitions:
    """The synthetic transitions both sides of ``case`` learn from (8 streams)."""
    return bare.synthetic_transitions(
        NUM_STREAMS, stream_length, case.obs_dim, case.act_shape, case.num_values
    )


def library_buffer(data: bare.Transitions, prioritized: bool) -> ReplayBuffer:
    """A vector buffer (one sub-buffer per stream) holding ``data`` in the same row order."""
    size = len(data.rew)
    buffer: ReplayBuffer = (
        PrioritizedVectorReplayBuffer(size, NUM_STREAMS, alpha=bare.PRIO_ALPHA, beta=bare.PRIO_BETA)
        if prioritized
        else VectorReplayBuffer(size, NUM_STREAMS)
    )
    ids = np.arange(NUM_STREAMS)
    for t in range(data.stream_length):
        rows = ids * data.stream_length + t
        buffer.add(
            Batch(
                obs=data.obs[rows],
                act=data.act[rows],
                rew=data.rew[rows],
                terminated=data.terminated[rows],
                truncated=data.truncated[rows],
                obs_next=data.obs_next[rows],
            ),
            buffer_ids=ids,
        )
    return buffer


def updates_per_second(
    name: str, rounds: int, min_time: float, clock: str = "cpu"
) -> dict[str, float | str | None]:
    """Update rates of the library and the bare loop for ``name``, measured alternately
    (:func:`benchmark.common.measure`, three windows per side and round).

    :param name: a key of :data:`CASES`.
    :param rounds: alternating measurement rounds; the best of each side counts.
    :param min_time: seconds (of ``clock``) per timed window.
    :param clock: a key of :data:`benchmark.common.CLOCKS`.
    """
    setup = CASES[name]
    data = transitions(setup)
    algorithm = setup.build_library()
    buffer = library_buffer(data, setup.prioritized)
    bare_learner = setup.build_bare(data)
    case = Case(
        name,
        setup.shapes,
        in_training_step(algorithm, lambda: algorithm.update(buffer, setup.batch_size)),
        bare_learner.update,
    )
    return measure(case, rounds, min_time, clock, repeat=3)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithms", nargs="*", choices=list(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per timed repeat")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()  # the trainers' allocator settings, for every side alike
    torch.manual_seed(0)
    for name in args.algorithms:
        emit(updates_per_second(name, args.rounds, args.min_time, args.clock))


if __name__ == "__main__":
    main()
