"""Cost of memory: recurrent updates and collection next to their feed-forward counterparts.

For PPO, DQN and SAC it builds the recurrent algorithm
(``tianshou.algorithm.modelfree.recurrent_*``, an LSTM of width 64) and the feed-forward one
(two hidden layers of width 64) on the tasks of ``examples/pomdp/``, fills a buffer by
collecting with each, and prints JSON lines:

* ``"measure": "update"``: seconds per update of each, on the same number of *trained*
  transitions, and their ratio (target: at most 1.5). PPO: one pass over a 2048-step rollout in
  minibatches of 256 transitions, preprocessing included; the recurrent minibatches are whole
  chunks of at most 16 steps grouped to about 256 *real* steps, so both make the same number of
  gradient steps (the recurrent one also runs the LSTM over the chunks' padding). DQN: 32
  sequences of 16 trained steps (plus 4 burn-in steps) against a batch of 512 transitions. SAC:
  32 sequences of 8 trained steps (plus 4 burn-in steps) against a batch of 256.
* ``"measure": "collect"``: environment steps per second of a collector with 8 envs and each
  policy inside a training step (the recurrent policies also carry and store their states), and
  their ratio (target: at least 0.8).
* ``"measure": "update_equal_parameters"``: the recurrent update against the feed-forward one
  whose networks hold as many parameters (the smallest such width), so that both do the same
  multiply-adds per transition: what the recurrence itself costs beyond its arithmetic.

"Same size" in the first two lines means the same widths: the recurrent networks are a width-64
embedding and a width-64 LSTM, the feed-forward ones two width-64 dense layers. An LSTM layer
does eight times the arithmetic of a dense layer of the same width (four gates, each with an
input and a recurrent matrix), so on a CPU, where torch's oneDNN LSTM kernels already run near
the core's peak, the update ratio cannot approach 1 at equal widths.

The clock is this process's CPU time (``--clock wall`` for wall-clock seconds), best of
``--rounds`` windows, one torch thread.

    python -m benchmark.update_rate_recurrent [--algorithms ppo dqn sac] [--rounds 5]
"""

import argparse
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Categorical

from benchmark.common import CLOCKS, emit, seconds_per_call
from tianshou.algorithm import DQN, PPO, SAC
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.recurrent_dqn import RecurrentDQN, RecurrentQLearningPolicy
from tianshou.algorithm.modelfree.recurrent_ppo import RecurrentActorCriticPolicy, RecurrentPPO
from tianshou.algorithm.modelfree.recurrent_sac import RecurrentSAC, RecurrentSACPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.modelfree.sac import SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env import pomdp as pomdp_envs
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.net.recurrent import (
    RecurrentDiscreteActor,
    RecurrentGaussianActor,
    RecurrentQCritic,
    RecurrentQNet,
    RecurrentValueNet,
)
from tianshou.utils.torch_utils import policy_within_training_step

HIDDEN = 64
NUM_ENVS = 8
ROLLOUT = 2048


def _mlp(obs_dim: int, width: int, **kwargs: Any) -> Net:
    return Net(state_shape=obs_dim, hidden_sizes=[width, width], **kwargs)


def _logits(logits: torch.Tensor) -> Categorical:
    return Categorical(logits=logits)


def build_ppo(recurrent: bool, width: int = HIDDEN) -> Algorithm:
    space = gym.spaces.Discrete(2)
    if recurrent:
        policy = RecurrentActorCriticPolicy(
            actor=RecurrentDiscreteActor(2, 2, width),
            critic=RecurrentValueNet(2, width),
            dist_fn=_logits,
            action_space=space,
        )
        return RecurrentPPO(policy=policy, optim=AdamOptimizerFactory(), chunk_len=16)
    ff_policy = DiscreteActorPolicy(
        actor=DiscreteActor(preprocess_net=_mlp(2, width), action_shape=2),
        dist_fn=Categorical,
        action_space=space,
    )
    return PPO(
        policy=ff_policy,
        critic=DiscreteCritic(preprocess_net=_mlp(2, width)),
        optim=AdamOptimizerFactory(),
    )


def build_dqn(recurrent: bool, width: int = HIDDEN) -> Algorithm:
    space = gym.spaces.Discrete(2)
    if recurrent:
        policy = RecurrentQLearningPolicy(
            model=RecurrentQNet(2, 2, width), action_space=space, eps_training=0.1
        )
        return RecurrentDQN(policy=policy, optim=AdamOptimizerFactory(), burn_in=4, train_len=16)
    ff_policy = DiscreteQLearningPolicy(
        model=_mlp(2, width, action_shape=2), action_space=space, eps_training=0.1
    )
    return DQN(policy=ff_policy, optim=AdamOptimizerFactory(), target_update_freq=100)


def build_sac(recurrent: bool, width: int = HIDDEN) -> Algorithm:
    space = gym.spaces.Box(-2.0, 2.0, shape=(1,))
    if recurrent:
        policy = RecurrentSACPolicy(
            actor=RecurrentGaussianActor(2, 1, width, conditioned_sigma=True),
            critic=RecurrentQCritic(2, 1, width),
            critic2=RecurrentQCritic(2, 1, width),
            action_space=space,
        )
        return RecurrentSAC(
            policy=policy,
            policy_optim=AdamOptimizerFactory(),
            critic_optim=AdamOptimizerFactory(),
            burn_in=4,
            train_len=8,
        )
    actor = ContinuousActorProbabilistic(
        preprocess_net=_mlp(2, width), action_shape=1, unbounded=True, conditioned_sigma=True
    )

    def critic() -> ContinuousCritic:
        return ContinuousCritic(preprocess_net=_mlp(2, width, action_shape=1, concat=True))

    return SAC(
        policy=SACPolicy(actor=actor, action_space=space),
        policy_optim=AdamOptimizerFactory(),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(),
    )


CASES: dict[str, tuple[Callable[[bool, int], Algorithm], Callable[[], gym.Env], int, int]] = {
    # name: (builder, task, recurrent batch size, feed-forward batch size)
    "ppo": (build_ppo, pomdp_envs.cartpole_without_velocities, 256, 256),
    "dqn": (build_dqn, pomdp_envs.cartpole_without_velocities, 32, 32 * 16),
    "sac": (build_sac, pomdp_envs.pendulum_without_velocity, 32, 32 * 8),
}


def filled_collector(algorithm: Algorithm, make_env: Callable[[], gym.Env]) -> Collector:
    envs = DummyVectorEnv([make_env for _ in range(NUM_ENVS)])
    envs.seed(0)
    collector = Collector(algorithm, envs, VectorReplayBuffer(ROLLOUT + NUM_ENVS, NUM_ENVS))
    collector.reset()
    with policy_within_training_step(algorithm.policy):
        collector.collect(n_step=ROLLOUT)
    return collector


def update_seconds(
    algorithm: Algorithm,
    collector: Collector,
    batch_size: int,
    clock: Callable[[], float],
    rounds: int,
) -> float:
    buffer = collector.buffer

    def one_update() -> None:
        with policy_within_training_step(algorithm.policy):
            if isinstance(algorithm, PPO):
                algorithm.update(buffer, batch_size=batch_size, repeat=1)
            else:
                algorithm.update(buffer, batch_size)  # type: ignore[call-arg]

    return seconds_per_call(one_update, repeat=rounds, clock=clock)


def collect_steps_per_second(
    algorithm: Algorithm, collector: Collector, clock: Callable[[], float], rounds: int
) -> float:
    def collect() -> None:
        collector.reset_buffer()
        with policy_within_training_step(algorithm.policy):
            collector.collect(n_step=256)

    return 256 / seconds_per_call(collect, repeat=rounds, clock=clock)


def parameter_count(algorithm: Algorithm) -> int:
    """Every parameter the algorithm holds (target networks included, on both sides alike)."""
    return sum(p.numel() for p in algorithm.parameters())


def equal_parameter_width(build: Callable[[bool, int], Algorithm], parameters: int) -> int:
    """The smallest feed-forward width whose algorithm holds at least ``parameters`` parameters.

    Each weight is used once per transition in either kind of network, so this is also the
    width at which both do the same multiply-adds per trained transition.
    """
    low, high = HIDDEN, HIDDEN
    while parameter_count(build(False, high)) < parameters:
        low, high = high, 2 * high
    while low < high:
        middle = (low + high) // 2
        if parameter_count(build(False, middle)) < parameters:
            low = middle + 1
        else:
            high = middle
    return high


def measured(
    name: str, recurrent: bool, width: int, clock: Callable[[], float], rounds: int
) -> dict[str, float]:
    build, make_env, recurrent_batch, ff_batch = CASES[name]
    torch.manual_seed(0)
    np.random.seed(0)
    algorithm = build(recurrent, width)
    collector = filled_collector(algorithm, make_env)
    batch_size = recurrent_batch if recurrent else ff_batch
    return {
        "update_s": update_seconds(algorithm, collector, batch_size, clock, rounds),
        "collect_steps_per_s": collect_steps_per_second(algorithm, collector, clock, rounds),
        "parameters": parameter_count(algorithm),
    }


def run_case(name: str, clock: Callable[[], float], rounds: int) -> None:
    rec = measured(name, True, HIDDEN, clock, rounds)
    ff = measured(name, False, HIDDEN, clock, rounds)
    update_ratio = rec["update_s"] / ff["update_s"]
    collect_ratio = rec["collect_steps_per_s"] / ff["collect_steps_per_s"]
    emit(
        {
            "bench": f"recurrent_{name}_update",
            "algorithm": name,
            "measure": "update",
            "recurrent_s": rec["update_s"],
            "feedforward_s": ff["update_s"],
            "ratio": update_ratio,
            "target_max": 1.5,
            "ok": update_ratio <= 1.5,
        }
    )
    emit(
        {
            "bench": f"recurrent_{name}_collect",
            "algorithm": name,
            "measure": "collect",
            "recurrent_steps_per_s": rec["collect_steps_per_s"],
            "feedforward_steps_per_s": ff["collect_steps_per_s"],
            "ratio": collect_ratio,
            "target_min": 0.8,
            "ok": collect_ratio >= 0.8,
        }
    )
    width = equal_parameter_width(CASES[name][0], int(rec["parameters"]))
    wide = measured(name, False, width, clock, rounds)
    wide_ratio = rec["update_s"] / wide["update_s"]
    emit(
        {
            "bench": f"recurrent_{name}_update_equal_parameters",
            "algorithm": name,
            "measure": "update_equal_parameters",
            "recurrent_s": rec["update_s"],
            "recurrent_parameters": int(rec["parameters"]),
            "feedforward_s": wide["update_s"],
            "feedforward_width": width,
            "feedforward_parameters": int(wide["parameters"]),
            "ratio": wide_ratio,
            "target_max": 1.5,
            "ok": wide_ratio <= 1.5,
        }
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--algorithms", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--clock", default="cpu", choices=list(CLOCKS))
    args = parser.parse_args(argv)
    clock = CLOCKS[args.clock]
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name in args.algorithms:
            run_case(name, clock, args.rounds)
    finally:
        torch.set_num_threads(previous)


if __name__ == "__main__":
    main()
