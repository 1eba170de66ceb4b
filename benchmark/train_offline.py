"""What the offline learners reach on Pendulum-v1 after 10,000 updates from the expert buffer.

The learning tests stop BCQ, CQL and TD3+BC as soon as they pass their bar (-400); this benchmark
lets each run the whole budget so the figures show how far offline learning from the SAC expert's
data goes. Each algorithm is built exactly as its learning test builds it (the ``pendulum_<algo>``
builders of ``test/algorithm/imitation``), trained by ``OfflineTrainer`` for 20 epochs of 500
updates (batch 256) and tested on 10 episodes after every epoch. One JSON line per algorithm and
seed: the final and best test return, the mean return of the expert's episodes in the buffer and
the wall-clock seconds of the run (updates and test episodes).

    python -m benchmark.train_offline [--algorithms bcq cql td3bc] [--seeds 0 1 2]
"""

import argparse
import time
from collections.abc import Callable, Sequence

import gymnasium as gym
import numpy as np
import torch

from benchmark.common import emit
from test.algorithm.imitation.test_bcq import pendulum_bcq
from test.algorithm.imitation.test_cql import pendulum_cql
from test.algorithm.imitation.test_td3_bc import pendulum_td3bc
from test.offline.gather_pendulum_data import load_expert_buffer
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Collector, ReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OfflineTrainerParams

BUILDERS: dict[str, Callable[[int], Algorithm]] = {
    "bcq": pendulum_bcq,
    "cql": pendulum_cql,
    "td3bc": pendulum_td3bc,
}
EPOCHS = 20
UPDATES_PER_EPOCH = 500
TEST_EPISODES = 10


def stored_episode_mean_return(buffer: ReplayBuffer) -> float:
    """Mean undiscounted return of the complete episodes stored in ``buffer``."""
    rewards = buffer.rew[: len(buffer)]
    ends = np.flatnonzero(buffer.done[: len(buffer)])
    starts = np.concatenate([[0], ends[:-1] + 1])
    return float(np.mean([rewards[s : e + 1].sum() for s, e in zip(starts, ends, strict=True)]))


def run(name: str, seed: int, buffer: ReplayBuffer) -> dict[str, float | str | int]:
    """Train one learner for the full budget and return its JSON record."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    algorithm = BUILDERS[name](seed)
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(TEST_EPISODES)])
    test_envs.seed(seed + 1000)
    start = time.perf_counter()
    result = algorithm.run_training(
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=EPOCHS,
            epoch_num_steps=UPDATES_PER_EPOCH,
            batch_size=256,
            test_step_num_episodes=TEST_EPISODES,
            show_progress=False,
            verbose=False,
        )
    )
    seconds = time.perf_counter() - start
    algorithm.policy.eval()
    final = Collector(algorithm, test_envs).collect(
        n_episode=TEST_EPISODES, reset_before_collect=True
    )
    return {
        "bench": "train_offline_pendulum",
        "algorithm": name,
        "seed": seed,
        "updates": EPOCHS * UPDATES_PER_EPOCH,
        "final_test_return": float(np.mean(final.returns)),
        "best_test_return": float(result.best_reward),
        "seconds": seconds,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithms", nargs="+", choices=sorted(BUILDERS), default=list(BUILDERS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    buffer = load_expert_buffer()
    expert_return = stored_episode_mean_return(buffer)
    for name in args.algorithms:
        for seed in args.seeds:
            record = run(name, seed, buffer)
            record["expert_buffer_return"] = expert_return
            emit(record)


if __name__ == "__main__":
    main()
