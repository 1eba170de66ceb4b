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
  ours at least 1.5x their env steps per second. The same env steps and updates in a bare loop
  (``benchmark.bare_ppo.BareVectorEnvLoop``: EnvPool, numpy normalisation, the bare PPO update
  of ``benchmark/bare_ppo.py``) give the limit of this machine: ``bare_speedup`` over SB3, and
  ``ratio_to_bare`` for ours.

With ``--compiled``, ours is also timed with the compiled update (``Algorithm.compile_update``):
``compiled_speedup`` in each line, the update's compile seconds as ``compile_s``, and the end to
end run's wall seconds (compilation included) as ``compiled_wall_s``, of which its compile
seconds as ``compiled_compile_s`` (small when inductor's on-disk cache holds the graphs from an
earlier run, several times longer on a first run).

Both sides use one torch thread.

    python -m benchmark.peers.compare_sb3 [--cases update e2e] [--rounds 2] [--compiled]
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

from benchmark.bare_ppo import BareVectorEnvLoop
from benchmark.common import HOPPER_ACT, HOPPER_OBS, emit, random_transitions, seconds_per_call
from benchmark.update_rate_ppo import (
    ROLLOUT_SIZE,
    PPOConfig,
    bare_ppo,
    library_ppo,
    library_update,
    load_weights,
)
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


class OurUpdate:
    """Our PPO at the MuJoCo example's configuration with a filled rollout buffer, eager or with
    the compiled update (compiled by the first update, whose wall seconds are kept)."""

    def __init__(self, compiled: bool) -> None:
        self.config = PPOConfig()
        self.library = library_ppo(self.config)
        data = random_transitions(ROLLOUT_SIZE, HOPPER_OBS, HOPPER_ACT, discrete=False)
        self.buffer = ReplayBuffer.from_data(**data)
        self.compile_s = 0.0
        if compiled:
            self.library.compile_update()
            start = time.perf_counter()
            self.update()
            self.compile_s = time.perf_counter() - start

    def update(self) -> None:
        library_update(self.library, self.buffer, self.config.batch_size, self.config.repeat)

    def seconds(self) -> float:
        """Best CPU seconds per update."""
        return seconds_per_call(self.update, min_time=1.0, repeat=3, clock=time.process_time)


def compare_updates(rounds: int, compiled: bool) -> dict[str, Any]:
    eager = OurUpdate(compiled=False)
    fast = OurUpdate(compiled=True) if compiled else None
    ours = theirs = ours_compiled = float("inf")
    for _ in range(rounds):  # alternate, so drifting machine load hits all sides alike
        theirs = min(theirs, sb3("update")["s_per_update"])
        ours = min(ours, eager.seconds())
        if fast is not None:
            ours_compiled = min(ours_compiled, fast.seconds())
    row: dict[str, Any] = {
        "bench": "ppo_update_vs_sb3",
        "s_per_update": ours,
        "sb3_s_per_update": theirs,
        "speedup": theirs / ours,
        "target_speedup": 1.2,
        "clock": "cpu",
    }
    if fast is not None:
        row |= {
            "compiled_s_per_update": ours_compiled,
            "compiled_speedup": theirs / ours_compiled,
            "compile_s": fast.compile_s,
        }
    return row


def our_hopper_run(
    steps_per_epoch: int, compiled: bool = False, seed: int = 0
) -> tuple[float, int, str, float]:
    """Wall seconds (compilation included) and env steps of our PPO training on Hopper-v5, the
    env backend, and the seconds spent compiling (0 unless ``compiled``)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    raw = make_envpool_env("Hopper-v5", NUM_ENVS, seed=seed)
    backend = type(raw).__name__
    envs = VectorEnvNormObs(raw)
    updates = EPOCHS * -(-steps_per_epoch // ROLLOUT_SIZE)
    config = PPOConfig(lr_decay_updates=updates)
    algorithm = library_ppo(config)
    compiler = algorithm.compile_update() if compiled else None
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
    return wall, result.train_step, backend, 0.0 if compiler is None else compiler.compile_seconds


def bare_hopper_run(steps_per_epoch: int, seed: int = 0) -> tuple[float, int]:
    """Wall seconds and env steps of the bare PPO loop doing our run's env steps and updates:
    :class:`benchmark.bare_ppo.BareVectorEnvLoop` on the same EnvPool envs, starting from the
    library's initial weights."""
    import envpool  # the bare loop is EnvPool's: no fallback to compare with

    torch.manual_seed(seed)
    np.random.seed(seed)
    updates = EPOCHS * -(-steps_per_epoch // ROLLOUT_SIZE)
    config = PPOConfig(lr_decay_updates=updates)
    learner = bare_ppo(random_transitions(ROLLOUT_SIZE, HOPPER_OBS, HOPPER_ACT, False), config)
    load_weights(learner, library_ppo(config))
    envs = envpool.make("Hopper-v5", env_type="gymnasium", num_envs=NUM_ENVS, seed=seed)
    try:
        loop = BareVectorEnvLoop(envs, ROLLOUT_SIZE // NUM_ENVS, learner)
        start = time.perf_counter()
        env_steps = loop.run(updates)
        wall = time.perf_counter() - start
    finally:
        envs.close()
    return wall, env_steps


def compare_end_to_end(steps: int, compiled: bool) -> dict[str, Any]:
    runs = {vec: sb3("e2e", "--vec", vec, "--steps", str(steps)) for vec in ("dummy", "subproc")}
    fastest = min(runs.values(), key=lambda run: run["wall_s"] / run["env_steps"])
    wall, env_steps, backend, _ = our_hopper_run(-(-steps // EPOCHS))
    ours_rate, theirs_rate = env_steps / wall, fastest["env_steps"] / fastest["wall_s"]
    row = {
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
    if backend != "SubprocVectorEnv":  # the bare loop needs EnvPool
        bare_wall, bare_steps = bare_hopper_run(-(-steps // EPOCHS))
        bare_rate = bare_steps / bare_wall
        row |= {
            "bare_wall_s": bare_wall,
            "bare_speedup": bare_rate / theirs_rate,
            "ratio_to_bare": ours_rate / bare_rate,
        }
    if compiled:
        wall, env_steps, _, compile_s = our_hopper_run(-(-steps // EPOCHS), compiled=True)
        row |= {
            "compiled_wall_s": wall,
            "compiled_speedup": env_steps / wall / theirs_rate,
            "compiled_compile_s": compile_s,
        }
    return row


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", choices=["update", "e2e"], default=["update", "e2e"])
    parser.add_argument("--rounds", type=int, default=2, help="alternating update rounds")
    parser.add_argument("--steps", type=int, default=100_000, help="env steps end to end")
    parser.add_argument(
        "--compiled",
        action="store_true",
        help="also time ours with the compiled update (Algorithm.compile_update)",
    )
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    retain_freed_host_memory()
    if "update" in args.cases:
        emit(compare_updates(args.rounds, args.compiled))
    if "e2e" in args.cases:
        emit(compare_end_to_end(args.steps, args.compiled))


if __name__ == "__main__":
    main()
