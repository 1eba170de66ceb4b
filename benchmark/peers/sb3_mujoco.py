"""Stable-Baselines3's SAC and TD3 at our MuJoCo scripts' configuration: a peer reference for
the benchmark table; runs in the peer venv only (``make bench-peers`` installs it).

A cell of ``docs/benchmark.md`` that falls short of a target needs a reason: a bug, the
configuration or the budget. Running an independent implementation with the same
hyper-parameters, the same budget and the same evaluation protocol tells the first from the
other two: if the peer lands where we land, the shortfall is not our code's.

The configurations mirror ``examples/mujoco/mujoco_sac.py`` and ``mujoco_td3.py``: one training
env, 256x256 ReLU networks, batch 256, tau 0.005, gamma 0.99, a 1M replay buffer, one gradient
step per env step after the uniformly random warm-up (SAC: 10,000 steps, lr 1e-3 for actor and
critic, fixed alpha 0.2; TD3: 25,000 steps, lr 3e-4, Gaussian exploration noise 0.1, target
smoothing 0.2 clipped to 0.5, an actor update every second critic update). Evaluation as in
the campaign: at the end of the warm-up and every ``--test-every`` env steps after it, the
deterministic policy's mean return over ``--test-episodes`` episodes of a separate env.

It writes ``OUT/runs/<task>/<algorithm>/seed<k>/result.json`` with the campaign runner's keys,
so ``python -m benchmark.campaign.report OUT`` (in the project venv) tables the peer's runs
beside ours; a run whose result exists is skipped. It imports nothing from this project.

    .venv-peers/bin/python benchmark/peers/sb3_mujoco.py --algorithm td3 --task Hopper-v5 \\
        --seed 0 --env-steps 100000 --out benchmark/results/mujoco-v5-sb3
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch
from stable_baselines3 import SAC, TD3
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.noise import NormalActionNoise

COMMON: dict[str, Any] = {
    "buffer_size": 1_000_000,
    "batch_size": 256,
    "tau": 0.005,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
    "hidden_sizes": [256, 256],
}
CONFIGS: dict[str, dict[str, Any]] = {
    "sac": {**COMMON, "learning_rate": 1e-3, "learning_starts": 10_000, "ent_coef": 0.2},
    "td3": {
        **COMMON,
        "learning_rate": 3e-4,
        "learning_starts": 25_000,
        "exploration_noise": 0.1,
        "target_policy_noise": 0.2,
        "target_noise_clip": 0.5,
        "policy_delay": 2,
    },
}


def build(algorithm: str, env: gym.Env, seed: int) -> BaseAlgorithm:
    """SB3's ``algorithm`` on ``env`` with the configuration of ``CONFIGS``."""
    config = dict(CONFIGS[algorithm])
    policy_kwargs = {"net_arch": config.pop("hidden_sizes")}
    if algorithm == "sac":
        return SAC("MlpPolicy", env, policy_kwargs=policy_kwargs, seed=seed, device="cpu", **config)
    width = env.action_space.shape[0]
    noise = NormalActionNoise(np.zeros(width), config.pop("exploration_noise") * np.ones(width))
    return TD3(
        "MlpPolicy",
        env,
        action_noise=noise,
        policy_kwargs=policy_kwargs,
        seed=seed,
        device="cpu",
        **config,
    )


class PeriodicTest(BaseCallback):
    """The deterministic test at the end of the warm-up and every ``every`` steps after it."""

    def __init__(self, task: str, seed: int, start: int, every: int, episodes: int) -> None:
        super().__init__()
        self.env = gym.make(task)
        self.seed, self.start, self.every, self.episodes = seed, start, every, episodes
        self.steps: list[int] = []
        self.returns: list[float] = []
        self.stds: list[float] = []

    def _on_step(self) -> bool:
        step = self.num_timesteps
        if step >= self.start and (step - self.start) % self.every == 0:
            totals = self.test_returns()
            self.steps.append(step)
            self.returns.append(float(np.mean(totals)))
            self.stds.append(float(np.std(totals)))
            print(f"step {step}: test return {self.returns[-1]:.1f}", flush=True)
        return True

    def test_returns(self) -> list[float]:
        totals = []
        for episode in range(self.episodes):
            obs, _ = self.env.reset(seed=10_000 * (self.seed + 1) + episode)
            total, done = 0.0, False
            while not done:
                action, _ = self.model.predict(obs, deterministic=True)
                obs, reward, terminated, truncated, _ = self.env.step(action)
                total += float(reward)
                done = terminated or truncated
            totals.append(total)
        return totals


def run(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """Train and test one seed; returns the campaign runner's result record (the same keys as
    the runner's, ``argv`` as the recorded command's options)."""
    env = gym.make(args.task)
    model = build(args.algorithm, env, args.seed)
    start = CONFIGS[args.algorithm]["learning_starts"]
    test = PeriodicTest(args.task, args.seed, start, args.test_every, args.test_episodes)
    began = time.perf_counter()
    model.learn(total_timesteps=args.env_steps, callback=test)
    wall = time.perf_counter() - began
    return {
        "task": args.task,
        "algorithm": args.algorithm,
        "seed": args.seed,
        "env_steps": args.env_steps,
        "warmup_env_steps": start,
        "test_env_steps": test.steps,
        "test_returns": test.returns,
        "test_return_stds": test.stds,
        "test_episodes": args.test_episodes,
        "final_return": test.returns[-1],
        "best_return": max(test.returns),
        "wall_s": wall,
        "env_steps_per_s": args.env_steps / wall,
        "requested_env_steps": args.env_steps,
        "resumed_from_env_step": None,
        "version": f"stable-baselines3 {stable_baselines3.__version__}",
        "commit": source_commit(),
        "command": shlex.join(["benchmark/peers/sb3_mujoco.py", *argv]),
        "config": run_config(args),
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "spec": {
            "task": args.task,
            "algorithm": args.algorithm,
            "seed": args.seed,
            "env_steps": args.env_steps,
            "overrides": [],
        },
        "platform": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(),
            "gymnasium": gym.__version__,
            "system": platform.platform(),
            "cpus": os.cpu_count(),
        },
    }


def run_config(args: argparse.Namespace) -> dict[str, Any]:
    """The run's configuration as written to ``config.json``: SB3's settings and the options."""
    return {**CONFIGS[args.algorithm], **{k: str(v) for k, v in vars(args).items()}}


def source_commit() -> str:
    """This repository's ``git`` commit (``+dirty`` with uncommitted changes to tracked files),
    as the campaign runner records it; ``unknown`` outside a repository."""
    root = Path(__file__).resolve().parents[2]

    def git(*command: str) -> str:
        return subprocess.run(
            ["git", *command], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--algorithm", choices=sorted(CONFIGS), required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-steps", type=int, default=100_000)
    parser.add_argument("--test-every", type=int, default=5_000)
    parser.add_argument("--test-episodes", type=int, default=10)
    parser.add_argument("--out", type=Path, required=True)
    argv = sys.argv[1:]
    args = parser.parse_args(argv)
    target = args.out / "runs" / args.task / args.algorithm / f"seed{args.seed}" / "result.json"
    if target.exists():
        print(f"{target} exists: skipped")
        return
    torch.set_num_threads(1)
    result = run(args, argv)
    target.parent.mkdir(parents=True, exist_ok=True)
    (target.parent / "config.json").write_text(json.dumps(result["config"], indent=1))
    target.with_suffix(".tmp").write_text(json.dumps(result, indent=1))
    target.with_suffix(".tmp").replace(target)
    print(
        f"{args.task} {args.algorithm} seed{args.seed}: final {result['final_return']:.1f}, "
        f"best {result['best_return']:.1f}, {result['wall_s']:.0f} s"
    )


if __name__ == "__main__":
    main()
