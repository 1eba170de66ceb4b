"""``make demo``: a short SAC training on Hopper-v5 that shows learning in a few minutes on a CPU.

It trains with the benchmark networks of ``mujoco_sac.py`` but a smaller budget (5k random start
steps, then 6 epochs of 5k steps), prints a result table next to a uniformly random policy, and
writes a TensorBoard log and a learning-curve PNG under ``--logdir``.

    python examples/mujoco/demo.py [--task Hopper-v5] [--epoch 6] [--logdir log/demo]
"""

import argparse
import os
import time
from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.logger.tensorboard import TensorboardLogger

from mujoco_env import make_mujoco_env
from mujoco_sac import build_sac
from mujoco_sac import get_args as get_sac_args


def get_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=6)
    parser.add_argument("--epoch-num-steps", type=int, default=5000)
    parser.add_argument("--start-timesteps", type=int, default=5000)
    parser.add_argument("--num-test-envs", type=int, default=5)
    parser.add_argument("--logdir", default=os.path.join("log", "demo"))
    own, rest = parser.parse_known_args(argv)
    sac = get_sac_args(
        [
            "--task", own.task, "--seed", str(own.seed), "--epoch", str(own.epoch),
            "--epoch-num-steps", str(own.epoch_num_steps),
            "--start-timesteps", str(own.start_timesteps),
            "--num-test-envs", str(own.num_test_envs), "--logdir", own.logdir, *rest,
        ]
    )  # fmt: skip
    return sac


class LearningCurve:
    """Records (env step, mean test return) at every test step through the trainer's callbacks."""

    def __init__(self) -> None:
        self.points: list[tuple[int, float, float]] = []
        self._env_step = 0

    def before_test(self, epoch: int, env_step: int | None) -> None:
        self._env_step = env_step or 0

    def score(self, stats: CollectStats) -> float:
        mean, std = float(np.mean(stats.returns)), float(np.std(stats.returns))
        self.points.append((self._env_step, mean, std))
        return mean


def main(argv: Sequence[str] | None = None) -> None:
    args = get_args(argv)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    env, train_envs, test_envs = make_mujoco_env(
        args.task, args.seed, args.num_train_envs, args.num_test_envs, obs_norm=False
    )
    algorithm = build_sac(args, env)
    log_path = os.path.join(args.logdir, args.task, "sac", str(args.seed))
    start = time.monotonic()
    try:
        test_collector = Collector[CollectStats](algorithm, test_envs)
        test_collector.reset()
        random_return = float(
            np.mean(test_collector.collect(n_episode=args.num_test_envs, random=True).returns)
        )
        train_collector = Collector[CollectStats](
            algorithm,
            train_envs,
            VectorReplayBuffer(args.buffer_size, len(train_envs)),
            exploration_noise=True,
        )
        train_collector.reset()
        train_collector.collect(n_step=args.start_timesteps, random=True)
        curve = LearningCurve()
        result = algorithm.run_training(
            OffPolicyTrainerParams(
                training_collector=train_collector,
                test_collector=test_collector,
                max_epochs=args.epoch,
                epoch_num_steps=args.epoch_num_steps,
                collection_step_num_env_steps=args.collection_step_num_env_steps,
                test_step_num_episodes=args.num_test_envs,
                batch_size=args.batch_size,
                update_step_num_gradient_steps_per_sample=args.update_per_step,
                test_fn=curve.before_test,
                compute_score_fn=curve.score,
                logger=TensorboardLogger(SummaryWriter(log_path)),
            )
        )
    finally:
        train_envs.close()
        test_envs.close()
    wall = time.monotonic() - start
    png = plot_curve(curve.points, random_return, args.task, os.path.join(log_path, "curve.png"))
    rows = [
        ("task", args.task),
        ("env steps (incl. random start)", f"{args.start_timesteps + result.train_step}"),
        ("wall time", f"{wall:.0f} s"),
        ("random policy return", f"{random_return:.1f}"),
        ("best test return", f"{result.best_reward:.1f} ± {result.best_reward_std:.1f}"),
        ("final test return", f"{curve.points[-1][1]:.1f} ± {curve.points[-1][2]:.1f}"),
        ("TensorBoard log", log_path),
        ("learning curve", png),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def plot_curve(
    points: list[tuple[int, float, float]], random_return: float, task: str, path: str
) -> str:
    """Save the test return against env steps, with the random policy's return for reference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, means, stds = (np.array(column) for column in zip(*points, strict=True))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, means, marker="o", label="SAC (mean test return)")
    ax.fill_between(steps, means - stds, means + stds, alpha=0.2)
    ax.axhline(random_return, color="grey", linestyle="--", label="random policy")
    ax.set_xlabel("training env steps")
    ax.set_ylabel("test return")
    ax.set_title(f"SAC on {task}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
