"""The CartPole-v1 training harness shared by the value-distribution learners' tests (QRDQN,
IQN, FQF): the same envs, collectors, epsilon schedule and trainer settings, so that each test
file states only how its algorithm is built."""

from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.data import Collector, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLoggerContext

AlgorithmFactory = Callable[[], OffPolicyAlgorithm]
"""Builds the algorithm (its policy a :class:`DiscreteQLearningPolicy`); called after seeding."""


def train_on_cartpole(
    build: AlgorithmFactory,
    seed: int,
    max_epochs: int,
    epoch_num_steps: int,
    stop_at: float | None,
) -> InfoStats:
    """Train ``build()`` on CartPole-v1 (8 training envs, 10 test episodes, epsilon decaying
    from 0.5 to 0.05 over 10k steps); stop once the mean test return reaches ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    algorithm = build()
    policy = algorithm.policy
    assert isinstance(policy, DiscreteQLearningPolicy)
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 8), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)

    def decay_eps(epoch: int, env_step: int) -> None:
        policy.set_eps_training(max(0.05, 0.5 * (1 - env_step / 10000)))

    return algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=max_epochs,
            epoch_num_steps=epoch_num_steps,
            collection_step_num_env_steps=16,
            test_step_num_episodes=10,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.5,
            training_fn=decay_eps,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


def assert_training_repeats_its_trace(build: AlgorithmFactory, name: str, tmp_path: Path) -> None:
    """Train twice with one seed for 200 steps; the second trace must match the first."""
    snapshot = TraceDeterminismTest(base_path=str(tmp_path))
    traces = []
    for _ in range(2):
        with TraceLoggerContext() as trace:
            train_on_cartpole(build, seed=3, max_epochs=1, epoch_num_steps=200, stop_at=None)
        traces.append(trace.get_log())
    snapshot.check(traces[0], name, create_reference_result=True)
    result = snapshot.check(traces[1], name)
    assert result.success and result.first_difference is None
    assert len(traces[0].log_lines) > 3
