"""What the discrete offline tests share: learning CartPole-v1 from a fixed data set (the
cached expert buffer, or a noisy scripted expert's data for quick determinism checks)."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from test.algorithm.imitation.test_imitation_base import CartPoleExpert
from tianshou.algorithm.algorithm_base import Algorithm, PolicyState
from tianshou.data import Batch, Collector, InfoStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OfflineTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLoggerContext


class NoisyCartPoleExpert(CartPoleExpert):
    """The scripted expert, taking a uniformly random action 20% of the time (as offline data
    sets hold some exploration, so that not all of the data is one action per state)."""

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        result = super().forward(batch, state)
        explore = np.random.rand(len(result.act)) < 0.2
        result.act[explore] = np.random.randint(2, size=int(explore.sum()))
        return result


def scripted_cartpole_data(num_steps: int, seed: int) -> VectorReplayBuffer:
    """``num_steps`` transitions of the noisy scripted expert on 4 CartPole-v1 envs."""
    np.random.seed(seed)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    envs.seed(seed)
    buffer = VectorReplayBuffer(num_steps, 4)
    Collector(NoisyCartPoleExpert(), envs, buffer).collect(
        n_step=num_steps, reset_before_collect=True
    )
    return buffer


def train_offline_on_cartpole(
    build: Callable[[], Algorithm],
    buffer: ReplayBuffer,
    seed: int,
    max_epochs: int,
    epoch_num_steps: int,
    stop_at: float | None,
) -> InfoStats:
    """Seed, ``build()`` the algorithm and train it on ``buffer`` (batches of 64), testing on
    10 CartPole-v1 episodes after each epoch; stop once the mean test return reaches
    ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    algorithm = build()
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    test_envs.seed(seed + 1)
    return algorithm.run_training(
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=epoch_num_steps,
            batch_size=64,
            test_step_num_episodes=10,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


def expert_cartpole_buffer() -> ReplayBuffer:
    """The shared CartPole expert data set (trained and cached on first use)."""
    from test.offline.gather_cartpole_data import load_expert_buffer

    return load_expert_buffer()


def assert_training_repeats_its_trace(
    build: Callable[[], Algorithm], name: str, tmp_path: Path
) -> None:
    """Train twice with one seed for 100 updates on scripted data; the traces must match."""
    snapshot = TraceDeterminismTest(base_path=str(tmp_path))
    traces = []
    for _ in range(2):
        buffer = scripted_cartpole_data(1000, seed=3)  # fresh: a buffer's sampler is stateful
        with TraceLoggerContext() as trace:
            train_offline_on_cartpole(
                build, buffer, seed=3, max_epochs=1, epoch_num_steps=100, stop_at=None
            )
        traces.append(trace.get_log())
    snapshot.check(traces[0], name, create_reference_result=True)
    result = snapshot.check(traces[1], name)
    assert result.success and result.first_difference is None
    assert len(traces[0].log_lines) > 3
