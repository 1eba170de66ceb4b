"""PPO on Hopper-v5 next to Stable-Baselines3: the update, and 100k env steps end to end.

Stable-Baselines3 runs in its own venv (``make bench-peers`` creates ``.venv-peers`` from
``benchmark/peers/requirements.txt``); this script, in the project's venv, times our side
in-process and SB3's through ``benchmark/peers/sb3_side.py`` in a subprocess of the peer venv,
and prints one JSON line per comparison:

* ``ppo_update_vs_sb3``: CPU seconds per update on 2,048 transitions, 10 epochs of minibatch 64,
  64x64 tanh actor and critic (ours: ``Algorithm.update`` on a filled buffer as in
  ``benchmark/update_rate_ppo.py``; theirs: ``PPO.train()`` on a collected rollout), best of the
  rounds, the two sides alternating; target: ours at least 1.2x their speed;
* ``ppo_hopper_100k_vs_sb3``: wall seconds and env steps per second of 100k Hopper-v5 steps
  of training with 8 envs (ours: the trainer with the fastest env setup available, EnvPool
  when it is installed, else subprocess envs; theirs: the faster of ``DummyVecEnv`` and
  ``SubprocVecEnv``), observations normalised on both sides, no evaluation episodes; target:
  ours at least 1.5x their env steps per second.

Both sides use one torch thread.

    python -m benchmark.peers.compare_sb3 [--cases update e2e] [--rounds 2]
"""

import argparse
import json
import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from benchmark.common import HOPPER_ACT, HOPPER_OBS, emit, random_transitions, seconds_per_call
from benchmark.update_rate_ppo import ROLLOUT_SIZE, PPOConfig, library_ppo, library_update
from tianshou.data import Collector, CollectStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import VectorEnvNormObs, make_envpool_env
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.host_memory import retain_freed_host_memory

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER_PYTHON = os.path.join(ROOT, ".venv-peers", "bin", "python")
SB3_SIDE = os.path.join(ROOT, "benchmark", "peers", "sb3_side.py")
NUM_ENVS, EPOCHS = 8, 5


def sb3(*args: str) -> dict[str, Any]:
    """Run ``sb3_side.py`` with ``args`` in the peer venv and return its JSON line."""
    if not os.path.exists(PEER_PYTHON):
        raise SystemExit("no .venv-peers: run `make bench-peers` (it creates it) first")
    out = subprocess.run(
        [PEER_PYTHON, SB3_SIDE, *args], check=True, capture_output=True, text=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def our_update_seconds() -> float:
    """Best CPU seconds per library update at the MuJoCo example's configuration."""
    config = PPOConfig()
    library = library_ppo(config)
    data = random_transitions(ROLLOUT_SIZE, HOPPER_OBS, HOPPER_ACT, discrete=False)
    buffer = ReplayBuffer.from_data(**data)
    return seconds_per_call(
        lambda: library_update(library, buffer, config.batch_size, config.repeat),
        min_time=1.0,
        repeat=3,
        clock=time.process_time,
    )


def compare_updates(rounds: int) -> dict[str, Any]:
    ours = theirs = float("inf")
    for _ in range(rounds):  # alternate, so drifting machine load hits both alike
        theirs = min(theirs, sb3("update")["s_per_update"])
        ours = min(ours, our_update_seconds())
    return {
        "bench": "ppo_update_vs_sb3",
        "s_per_update": ours,
        "sb3_s_per_update": theirs,
        "speedup": theirs / ours,
        "target_speedup": 1.2,
        "clock": "cpu",
    }


def our_hopper_run(steps_per_epoch: int, seed: int = 0) -> tuple[float, int, str]:
    """Wall seconds and env steps of our PPO training on Hopper-v5, and the env backend."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    raw = make_envpool_env("Hopper-v5", NUM_ENVS, seed=seed)
    backend = type(raw).__name__
    envs = VectorEnvNormObs(raw)
    updates = EPOCHS * -(-steps_per_epoch // ROLLOUT_SIZE)
    config = PPOConfig(lr_decay_updates=updates)
    algorithm = library_ppo(config)
    collector = Collector[CollectStats](
        algorithm, envs, VectorReplayBuffer(2 * ROLLOUT_SIZE, NUM_ENVS), exploration_noise=True
    )
    try:
        start = time.perf_counter()
        result = algorithm.run_training(
            OnPolicyTrainerParams(
                training_collector=collector,
                max_epochs=EPOCHS,
                epoch_num_steps=steps_per_epoch,
                collection_step_num_env_steps=ROLLOUT_SIZE,
                update_step_num_repetitions=config.repeat,
                batch_size=config.batch_size,
                verbose=False,
                show_progress=False,
            )
        )
        wall = time.perf_counter() - start
    finally:
        envs.close()
    return wall, result.train_step, backend


def compare_end_to_end(steps: int) -> dict[str, Any]:
    runs = {vec: sb3("e2e", "--vec", vec, "--steps", str(steps)) for vec in ("dummy", "subproc")}
    fastest = min(runs.values(), key=lambda run: run["wall_s"] / run["env_steps"])
    wall, env_steps, backend = our_hopper_run(-(-steps // EPOCHS))
    ours_rate, theirs_rate = env_steps / wall, fastest["env_steps"] / fastest["wall_s"]
    return {
        "bench": "ppo_hopper_100k_vs_sb3",
        "wall_s": wall,
        "env_steps": env_steps,
        "envs": backend,
        "sb3_wall_s": fastest["wall_s"],
        "sb3_env_steps": fastest["env_steps"],
        "sb3_vec_env": fastest["vec"],
        "sb3_wall_s_by_vec_env": {vec: run["wall_s"] for vec, run in runs.items()},
        "speedup": ours_rate / theirs_rate,
        "target_speedup": 1.5,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", choices=["update", "e2e"], default=["update", "e2e"])
    parser.add_argument("--rounds", type=int, default=2, help="alternating update rounds")
    parser.add_argument("--steps", type=int, default=100_000, help="env steps end to end")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()
    if "update" in args.cases:
        emit(compare_updates(args.rounds))
    if "e2e" in args.cases:
        emit(compare_end_to_end(args.steps))


if __name__ == "__main__":
    main()
