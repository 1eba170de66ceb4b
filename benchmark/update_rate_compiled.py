"""Eager against compiled updates (``Algorithm.compile_update``) per second, and the compile time.

For each algorithm and network width it builds the library's algorithm and a copy of it with the
compiled update switched on (same weights, same replay data; on a GPU, ``--device cuda``, a
second copy compiled with CUDA graphs). Each side runs its first updates from the same seeds:
this compiles the compiled copies (the seconds it takes are reported separately, as
``compiled_compile_s``) and checks their losses against the eager ones
(``compiled_loss_max_rel_diff``). Then all sides are timed alternately: best of several
windows, one torch thread, this process's CPU time on the CPU and wall-clock time on a GPU
(``--clock`` chooses; the compile time is always wall-clock, since inductor compiles in worker
processes). One JSON line per case:

* ``sac_64`` / ``sac_256``: Hopper-v5 shapes (obs 11, act 3), twin critics, learned alpha,
  batch 256, 64x64 or 256x256 networks;
* ``td3_64`` / ``td3_256``: the same shapes, actor delay 2 (one update: a critic step, and an
  actor step every second update);
* ``dqn_64`` / ``dqn_256``: CartPole shapes (obs 4, 2 actions), batch 64, target network
  copied every 100 updates;
* ``ppo_64`` / ``ppo_256``: Hopper-v5 shapes, tanh networks, a 2048-transition rollout; one
  update is one pass over it (GAE, then 32 minibatches of 64 with gradient clipping).

``compiled_speedup`` is compiled over eager updates per second; ``compiled_break_even_updates``
is how many updates the compile time takes to pay back (None where compiling is not faster);
the ``cuda_graphs_`` fields are the same for the CUDA-graph copy.

``--mode max-autotune`` compiles with inductor's autotuning (on the CPU: its C++ GEMM templates
with the bias and activation fused in), which takes several times longer to compile.

    python -m benchmark.update_rate_compiled [--cases sac_64 dqn_256 ...] [--rounds 5]
        [--clock wall] [--mode max-autotune] [--device cuda]
"""

import argparse
import copy
import functools
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from benchmark.common import (
    CLOCKS,
    HOPPER_ACT,
    HOPPER_OBS,
    box,
    emit,
    random_transitions,
    seconds_per_call,
)
from tianshou.algorithm import DQN, PPO, SAC, TD3
from tianshou.algorithm.algorithm_base import Algorithm, OnPolicyAlgorithm
from tianshou.algorithm.compiled_update import CompileMode
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import ReplayBuffer
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)
from tianshou.utils.torch_utils import policy_within_training_step

CARTPOLE_OBS, CARTPOLE_ACTIONS = 4, 2
REPLAY_SIZE = 20_000
ROLLOUT_SIZE = 2048
COMPILE_UPDATES = 3


def _critic(hidden: int) -> ContinuousCritic:
    body = Net(
        state_shape=HOPPER_OBS, action_shape=HOPPER_ACT, hidden_sizes=[hidden] * 2, concat=True
    )
    return ContinuousCritic(preprocess_net=body)


def build_sac(hidden: int) -> Algorithm:
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=HOPPER_OBS, hidden_sizes=[hidden] * 2),
        action_shape=HOPPER_ACT,
        unbounded=True,
        conditioned_sigma=True,
    )
    return SAC(
        policy=SACPolicy(actor=actor, action_space=box(HOPPER_ACT)),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=_critic(hidden),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        alpha=AutoAlpha(-float(HOPPER_ACT), 0.0, AdamOptimizerFactory(lr=3e-4)),
    )


def build_td3(hidden: int) -> Algorithm:
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=HOPPER_OBS, hidden_sizes=[hidden] * 2),
        action_shape=HOPPER_ACT,
    )
    space = box(HOPPER_ACT)
    return TD3(
        policy=ContinuousDeterministicPolicy(actor=actor, action_space=space),
        policy_optim=AdamOptimizerFactory(lr=3e-4),
        critic=_critic(hidden),
        critic_optim=AdamOptimizerFactory(lr=3e-4),
    )


def build_dqn(hidden: int) -> Algorithm:
    model = Net(state_shape=CARTPOLE_OBS, action_shape=CARTPOLE_ACTIONS, hidden_sizes=[hidden] * 2)
    space = gym.spaces.Discrete(CARTPOLE_ACTIONS)
    return DQN(
        policy=DiscreteQLearningPolicy(model=model, action_space=space),
        optim=AdamOptimizerFactory(lr=1e-3),
        target_update_freq=100,
    )


def build_ppo(hidden: int) -> Algorithm:
    def body() -> Net:
        return Net(state_shape=HOPPER_OBS, hidden_sizes=[hidden] * 2, activation=nn.Tanh)

    actor = ContinuousActorProbabilistic(
        preprocess_net=body(), action_shape=HOPPER_ACT, unbounded=True
    )
    return PPO(
        policy=ProbabilisticActorPolicy(
            actor=actor,
            dist_fn=_gaussian,
            action_space=box(HOPPER_ACT),
        ),
        critic=ContinuousCritic(preprocess_net=body()),
        optim=AdamOptimizerFactory(lr=3e-4),
        max_grad_norm=0.5,
    )


def _gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> torch.distributions.Distribution:
    return torch.distributions.Independent(torch.distributions.Normal(*loc_scale), 1)


# name -> (builder, observation width, action width or count, discrete, (mini)batch size,
# transitions in the buffer)
CASES: dict[str, tuple[Callable[[], Algorithm], int, int, bool, int, int]] = {
    f"{name}_{hidden}": (functools.partial(build, hidden), obs, act, discrete, batch, size)
    for hidden in (64, 256)
    for name, build, obs, act, discrete, batch, size in (
        ("sac", build_sac, HOPPER_OBS, HOPPER_ACT, False, 256, REPLAY_SIZE),
        ("td3", build_td3, HOPPER_OBS, HOPPER_ACT, False, 256, REPLAY_SIZE),
        ("dqn", build_dqn, CARTPOLE_OBS, CARTPOLE_ACTIONS, True, 64, REPLAY_SIZE),
        ("ppo", build_ppo, HOPPER_OBS, HOPPER_ACT, False, 64, ROLLOUT_SIZE),
    )
}


def _updater(algorithm: Algorithm, buffer: ReplayBuffer, batch_size: int) -> Callable[[], Any]:
    def update() -> Any:
        with policy_within_training_step(algorithm.policy):
            if isinstance(algorithm, OnPolicyAlgorithm):  # one pass over the rollout
                return algorithm.update(buffer, batch_size, 1)
            return algorithm.update(buffer, batch_size)  # type: ignore[attr-defined]

    return update


def _first_losses(update: Callable[[], Any]) -> list[dict[str, float]]:
    """The losses of the first ``COMPILE_UPDATES`` updates, from fixed seeds (so every side
    samples the same batches and noise); on a compiled side these updates compile."""
    torch.manual_seed(1)
    np.random.seed(1)
    return [update().get_loss_stats_dict() for _ in range(COMPILE_UPDATES)]


def _max_relative_difference(a: list[dict[str, float]], b: list[dict[str, float]]) -> float:
    return max(
        abs(x[key] - y[key]) / max(abs(x[key]), 1e-6)
        for x, y in zip(a, b, strict=True)
        for key in x
    )


def measure(
    name: str,
    rounds: int,
    min_time: float,
    clock: str,
    mode: CompileMode = "default",
    device: str = "cpu",
) -> dict[str, Any]:
    """Compile the case's compiled copies (with CUDA graphs too on a GPU) while checking their
    first losses against the eager ones, then time all sides alternately (best of ``rounds``)."""
    build, obs_dim, act_dim, discrete, batch_size, size = CASES[name]
    torch.manual_seed(0)
    np.random.seed(0)
    buffer = ReplayBuffer.from_data(**random_transitions(size, obs_dim, act_dim, discrete))
    eager = build().to(device)
    # each side samples from its own copy of the buffer (and of its random generator)
    updates = {"eager": _updater(eager, copy.deepcopy(buffer), batch_size)}
    compilers = {}
    variants = {"compiled": False, "cuda_graphs": True} if device != "cpu" else {"compiled": False}
    for variant, cuda_graphs in variants.items():
        algorithm = copy.deepcopy(eager)
        compilers[variant] = algorithm.compile_update(mode, cuda_graphs=cuda_graphs)
        updates[variant] = _updater(algorithm, copy.deepcopy(buffer), batch_size)
    losses = {side: _first_losses(update) for side, update in updates.items()}
    timer = CLOCKS[clock]
    seconds = dict.fromkeys(updates, float("inf"))
    for _ in range(rounds):  # alternate, so drifting machine load hits every side alike
        for side, update in updates.items():
            per_call = seconds_per_call(update, min_time, repeat=2, clock=timer)
            seconds[side] = min(seconds[side], per_call)
    record: dict[str, Any] = {
        "bench": f"{name}_update_compiled",
        "device": torch.cuda.get_device_name() if device != "cpu" else "cpu",
        "batch_size": batch_size,
        "mode": mode,
        "eager_updates_per_s": 1 / seconds["eager"],
    }
    for variant, compiler in compilers.items():
        saved_per_update = seconds["eager"] - seconds[variant]
        record |= {
            f"{variant}_updates_per_s": 1 / seconds[variant],
            f"{variant}_speedup": seconds["eager"] / seconds[variant],
            f"{variant}_compile_s": compiler.compile_seconds,
            f"{variant}_graphs": compiler.num_compiled,
            f"{variant}_break_even_updates": (
                round(compiler.compile_seconds / saved_per_update) if saved_per_update > 0 else None
            ),
            f"{variant}_loss_max_rel_diff": _max_relative_difference(
                losses["eager"], losses[variant]
            ),
        }
    return record | {"clock": clock, "torch": torch.__version__}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", choices=list(CASES), default=list(CASES))
    parser.add_argument("--rounds", type=int, default=5, help="alternating measurement rounds")
    parser.add_argument("--min-time", type=float, default=0.3, help="seconds per timed repeat")
    parser.add_argument("--clock", choices=list(CLOCKS), help="default: cpu, wall on a GPU")
    parser.add_argument("--mode", choices=["default", "max-autotune"], default="default")
    parser.add_argument("--device", default="cpu", help="e.g. cuda: adds CUDA-graph updates")
    args = parser.parse_args(argv)
    clock = args.clock or ("cpu" if args.device == "cpu" else "wall")
    torch.set_num_threads(1)
    for name in args.cases:
        emit(measure(name, args.rounds, args.min_time, clock, args.mode, args.device))


if __name__ == "__main__":
    main()
