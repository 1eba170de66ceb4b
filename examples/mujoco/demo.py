"""``make demo``: PPO learns to hop on MuJoCo's Hopper-v5 in a few minutes on a 2-core CPU.

It trains ``mujoco_ppo.py``'s PPO (64x64 tanh networks, observation normalisation) on 8
EnvPool envs for 10 epochs of 51,200 env steps, with settings for a short budget (see
``DEMO_PPO_ARGS``) and a progress bar; then it prints the run's summary and a table next to a
uniformly random policy, and writes a TensorBoard log, the best policy (``policy.pth``), a
result file, a learning-curve PNG and a video of one episode of the trained policy under
``--persistence-base-dir/<task>/ppo/<seed>``.

PPO's deterministic test return can swing by a thousand or more from one epoch to the next (a
policy that hops one epoch may fall early the next), so the demo ends with the policy that
tested best, not the last one: it keeps a copy of that policy (weights and observation
statistics), and its final test return and video are that policy's, on new test episodes.

    python examples/mujoco/demo.py [--seed 0] [--epoch 10] [--persistence-base-dir log/demo]
    python -m examples.mujoco.demo --no-video

Options the demo does not declare go to ``mujoco_ppo.py``'s parser (e.g. ``--lr 3e-4``). The demo
always trains from scratch; watch its policy with ``mujoco_ppo.py``::

    python examples/mujoco/mujoco_ppo.py --watch --resume-path log/demo/Hopper-v5/ppo/0/policy.pth
"""

import argparse
import copy
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.env.mujoco import make_mujoco_env
from tianshou.env.obs_norm_file import array_obs_rms
from tianshou.evaluation.video import record_video, select_offscreen_rendering
from tianshou.scripts.mujoco.ppo import build_ppo, ppo_parser
from tianshou.scripts.persistence import POLICY_FILE, save_algorithm
from tianshou.scripts.summary import report_training
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.cli import ArgumentParser, add_torch_threads_option, torch_threads_from_args
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.statistics import RunningMeanStd

# PPO for a budget of about 500k env steps: rollouts of 1024 steps over 8 envs and minibatches
# of 256 at lr 1e-3 (decayed linearly to 0) give many cheap policy updates per env step;
# normalised advantages keep the step size steady. Some seeds first settle on lunging forward
# (a return of about 450) and need 200k-300k more steps to learn to hop, hence the budget.
# Written out in full so that the demo does not change when mujoco_ppo.py's defaults do.
DEMO_PPO_ARGS = (
    "--hidden-sizes", "64", "64", "--lr", "1e-3", "--lr-decay",
    "--collection-step-num-env-steps", "1024", "--update-step-num-repetitions", "10",
    "--batch-size", "256", "--buffer-size", "4096", "--advantage-normalization",
    "--ent-coef", "0.0", "--gae-lambda", "0.95", "--gamma", "0.99", "--return-scaling",
)  # fmt: skip


def get_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The demo's options, merged into the namespace of PPO's parser (PPO's own options pass
    through, after ``DEMO_PPO_ARGS``, so they override it)."""
    parser = ArgumentParser(
        description=__doc__.split("\n")[0],
        epilog="Other options go to mujoco_ppo.py's parser (e.g. --lr 3e-4, --no-progress).",
    )
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=10)
    parser.add_argument("--epoch-num-steps", type=int, default=51_200)
    parser.add_argument("--num-training-envs", type=int, default=8)
    parser.add_argument("--num-test-envs", type=int, default=10, help="also test episodes")
    parser.add_argument("--persistence-base-dir", default=os.path.join("log", "demo"))
    parser.add_argument(
        "--video",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="record an episode of the best policy (headless: MUJOCO_GL=egl)",
    )
    parser.add_argument("--video-max-steps", type=int, default=1000)
    add_torch_threads_option(parser)
    own, rest = parser.parse_known_args(argv)
    ppo = ppo_parser(__doc__)
    args = ppo.parse_args(
        [
            *DEMO_PPO_ARGS, "--task", own.task, "--seed", str(own.seed),
            "--epoch", str(own.epoch), "--epoch-num-steps", str(own.epoch_num_steps),
            "--num-training-envs", str(own.num_training_envs),
            "--num-test-envs", str(own.num_test_envs),
            "--persistence-base-dir", own.persistence_base_dir, *rest,
        ]
    )  # fmt: skip
    if args.watch or args.resume_path:
        ppo.error(
            "the demo always trains from scratch; watch its policy with examples/mujoco/"
            "mujoco_ppo.py --watch --resume-path <log dir>/policy.pth"
        )
    args.video, args.video_max_steps = own.video, own.video_max_steps
    args.torch_threads = own.torch_threads
    return args


class LearningCurve:
    """Records (env step, mean, std of the test return, mean episode length) at every test
    step through the trainer's callbacks."""

    def __init__(self) -> None:
        self.points: list[tuple[int, float, float, float]] = []
        self._env_step = 0

    def before_test(self, epoch: int, env_step: int | None) -> None:
        self._env_step = env_step or 0

    def score(self, stats: CollectStats) -> float:
        mean = float(np.mean(stats.returns))
        self.points.append(
            (self._env_step, mean, float(np.std(stats.returns)), float(np.mean(stats.lens)))
        )
        return mean


class BestPolicy:
    """The trainer's ``save_best_fn``: keeps copies of the best-testing policy's state and of
    the observation statistics it was tested with, to end the demo with that policy."""

    def __init__(self, train_envs: BaseVectorEnv, curve: LearningCurve) -> None:
        self._train_envs = train_envs
        self._curve = curve
        self._state: dict[str, object] = {}
        self.obs_rms: RunningMeanStd | None = None
        self.env_step = 0

    def save(self, algorithm: torch.nn.Module) -> None:
        self._state = copy.deepcopy(algorithm.state_dict())
        if isinstance(self._train_envs, VectorEnvNormObs):
            self.obs_rms = copy.deepcopy(array_obs_rms(self._train_envs))
        self.env_step = self._curve.points[-1][0]

    def restore(self, algorithm: torch.nn.Module, test_envs: BaseVectorEnv) -> None:
        """Load the saved state into ``algorithm`` and its statistics into ``test_envs``."""
        algorithm.load_state_dict(self._state)
        if self.obs_rms is not None and isinstance(test_envs, VectorEnvNormObs):
            test_envs.set_obs_rms(self.obs_rms)


@dataclass
class DemoResult:
    """What the demo's table shows. ``wall_s`` is the time of training and its tests, ``total_s``
    that of the whole demo (envs, random policy, final test, plot and video too). The ``last_*``
    figures are the last epoch's test, ``best_*`` the best epoch's (at ``best_env_step``), and
    ``final_*`` the best policy's on new test episodes. ``video`` is None when no video was
    recorded, and ``video_note`` then says why."""

    env_steps: int
    wall_s: float
    random_return: float
    last_return: float
    last_return_std: float
    best_return: float
    best_return_std: float
    best_env_step: int
    final_return: float
    final_return_std: float
    final_episode_length: float
    log_path: str
    curve_path: str
    video: str | None
    video_note: str
    total_s: float


def main(argv: Sequence[str] | None = None) -> DemoResult:
    """Train, test, plot, record, and print the result table; ``argv`` as on the command line."""
    begin = time.monotonic()
    args = get_args(argv)
    select_offscreen_rendering()  # for the video, before the first MuJoCo env is made
    with torch_threads_from_args(args):  # the envs step in EnvPool's threads
        return run(args, begin)


def run(args: argparse.Namespace, begin: float) -> DemoResult:
    """The demo with the options ``args``, started at ``begin`` (``time.monotonic()``)."""
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    env, train_envs, test_envs = make_mujoco_env(
        args.task,
        args.seed,
        args.num_training_envs,
        args.num_test_envs,
        obs_norm=True,
        backend=args.backend,
    )
    algorithm = build_ppo(args, env)
    log_path = os.path.join(args.persistence_base_dir, args.task, "ppo", str(args.seed))
    curve = LearningCurve()
    best = BestPolicy(train_envs, curve)
    try:
        test_collector = Collector[CollectStats](algorithm, test_envs)
        test_collector.reset()
        random_stats = test_collector.collect(n_episode=args.num_test_envs, random=True)
        start = time.monotonic()
        info = train(algorithm, train_envs, test_collector, curve, best, log_path, args)
        wall = time.monotonic() - start
        best.restore(algorithm, test_envs)
        save_algorithm(algorithm, test_envs, log_path)  # with the statistics it was tested with
        test_collector.reset()
        final = test_collector.collect(n_episode=args.num_test_envs)
    finally:
        train_envs.close()
        test_envs.close()
    final_return = float(np.mean(final.returns))
    curve_path = plot_curve(
        curve.points,
        float(np.mean(random_stats.returns)),
        (best.env_step, final_return),
        args.task,
        log_path,
    )
    video, video_note = (
        record(algorithm, args, log_path, best.obs_rms)
        if args.video
        else (None, "off (--no-video)")
    )
    _, last_mean, last_std, _ = curve.points[-1]
    result = DemoResult(
        env_steps=info.train_step,
        wall_s=wall,
        random_return=float(np.mean(random_stats.returns)),
        last_return=last_mean,
        last_return_std=last_std,
        best_return=info.best_reward,
        best_return_std=info.best_reward_std,
        best_env_step=best.env_step,
        final_return=final_return,
        final_return_std=float(np.std(final.returns)),
        final_episode_length=float(np.mean(final.lens)),
        log_path=log_path,
        curve_path=curve_path,
        video=video,
        video_note=video_note,
        total_s=time.monotonic() - begin,
    )
    report_training(
        task=args.task,
        algorithm="ppo",
        info=info,
        final_test_return=final_return,
        log_dir=log_path,
        config=vars(args),
        policy_path=os.path.join(log_path, POLICY_FILE),
        video_path=video,
    )
    print_table(result, args)
    return result


def train(
    algorithm: PPO,
    train_envs: BaseVectorEnv,
    test_collector: Collector[CollectStats],
    curve: LearningCurve,
    best: BestPolicy,
    log_path: str,
    args: argparse.Namespace,
) -> InfoStats:
    """Run the on-policy trainer, recording the learning curve and keeping the best policy."""
    buffer = VectorReplayBuffer(args.buffer_size, len(train_envs))
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    logger = TensorboardLogger(SummaryWriter(log_path))
    logger.writer.add_text("args", str(vars(args)))
    return algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            update_step_num_repetitions=args.update_step_num_repetitions,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            test_fn=curve.before_test,
            compute_score_fn=curve.score,
            save_best_fn=best.save,
            logger=logger,
            show_progress=not args.no_progress,
        )
    )


def record(
    algorithm: PPO, args: argparse.Namespace, log_path: str, obs_rms: object
) -> tuple[str | None, str]:
    """Record one deterministic episode of the trained policy; (path, "") or (None, why not).

    A missing renderer (e.g. no EGL on a headless machine) must not cost the user the table of
    a finished training run, so any failure is reported instead of raised.
    """
    start = time.monotonic()
    try:
        path = record_video(
            algorithm,
            args.task,
            os.path.join(log_path, "policy.mp4"),
            seed=args.seed,
            obs_rms=obs_rms,  # type: ignore[arg-type]
            max_steps=args.video_max_steps,
        )
    except Exception as error:  # any renderer failure: report it, keep the results
        note = f"not recorded: {type(error).__name__}: {error}"
        print(f"video {note}; training results are unaffected")
        return None, note
    return path, f"({time.monotonic() - start:.0f} s to record)"


def print_table(result: DemoResult, args: argparse.Namespace) -> None:
    """Print the demo's figures beyond the run's summary as a two-column table: the random
    policy for comparison, the spread of the test returns, the curve and the times."""
    rows = [
        ("setting", f"PPO, {args.num_training_envs} train envs, seed {args.seed}"),
        (
            "wall time (training + tests)",
            f"{result.wall_s:.0f} s ({result.env_steps / result.wall_s:,.0f} env steps/s)",
        ),
        ("total time (incl. video)", f"{result.total_s:.0f} s"),
        ("random policy return", f"{result.random_return:.1f}"),
        ("last epoch's test return", f"{result.last_return:.1f} ± {result.last_return_std:.1f}"),
        (
            "best epoch's test return",
            f"{result.best_return:.1f} ± {result.best_return_std:.1f} "
            f"(at {result.best_env_step:,} env steps)",
        ),
        (
            f"final test return, best policy ({args.num_test_envs} new episodes)",
            f"{result.final_return:.1f} ± {result.final_return_std:.1f}",
        ),
        ("final test episode length", f"{result.final_episode_length:.0f} steps"),
        ("learning curve", result.curve_path),
        ("video", f"{result.video} {result.video_note}" if result.video else result.video_note),
    ]
    width = max(len(name) for name, _ in rows)
    print()
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


def plot_curve(
    points: list[tuple[int, float, float, float]],
    random_return: float,
    final: tuple[int, float],
    task: str,
    log_path: str,
) -> str:
    """Save the test return against env steps to ``log_path/curve.png``, with the random
    policy's return for reference and ``final`` (the best policy's env step and final test
    return) as a star; return the PNG's path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, means, stds, _ = (np.array(column) for column in zip(*points, strict=True))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(steps, means, marker="o", label="PPO (mean test return)")
    ax.fill_between(steps, means - stds, means + stds, alpha=0.2)
    ax.plot(*final, marker="*", markersize=14, linestyle="", label="best policy, final test")
    ax.axhline(random_return, color="grey", linestyle="--", label="random policy")
    ax.set_xlabel("training env steps")
    ax.set_ylabel("test return")
    ax.set_title(f"PPO on {task}")
    ax.legend()
    fig.tight_layout()
    path = os.path.join(log_path, "curve.png")
    os.makedirs(log_path, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


if __name__ == "__main__":
    main()
