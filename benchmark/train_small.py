"""Off-policy training throughput at the small learning-test configurations, next to a bare loop.

Issue 28's small configurations: at 64x64-128x128 networks, a few envs and a handful of env
steps per collection, the fixed per-step and per-update costs of the collector, the trainer,
``Batch`` building and the replay buffer are what separates the library from plain code. For
each of DQN (``test/algorithm/modelfree/test_dqn.py``'s CartPole set-up: 8 envs, 4x128 Q-net,
16 steps per collection, 0.5 updates per step, batch 64, 3-step returns, target copied every
320 updates), SAC (``test_sac.py``'s Pendulum set-up: 4 envs, 64x64, 8 steps per collection,
one update per step, batch 128, learned alpha), and TD3 and DDPG on the same Pendulum set-up
(deterministic 64x64 actor, Gaussian exploration noise 0.1), the library trains through
``Algorithm.run_training`` with an ``OffPolicyTrainerParams`` for a fixed number of env steps
without test episodes; a bare loop steps the same number of in-process gymnasium envs with a
plain PyTorch actor, writes into preallocated numpy arrays and does the same number of bare
PyTorch updates of the same networks and batch sizes. Both are timed alternately (best of
``--rounds``); one JSON line per algorithm gives both env-step rates (updates included), their
ratio and the target (the library at least 0.8 of the bare loop).

    python -m benchmark.train_small [--algorithms dqn sac td3 ddpg] [--rounds 3] [--steps 2000]
        [--clock cpu]
"""

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from benchmark.bare_small import (
    ACTOR_FREQ,
    DQN_EPS,
    DQN_GAMMA,
    DQN_N_STEP,
    DQN_TARGET_FREQ,
    EXPLORATION_STD,
    GAMMA,
    LR,
    NOISE_CLIP,
    POLICY_NOISE,
    TAU,
    BareContinuous,
    BareDQN,
    BareLearner,
    Ring,
)
from benchmark.common import CLOCKS, emit
from tianshou.algorithm import DDPG, DQN, SAC, TD3, Algorithm
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.exploration import GaussianNoise
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)

TARGET_RATIO = 0.8
BUFFER_SIZE = 20_000


@dataclass(frozen=True)
class SmallConfig:
    """One learning test's training set-up.

    :param task: the gymnasium task.
    :param num_envs: training envs, stepped in this process.
    :param hidden: the hidden layer widths of every network.
    :param steps_per_collect: env steps (over all envs) per collection.
    :param updates_per_step: gradient steps per env step.
    :param batch_size: minibatch size of a gradient step.
    """

    task: str
    num_envs: int
    hidden: tuple[int, ...]
    steps_per_collect: int
    updates_per_step: float
    batch_size: int

    def describe(self) -> str:
        width = "x".join(map(str, self.hidden))
        return (
            f"{self.task}, {self.num_envs} in-process envs, {width}, {self.steps_per_collect} "
            f"steps per collect, {self.updates_per_step} updates per step, batch {self.batch_size}"
        )


DQN_CONFIG = SmallConfig("CartPole-v1", 8, (128, 128, 128, 128), 16, 0.5, 64)
PENDULUM_CONFIG = SmallConfig("Pendulum-v1", 4, (64, 64), 8, 1.0, 128)
CONFIGS = {
    "dqn": DQN_CONFIG,
    "sac": PENDULUM_CONFIG,
    "td3": PENDULUM_CONFIG,
    "ddpg": PENDULUM_CONFIG,
}


# ---------------------------------------------------------------------------------- library
def _library_algorithm(name: str) -> Algorithm:
    """The algorithm of the learning test (Pendulum's action bound 2, obs 3, act 1)."""
    c = CONFIGS[name]
    env = gym.make(c.task)
    hidden = list(c.hidden)
    if name == "dqn":
        net = Net(state_shape=4, action_shape=2, hidden_sizes=hidden)
        policy = DiscreteQLearningPolicy(
            model=net, action_space=env.action_space, eps_training=DQN_EPS
        )
        return DQN(
            policy=policy,
            optim=AdamOptimizerFactory(lr=LR),
            gamma=DQN_GAMMA,
            n_step_return_horizon=DQN_N_STEP,
            target_update_freq=DQN_TARGET_FREQ,
        )

    def critic() -> ContinuousCritic:
        return ContinuousCritic(
            preprocess_net=Net(state_shape=3, action_shape=1, hidden_sizes=hidden, concat=True)
        )

    optim = AdamOptimizerFactory(lr=LR)
    if name == "sac":
        actor = ContinuousActorProbabilistic(
            preprocess_net=Net(state_shape=3, hidden_sizes=hidden),
            action_shape=1,
            unbounded=True,
            conditioned_sigma=True,
        )
        return SAC(
            policy=SACPolicy(actor=actor, action_space=env.action_space),
            policy_optim=optim,
            critic=critic(),
            critic_optim=optim,
            critic2=critic(),
            critic2_optim=optim,
            tau=TAU,
            gamma=GAMMA,
            alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
        )
    deterministic = ContinuousDeterministicPolicy(
        actor=ContinuousActorDeterministic(
            preprocess_net=Net(state_shape=3, hidden_sizes=hidden), action_shape=1
        ),
        action_space=env.action_space,
        exploration_noise=GaussianNoise(sigma=EXPLORATION_STD),
    )
    if name == "td3":
        return TD3(
            policy=deterministic,
            policy_optim=optim,
            critic=critic(),
            critic_optim=optim,
            critic2=critic(),
            critic2_optim=optim,
            tau=TAU,
            gamma=GAMMA,
            policy_noise=POLICY_NOISE,
            update_actor_freq=ACTOR_FREQ,
            noise_clip=NOISE_CLIP,
        )
    return DDPG(
        policy=deterministic, policy_optim=optim, critic=critic(), critic_optim=optim, tau=TAU
    )


def library_run(name: str, env_steps: int, seed: int = 0) -> Callable[[], int]:
    """A function training the library's algorithm ``name`` for ``env_steps`` env steps (one
    epoch, no test collector); it returns the env steps taken."""
    c = CONFIGS[name]
    torch.manual_seed(seed)
    algorithm = _library_algorithm(name)
    envs = DummyVectorEnv([lambda: gym.make(c.task) for _ in range(c.num_envs)])
    envs.seed(seed)
    collector = Collector[CollectStats](
        algorithm, envs, VectorReplayBuffer(BUFFER_SIZE, c.num_envs), exploration_noise=True
    )

    def run() -> int:
        collector.reset()
        result = algorithm.run_training(
            OffPolicyTrainerParams(
                training_collector=collector,
                max_epochs=1,
                epoch_num_steps=env_steps,
                collection_step_num_env_steps=c.steps_per_collect,
                update_step_num_gradient_steps_per_sample=c.updates_per_step,
                batch_size=c.batch_size,
                test_in_training=False,
                verbose=False,
                show_progress=False,
            )
        )
        return result.train_step

    return run


def bare_run(name: str, env_steps: int, seed: int = 0) -> Callable[[], int]:
    """The same env steps and gradient steps as :func:`library_run`, in a bare loop."""
    c = CONFIGS[name]
    torch.manual_seed(seed)
    np.random.seed(seed)
    envs = [gym.make(c.task) for _ in range(c.num_envs)]
    obs_dim = 4 if name == "dqn" else 3
    ring = Ring(c.num_envs, env_steps // c.num_envs + 2, obs_dim, None if name == "dqn" else 1)
    learner: BareLearner = (
        BareDQN(c.hidden, ring) if name == "dqn" else BareContinuous(name, c.hidden, ring)
    )
    scale = 1.0 if name == "dqn" else 2.0  # Pendulum's action bound

    def run() -> int:
        ring.clear()
        obs = np.stack([env.reset(seed=seed + i)[0] for i, env in enumerate(envs)])
        steps, updates_due = 0, 0.0
        while steps < env_steps:
            for _ in range(c.steps_per_collect // c.num_envs):
                act = learner.act(obs)
                next_obs, rew = np.empty_like(obs), np.empty(c.num_envs, dtype=np.float32)
                terminated = np.empty(c.num_envs, dtype=bool)
                truncated = np.empty(c.num_envs, dtype=bool)
                for i, env in enumerate(envs):
                    o, rew[i], terminated[i], truncated[i], _ = env.step(
                        int(act[i]) if name == "dqn" else act[i] * scale
                    )
                    next_obs[i] = o
                ring.add(obs, act, rew, terminated, terminated | truncated, next_obs)
                obs = next_obs.copy()
                for i in np.flatnonzero(terminated | truncated):
                    obs[i] = envs[i].reset()[0]
                steps += c.num_envs
            updates_due += c.steps_per_collect * c.updates_per_step
            while updates_due >= 1:
                learner.update(c.batch_size)
                updates_due -= 1
        return steps

    return run


# --------------------------------------------------------------------------------- measure
def measure(name: str, rounds: int, env_steps: int, clock: str) -> dict[str, Any]:
    """Best env steps per second (collection and updates) of the library and the bare loop."""
    timer = CLOCKS[clock]
    sides = {"library": library_run(name, env_steps), "bare": bare_run(name, env_steps)}
    best = dict.fromkeys(sides, 0.0)
    for _ in range(rounds):  # alternate, so drifting machine load hits both alike
        for side, run in sides.items():
            start = timer()
            steps = run()
            best[side] = max(best[side], steps / (timer() - start))
    ratio = best["library"] / best["bare"]
    return {
        "bench": f"{name}_small_training_throughput",
        "shapes": f"{CONFIGS[name].describe()}, {env_steps} env steps per run",
        "env_steps_per_s": best["library"],
        "bare_env_steps_per_s": best["bare"],
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "ok": ratio >= TARGET_RATIO,
        "clock": clock,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithms", nargs="*", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--rounds", type=int, default=3, help="alternating measurement rounds")
    parser.add_argument("--steps", type=int, default=2000, help="env steps per timed run")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()  # the trainers' allocator settings, for both sides alike
    for name in args.algorithms:
        emit(measure(name, args.rounds, args.steps, args.clock))


if __name__ == "__main__":
    main()
