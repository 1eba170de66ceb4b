"""Data-parallel training (``tianshou.distributed``) against one process: what a second rank buys.

Two workloads on Hopper-v5, each run once in a plain process (1 rank) and once as a torchrun job
of 2 ranks (gloo, CPU; gradients exchanged through shared memory), through the same trainer:

* ``data_parallel_ppo_env_steps``: PPO as ``examples/mujoco/mujoco_ppo.py`` builds it (64x64,
  2,048 env steps per rank per collection, 10 passes in minibatches of 64, observation
  normalisation, return scaling) with 8 envs per rank, for ``--ppo-env-steps`` env steps in all
  ranks together, no test episodes; reports env steps per second of the whole job (collection
  and updates). Issue 42's target on a 2-core machine: 2 ranks at least 1.7x 1 rank.
* ``data_parallel_sac_updates``: SAC as ``examples/mujoco/mujoco_sac.py`` builds it (256x256,
  batch 256, one gradient step per env step) with 1 env per rank, ``--sac-updates`` gradient
  steps per rank after a short random warm-up; reports gradient steps per second of one rank
  (all ranks step together) and sampled transitions per second of the job.

Each configuration prints one JSON line. Short defaults: on a busy machine, repeat and compare
medians before believing a ratio.

    python -m benchmark.data_parallel [--cases ppo sac] [--ranks 1 2] [--ppo-env-steps 16384]
        [--sac-updates 500]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import numpy as np
import torch

from benchmark.common import emit
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.distributed import SINGLE_PROCESS, RankGroup, data_parallel
from tianshou.env.mujoco import make_mujoco_env
from tianshou.scripts.mujoco.ppo import build_ppo, ppo_parser
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams

from examples.mujoco.mujoco_sac import build_sac
from examples.mujoco.mujoco_sac import get_args as sac_args

TASK = "Hopper-v5"
PPO_ENVS_PER_RANK = 8
PPO_COLLECTION_STEPS = 2048
SAC_WARMUP_STEPS = 1000
REPO_ROOT = Path(__file__).resolve().parents[1]


def _ranks(distributed: bool) -> AbstractContextManager[RankGroup]:
    return data_parallel("cpu") if distributed else nullcontext(SINGLE_PROCESS)


def _timed_training(
    algorithm: Algorithm, params: OnPolicyTrainerParams | OffPolicyTrainerParams
) -> float:
    """Seconds ``algorithm.run_training(params)`` takes, all ranks starting together."""
    if torch.distributed.is_initialized():
        torch.distributed.barrier()
    start = time.perf_counter()
    algorithm.run_training(params)
    return time.perf_counter() - start


def run_ppo_rank(ranks: RankGroup, total_env_steps: int) -> dict[str, object]:
    seed = ranks.rank * PPO_ENVS_PER_RANK
    np.random.seed(seed)
    torch.manual_seed(seed)
    args = ppo_parser(None).parse_args(["--task", TASK, "--device", "cpu", "--no-lr-decay"])
    args.lr, args.batch_size, args.update_step_num_repetitions = 3e-4, 64, 10
    env, train_envs, _ = make_mujoco_env(TASK, seed, PPO_ENVS_PER_RANK, 1, obs_norm=True)
    algorithm = build_ppo(args, env)
    ranks.attach(algorithm, train_envs)
    buffer = VectorReplayBuffer(PPO_COLLECTION_STEPS, PPO_ENVS_PER_RANK)
    params = OnPolicyTrainerParams(
        training_collector=Collector(algorithm, train_envs, buffer, exploration_noise=True),
        max_epochs=1,
        epoch_num_steps=total_env_steps,
        collection_step_num_env_steps=PPO_COLLECTION_STEPS,
        update_step_num_repetitions=args.update_step_num_repetitions,
        batch_size=args.batch_size,
        show_progress=False,
    )
    seconds = _timed_training(algorithm, params)
    train_envs.close()
    return {
        "bench": "data_parallel_ppo_env_steps",
        "ranks": ranks.world_size,
        "envs_per_rank": PPO_ENVS_PER_RANK,
        "env_steps": total_env_steps,
        "seconds": seconds,
        "env_steps_per_s": total_env_steps / seconds,
    }


def run_sac_rank(ranks: RankGroup, updates: int) -> dict[str, object]:
    seed = ranks.rank
    np.random.seed(seed)
    torch.manual_seed(seed)
    args = sac_args(["--task", TASK, "--device", "cpu"])
    env, train_envs, _ = make_mujoco_env(TASK, seed, 1, 1, obs_norm=False, backend="dummy")
    algorithm = build_sac(args, env)
    ranks.attach(algorithm, train_envs)
    collector = Collector(
        algorithm,
        train_envs,
        VectorReplayBuffer(SAC_WARMUP_STEPS + updates, 1),
        exploration_noise=True,
    )
    collector.reset()
    collector.collect(n_step=SAC_WARMUP_STEPS, random=True)
    params = OffPolicyTrainerParams(
        training_collector=collector,
        max_epochs=1,
        epoch_num_steps=updates * ranks.world_size,
        collection_step_num_env_steps=1,
        update_step_num_gradient_steps_per_sample=1.0,
        batch_size=args.batch_size,
        show_progress=False,
    )
    seconds = _timed_training(algorithm, params)
    return {
        "bench": "data_parallel_sac_updates",
        "ranks": ranks.world_size,
        "batch_size_per_rank": args.batch_size,
        "updates_per_rank": updates,
        "seconds": seconds,
        "updates_per_s": updates / seconds,
        "samples_per_s": updates * args.batch_size * ranks.world_size / seconds,
    }


def _worker(case: str, amount: int, distributed: bool) -> None:
    """One rank of a measurement; rank 0 prints its JSON line."""
    torch.set_num_threads(1)
    with _ranks(distributed) as ranks:
        run = run_ppo_rank if case == "ppo" else run_sac_rank
        record = run(ranks, amount)
        if ranks.is_reporting:
            emit(record)


def _measure(case: str, amount: int, num_ranks: int) -> None:
    """Run one configuration in a fresh process (torchrun for several ranks) and relay its
    JSON line."""
    worker = ["-m", "benchmark.data_parallel", "--worker", case, "--amount", str(amount)]
    if num_ranks == 1:
        command = [sys.executable, *worker]
    else:
        launcher = ["-m", "torch.distributed.run", "--nproc-per-node", str(num_ranks)]
        command = [sys.executable, *launcher, *worker, "--distributed"]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    print(json.dumps(json.loads(lines[-1])), flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=["ppo", "sac"], choices=["ppo", "sac"])
    parser.add_argument("--ranks", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--ppo-env-steps", type=int, default=16_384)
    parser.add_argument("--sac-updates", type=int, default=500)
    parser.add_argument("--worker", choices=["ppo", "sac"], help=argparse.SUPPRESS)
    parser.add_argument("--amount", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--distributed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        _worker(args.worker, args.amount, args.distributed)
        return
    amounts = {"ppo": args.ppo_env_steps, "sac": args.sac_updates}
    for case in args.cases:
        for num_ranks in args.ranks:
            _measure(case, amounts[case], num_ranks)


if __name__ == "__main__":
    main()
