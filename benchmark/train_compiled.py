"""SAC's collect-and-update loop on Hopper-v5, eager against compiled updates, in env steps/s.

The loop is the off-policy trainer's step at ``examples/mujoco/mujoco_sac.py``'s configuration
(256x256 networks, batch 256, one gradient step per env step, one training env): collect one
env step with the policy, then update once. Where the update runs is ``--device``; the env
always steps on the CPU, so on a GPU every step also moves an observation there and an action
back. Each side (``eager``, ``compiled`` and, on a GPU, ``cuda_graphs``) builds the same
algorithm from the same seed, fills its buffer with ``--warmup`` random steps, runs
``--compile-steps`` loop steps (where the compiled sides compile; the seconds are reported as
``<side>_compile_s``) and then times ``--steps`` loop steps, wall-clock. The limit is printed
beside them in the same run: the bare env (``limit_env_steps_per_s``: ``env.step`` with random
actions, nothing else) and the eager update alone (``eager_updates_per_s``); the loop cannot
step faster than either.

    python -m benchmark.train_compiled [--device cuda] [--steps 2000] [--sides eager compiled]
"""

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from benchmark.common import emit
from tianshou.algorithm import SAC
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.utils.torch_utils import policy_within_training_step

from examples.mujoco.mujoco_sac import build_sac
from examples.mujoco.mujoco_sac import get_args as sac_args

TASK = "Hopper-v5"


def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_env_steps_per_s(steps: int, seed: int = 0) -> float:
    """``env.step`` with random actions and resets, nothing else: the loop's ceiling."""
    env = gym.make(TASK)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(steps)]
    start = time.perf_counter()
    for action in actions:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


class LoopSide:
    """One side of the comparison: its own algorithm, env, buffer and collector."""

    def __init__(self, side: str, device: str, warmup: int, seed: int = 0) -> None:
        torch.manual_seed(seed)
        np.random.seed(seed)
        self.args = sac_args(["--task", TASK, "--device", device])
        self.device = device
        self.algorithm: SAC = build_sac(self.args, gym.make(TASK))
        self.compiler = (
            None
            if side == "eager"
            else self.algorithm.compile_update(cuda_graphs=side == "cuda_graphs")
        )
        envs = DummyVectorEnv([lambda: gym.make(TASK)])
        envs.seed(seed)
        self.buffer = VectorReplayBuffer(self.args.buffer_size, 1)
        self.collector = Collector[CollectStats](
            self.algorithm, envs, self.buffer, exploration_noise=True
        )
        self.collector.reset()
        self.collector.collect(n_step=warmup, random=True)

    def update(self) -> None:
        with policy_within_training_step(self.algorithm.policy):
            self.algorithm.update(self.buffer, self.args.batch_size)

    def collect_and_update(self) -> None:
        self.collector.collect(n_step=1)
        self.update()

    def seconds(self, step: Callable[[], None], times: int) -> float:
        """Wall seconds of ``times`` calls of ``step``, the device's queue drained at both ends."""
        _synchronize(self.device)
        start = time.perf_counter()
        for _ in range(times):
            step()
        _synchronize(self.device)
        return time.perf_counter() - start


def measure(
    device: str, sides: Sequence[str], steps: int, compile_steps: int, warmup: int
) -> dict[str, Any]:
    args = sac_args(["--task", TASK])
    record: dict[str, Any] = {
        "bench": "sac_hopper_loop_compiled",
        "device": torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu",
        "batch_size": args.batch_size,
        "hidden_sizes": args.hidden_sizes,
        "steps": steps,
        "limit_env_steps_per_s": bare_env_steps_per_s(steps),
    }
    for side in sides:
        loop = LoopSide(side, device, warmup)
        first_steps_s = loop.seconds(loop.collect_and_update, compile_steps)
        if loop.compiler is not None:
            record[f"{side}_compile_s"] = loop.compiler.compile_seconds
            record[f"{side}_graphs"] = loop.compiler.num_compiled
        else:
            record["eager_first_steps_s"] = first_steps_s
            record["eager_updates_per_s"] = steps / loop.seconds(loop.update, steps)
        record[f"{side}_env_steps_per_s"] = steps / loop.seconds(loop.collect_and_update, steps)
    for side in sides:
        if side != "eager" and "eager" in sides:
            record[f"{side}_speedup"] = (
                record[f"{side}_env_steps_per_s"] / record["eager_env_steps_per_s"]
            )
    return record | {"torch": torch.__version__, "torch_threads": torch.get_num_threads()}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu", help="where the update runs, e.g. cuda")
    parser.add_argument(
        "--sides",
        nargs="*",
        choices=["eager", "compiled", "cuda_graphs"],
        help="default: eager and compiled, and cuda_graphs on a GPU",
    )
    parser.add_argument("--steps", type=int, default=2000, help="timed loop steps per side")
    parser.add_argument("--compile-steps", type=int, default=200, help="untimed steps first")
    parser.add_argument("--warmup", type=int, default=5000, help="random steps in the buffer")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    sides = args.sides or (
        ["eager", "compiled"] + (["cuda_graphs"] if args.device.startswith("cuda") else [])
    )
    emit(measure(args.device, sides, args.steps, args.compile_steps, args.warmup))


if __name__ == "__main__":
    main()
