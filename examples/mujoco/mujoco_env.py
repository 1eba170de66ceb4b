"""What the MuJoCo example scripts share: environments, command line, training, saving, watching.

The supported tasks are gymnasium 1.x's ``-v5`` MuJoCo tasks on mujoco (``Hopper-v5``,
``HalfCheetah-v5``, ``Walker2d-v5``, ``Ant-v5``, ``Humanoid-v5``, ...).

Every script (``mujoco_<algo>.py``) builds its parser with :func:`common_parser`, its algorithm
with its own ``build_<algo>(args, env)``, and hands both to :func:`run_experiment`, which trains
(or, with ``--watch``, evaluates) and writes everything under ``--logdir/<task>/<algo>/<seed>``.

The high-level scripts (``mujoco_<algo>_hl.py``) build their envs with :class:`MujocoEnvFactory`.
"""

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import torch
from torch import nn
from torch.distributions import Distribution, Independent, Normal

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import LRSchedulerFactoryLinear, OptimizerFactory
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.env import (
    BaseVectorEnv,
    DummyVectorEnv,
    SubprocVectorEnv,
    VectorEnvNormObs,
    make_envpool_env,
)
from tianshou.highlevel.env import (
    ContinuousEnvironments,
    EnvFactoryRegistered,
    EnvPoolFactory,
    VectorEnvType,
)
from tianshou.highlevel.persistence import Persistence, PersistEvent, RestoreEvent
from tianshou.highlevel.world import World
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)
from tianshou.utils.statistics import RunningMeanStd

sys.path.append(str(Path(__file__).resolve().parents[1]))  # examples/, for the shared command line
from script_cli import ArgumentParser, add_logger_options, logger_from_args

VectorBackend = Literal["auto", "dummy", "subproc", "envpool"]
TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)

POLICY_FILE = "policy.pth"
OBS_RMS_FILE = "obs_rms.npz"
CHECKPOINT_DIR = "checkpoint"


def has_display() -> bool:
    """Whether a window can be opened (an X11 or Wayland display is set)."""
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


if not has_display():
    # MuJoCo must then render off-screen, through EGL. It reads the choice when it is imported,
    # which gymnasium does on the first gym.make of a MuJoCo task (nothing above imports it).
    os.environ.setdefault("MUJOCO_GL", "egl")


# ---------------------------------------------------------------------------- environments
def make_vector_env(
    task: str,
    num_envs: int,
    seed: int,
    backend: VectorBackend = "auto",
    render_mode: str | None = None,
) -> BaseVectorEnv:
    """``num_envs`` seeded copies of ``task`` (env ``i`` gets ``seed + i``).

    :param backend: ``"dummy"`` steps the envs in this process (best for one or two envs, whose
        step is cheaper than a process round trip); ``"subproc"`` uses one process per env;
        ``"envpool"`` uses EnvPool's thread pool (falls back to subprocesses when EnvPool does not
        know the task); ``"auto"`` picks dummy for up to two envs and EnvPool otherwise.
    :param render_mode: gymnasium's render mode for the envs (``"human"`` opens a window). A
        window must belong to this process, so rendering envs always run in-process.
    """
    if render_mode is not None:
        backend = "dummy"
    if backend == "auto":
        backend = "dummy" if num_envs <= 2 else "envpool"
    if backend == "envpool":
        return make_envpool_env(task, num_envs, seed=seed)
    env_fns = [lambda: gym.make(task, render_mode=render_mode) for _ in range(num_envs)]
    venv: BaseVectorEnv = (
        DummyVectorEnv(env_fns) if backend == "dummy" else SubprocVectorEnv(env_fns)
    )
    venv.seed(seed)
    return venv


def make_mujoco_env(
    task: str,
    seed: int,
    num_train_envs: int,
    num_test_envs: int,
    obs_norm: bool,
    backend: VectorBackend = "auto",
    test_render_mode: str | None = None,
) -> tuple[gym.Env, BaseVectorEnv, BaseVectorEnv]:
    """A single env (for its spaces), and the training and test vector envs.

    With ``obs_norm`` the training envs normalise observations with running statistics and the
    test envs use the training envs' statistics, frozen, so that evaluation sees the same input
    scaling the policy was trained on. ``test_render_mode`` is the test envs' render mode
    (``"human"`` to watch a policy).
    """
    env = gym.make(task)
    train_envs = make_vector_env(task, num_train_envs, seed, backend)
    test_envs = make_vector_env(task, num_test_envs, seed + 10_000, backend, test_render_mode)
    if obs_norm:
        train_envs = VectorEnvNormObs(train_envs)
        test_envs = VectorEnvNormObs(test_envs, update_obs_rms=False)
        test_envs.set_obs_rms(train_envs.get_obs_rms())
    return env, train_envs, test_envs


# ---------------------------------------------------------------------------- video
def record_video(
    algorithm: Algorithm,
    task: str,
    path: str,
    seed: int = 0,
    obs_rms: RunningMeanStd | None = None,
    max_steps: int = 1000,
    fps: int | None = None,
) -> str:
    """Record one deterministic episode of ``algorithm``'s policy on ``task`` as a video file.

    The policy acts in eval mode without exploration noise (its ``deterministic_eval`` mean or
    mode action, as in testing). An MP4 has one frame per env step, rendered after the step;
    frames are at most 240 pixels a side, so that a 1000-step episode is well under 1 MB.

    :param path: where to write; the extension becomes ``.mp4`` (H.264 through imageio-ffmpeg)
        or, when ffmpeg is unavailable, ``.gif``. A GIF keeps every k-th frame, for at most 25
        frames per second (about 2 MB for a 1000-step Hopper episode).
    :param seed: the seed of the episode's reset.
    :param obs_rms: the observation statistics the policy was trained with (the training envs'
        ``get_obs_rms()``, or :func:`load_obs_rms`); applied frozen, as the test envs do.
    :param max_steps: the episode is cut after this many steps.
    :param fps: frames per second of the video; by default the env's real-time rate.
    :return: the path actually written.
    """
    path = os.path.splitext(path)[0] + (".mp4" if _ffmpeg_available() else ".gif")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    env = _make_rendering_env(task)
    fps = fps or int(env.metadata.get("render_fps") or 30)
    was_training = algorithm.training
    algorithm.eval()
    try:
        frames = _play_episode(algorithm, env, seed, obs_rms, max_steps)
    finally:
        env.close()
        algorithm.train(was_training)
    _write_video(frames, path, fps)
    return path


def _make_rendering_env(task: str, size: int = 240) -> gym.Env:
    """``task`` rendering ``rgb_array`` frames, at ``size`` pixels a side if the env supports it
    (MuJoCo envs do; rendering small is faster than downscaling later).

    The view is the model's ``track`` camera, which follows the body (the locomotion tasks
    have one; without it MuJoCo's free camera is used), so that a hopper does not hop out of
    the picture. Shadows and reflections are switched off: without a GPU, EGL renders in
    software, where they make every frame 5-8x slower. Only the looks change, not the physics."""
    try:
        env = gym.make(task, render_mode="rgb_array", width=size, height=size, camera_name="track")
    except TypeError:
        return gym.make(task, render_mode="rgb_array")
    model = getattr(env.unwrapped, "model", None)
    if model is not None and hasattr(model, "light_castshadow"):
        model.light_castshadow[:] = 0
        model.mat_reflectance[:] = 0
    return env


def _play_episode(
    algorithm: Algorithm,
    env: gym.Env,
    seed: int,
    obs_rms: RunningMeanStd | None,
    max_steps: int,
) -> list[np.ndarray]:
    frames = []
    obs, info = env.reset(seed=seed)
    for _ in range(max_steps):
        policy_obs = obs_rms.norm(obs) if obs_rms is not None else obs
        act = algorithm.policy.compute_action(policy_obs, info)
        obs, _, terminated, truncated, info = env.step(act)
        frames.append(_small_frame(env.render()))  # type: ignore[arg-type]
        if terminated or truncated:
            break
    return frames


def _small_frame(frame: np.ndarray, max_side: int = 240) -> np.ndarray:
    """``frame`` subsampled to at most ``max_side`` pixels a side, cropped to even sizes (H.264)."""
    stride = -(-max(frame.shape[:2]) // max_side)
    small = frame[::stride, ::stride]
    height, width = small.shape[0] // 2 * 2, small.shape[1] // 2 * 2
    return np.ascontiguousarray(small[:height, :width])


def _ffmpeg_available() -> bool:
    try:
        import imageio_ffmpeg

        imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError):
        return False
    return True


GIF_MAX_FPS = 25


def _write_video(frames: list[np.ndarray], path: str, fps: int) -> None:
    if path.endswith(".gif"):
        # GIF delays are whole centiseconds and players slow down very short ones, so a GIF
        # keeps every k-th frame, for at most GIF_MAX_FPS frames per second of real time.
        stride = -(-fps // GIF_MAX_FPS)
        duration = 1000 * stride / fps
        imageio.mimsave(path, frames[::stride], duration=duration, loop=0)  # type: ignore[arg-type]
        return
    with imageio.get_writer(path, fps=fps, codec="libx264", macro_block_size=2) as writer:
        for frame in frames:
            writer.append_data(frame)  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- saving
def save_obs_rms(obs_rms: RunningMeanStd, path: str) -> None:
    """Write observation statistics as plain arrays (``.npz``; loading them runs no code)."""
    np.savez(
        path,
        mean=np.asarray(obs_rms.mean, dtype=np.float64),
        var=np.asarray(obs_rms.var, dtype=np.float64),
        count=np.asarray(obs_rms.count, dtype=np.float64),
        clip_max=np.asarray(obs_rms.clip_max or 0.0, dtype=np.float64),
        eps=np.asarray(obs_rms.eps, dtype=np.float64),
    )


def load_obs_rms(path: str) -> RunningMeanStd:
    """Read statistics written by :func:`save_obs_rms`."""
    with np.load(path, allow_pickle=False) as data:
        obs_rms = RunningMeanStd(
            mean=data["mean"],
            std=data["var"],
            clip_max=float(data["clip_max"]) or None,
            epsilon=float(data["eps"]),
        )
        obs_rms.count = float(data["count"])  # type: ignore[assignment]
    return obs_rms


def save_algorithm(algorithm: Algorithm, train_envs: BaseVectorEnv, log_path: str) -> None:
    """Save the algorithm's state (networks and optimisers) and, if used, the observation stats."""
    torch.save(algorithm.state_dict(), os.path.join(log_path, POLICY_FILE))
    if isinstance(train_envs, VectorEnvNormObs):
        save_obs_rms(train_envs.get_obs_rms(), os.path.join(log_path, OBS_RMS_FILE))


def load_algorithm(
    algorithm: Algorithm,
    path: str,
    device: str | torch.device,
    envs: Sequence[BaseVectorEnv] = (),
) -> RunningMeanStd | None:
    """Restore a state saved by :func:`save_algorithm` (networks and optimisers).

    The observation statistics saved next to ``path`` (if any) are given to every
    observation-normalising env of ``envs`` and returned: a policy is only valid with them.
    """
    state = torch.load(path, map_location=device, weights_only=True)
    algorithm.load_state_dict(state)
    rms_path = os.path.join(os.path.dirname(path), OBS_RMS_FILE)
    if not os.path.exists(rms_path):
        return None
    obs_rms = load_obs_rms(rms_path)
    for venv in envs:
        if isinstance(venv, VectorEnvNormObs):
            venv.set_obs_rms(obs_rms)
    return obs_rms


# ---------------------------------------------------------------------------- command line
def common_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """The options every MuJoCo script has; ``defaults`` are the script's own defaults for them.

    The script adds its algorithm's options to the returned parser.
    """
    parser = ArgumentParser(description=(description or "").split("\n")[0])
    parser.add_argument("--task", default="Hopper-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=100, help="number of epochs")
    parser.add_argument("--epoch-num-steps", type=int, default=30_000, help="env steps/epoch")
    parser.add_argument(
        "--collection-step-num-env-steps", type=int, default=1, help="env steps/collection"
    )
    parser.add_argument("--num-train-envs", type=int, default=1)
    parser.add_argument("--num-test-envs", type=int, default=10, help="also test episodes")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--buffer-size", type=int, default=1_000_000)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[256, 256])
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument(
        "--backend", default="auto", choices=["auto", "dummy", "subproc", "envpool"]
    )
    parser.add_argument("--logdir", default="log")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved policy.pth to load")
    parser.add_argument(
        "--save-checkpoints",
        action=argparse.BooleanOptionalAction,
        default=False,
        help=f"save the state after every epoch to <log dir>/{CHECKPOINT_DIR}/, so that an "
        "interrupted run continues with --resume-path <that>/policy.pth --resume-from-log",
    )
    parser.add_argument(
        "--resume-from-log",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="continue from the epoch and step counters of the log's last checkpoint",
    )
    add_logger_options(parser, wandb_project="mujoco.benchmark")
    parser.add_argument(
        "--watch",
        action="store_true",
        help="only evaluate the loaded policy (in a window, or as a video without a display)",
    )
    parser.add_argument("--render", type=float, default=0.0, help="seconds between frames")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.set_known_defaults(**defaults)
    return parser


def off_policy_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """:func:`common_parser` with the options of the off-policy scripts and their defaults
    (256x256 networks, 200 epochs of 5000 steps, one env step and one gradient step at a time)."""
    parser = common_parser(description, epoch=200, epoch_num_steps=5000)
    parser.add_argument("--actor-lr", type=float, default=1e-3)
    parser.add_argument("--critic-lr", type=float, default=1e-3)
    parser.add_argument("--tau", type=float, default=0.005, help="soft target-update rate")
    parser.add_argument(
        "--start-timesteps", type=int, default=10_000, help="uniformly random steps first"
    )
    parser.add_argument(
        "--update-per-step", type=float, default=1.0, help="gradient steps per env step"
    )
    parser.add_argument("--n-step", type=int, default=1, help="n-step return horizon")
    parser.set_known_defaults(**defaults)
    return parser


def on_policy_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """:func:`common_parser` with the options of the on-policy scripts and their defaults
    (64x64 tanh networks, 16 envs, 100 epochs of 30k steps, observation normalisation)."""
    parser = common_parser(
        description,
        hidden_sizes=[64, 64],
        buffer_size=4096,
        num_train_envs=16,
        batch_size=99_999,
    )
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument(
        "--lr-decay",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="decay the learning rate linearly to 0 over the run",
    )
    parser.add_argument(
        "--return-scaling",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="scale returns by their running standard deviation",
    )
    parser.add_argument(
        "--update-step-num-repetitions", type=int, default=1, help="passes over each collection"
    )
    parser.add_argument(
        "--action-bound-method",
        default="clip",
        choices=["clip", "tanh"],
        help="how sampled actions are bounded",
    )
    parser.add_argument(
        "--deterministic-eval",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="test with the mean action instead of sampling",
    )
    parser.set_known_defaults(**defaults)
    return parser


# ---------------------------------------------------------------------------- running
def log_dir(args: argparse.Namespace, algo_name: str) -> str:
    """``--logdir/<task>/<algo>/<seed>``: where a run's log, policy and video go."""
    return os.path.join(args.logdir, args.task, algo_name, str(args.seed))


TrainFn = Callable[
    [TAlgorithm, BaseVectorEnv, Collector[CollectStats], str, argparse.Namespace], InfoStats
]


def run_experiment(
    args: argparse.Namespace,
    algo_name: str,
    build: Callable[[argparse.Namespace, gym.Env], TAlgorithm],
    train: TrainFn,
    obs_norm: bool,
) -> InfoStats | CollectStats:
    """Train ``build(args, env)`` with ``train`` or, with ``--watch``, evaluate it.

    With ``--resume-path`` the saved state (networks, optimisers and observation statistics) is
    loaded first, and training continues from it. ``--watch`` evaluates ``--num-test-envs``
    episodes; with a display they are shown in a window, without one a deterministic episode is
    recorded to ``<log dir>/watch.mp4`` (see :func:`record_video`).
    """
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    window = args.watch and has_display()
    env, train_envs, test_envs = make_mujoco_env(
        args.task,
        args.seed,
        args.num_train_envs,
        args.num_test_envs,
        obs_norm=obs_norm,
        backend=args.backend,
        test_render_mode="human" if window else None,
    )
    algorithm = build(args, env)
    log_path = log_dir(args, algo_name)
    if args.resume_path:
        load_algorithm(algorithm, args.resume_path, args.device, [train_envs, test_envs])
        print(f"loaded {args.resume_path}")
    test_collector = Collector[CollectStats](algorithm, test_envs)
    try:
        if args.watch:
            if not window:
                obs_rms = (
                    test_envs.get_obs_rms() if isinstance(test_envs, VectorEnvNormObs) else None
                )
                video = os.path.join(log_path, "watch.mp4")
                video = record_video(algorithm, args.task, video, args.seed, obs_rms)
                print(f"no display: recorded an episode to {video}")
            test_collector.reset()
            render = args.render or None if window else None
            stats = test_collector.collect(n_episode=args.num_test_envs, render=render)
            print(f"mean return {stats.returns.mean():.1f} over {len(stats.returns)} episodes")
            return stats
        result = train(algorithm, train_envs, test_collector, log_path, args)
        print(result)
        return result
    finally:
        train_envs.close()
        test_envs.close()


def checkpoint_saver(
    algorithm: Algorithm, train_envs: BaseVectorEnv, log_path: str, args: argparse.Namespace
) -> Callable[[int, int, int], str] | None:
    """The trainer's ``save_checkpoint_fn`` with ``--save-checkpoints`` (else None): it saves
    the state as :func:`save_algorithm` does, into ``<log_path>/checkpoint/``.

    Each file is written aside first and then moved into place, so that a run killed while
    saving still leaves the previous epoch's complete files.
    """
    if not args.save_checkpoints:
        return None
    directory = os.path.join(log_path, CHECKPOINT_DIR)
    staging = directory + ".partial"

    def save(epoch: int, env_step: int, update_step: int) -> str:
        os.makedirs(staging, exist_ok=True)
        os.makedirs(directory, exist_ok=True)
        save_algorithm(algorithm, train_envs, staging)
        for name in os.listdir(staging):
            os.replace(os.path.join(staging, name), os.path.join(directory, name))
        os.rmdir(staging)
        return os.path.join(directory, POLICY_FILE)

    return save


def train_off_policy(
    algorithm: Algorithm,
    train_envs: BaseVectorEnv,
    test_collector: Collector[CollectStats],
    log_path: str,
    args: argparse.Namespace,
) -> InfoStats:
    """Off-policy training: ``--start-timesteps`` uniformly random steps, then the trainer.

    ``args`` needs, besides the common options, ``start_timesteps`` and ``update_per_step``.
    """
    buffer = VectorReplayBuffer(args.buffer_size, len(train_envs))
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.start_timesteps, random=True)
    return algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_per_step,
            save_best_fn=lambda alg: save_algorithm(alg, train_envs, log_path),
            save_checkpoint_fn=checkpoint_saver(algorithm, train_envs, log_path, args),
            logger=logger_from_args(args, log_path, os.path.relpath(log_path, args.logdir)),
            resume_from_log=args.resume_id is not None or args.resume_from_log,
            show_progress=not args.no_progress,
        )
    )


def train_on_policy(
    algorithm: Algorithm,
    train_envs: BaseVectorEnv,
    test_collector: Collector[CollectStats],
    log_path: str,
    args: argparse.Namespace,
) -> InfoStats:
    """On-policy training: each collection is learned from ``--update-step-num-repetitions``
    times, then discarded.

    A ``--batch-size`` at least as large as a collection learns from it in one batch.
    """
    buffer = VectorReplayBuffer(args.buffer_size, len(train_envs))
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
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
            save_best_fn=lambda alg: save_algorithm(alg, train_envs, log_path),
            save_checkpoint_fn=checkpoint_saver(algorithm, train_envs, log_path, args),
            logger=logger_from_args(args, log_path, os.path.relpath(log_path, args.logdir)),
            resume_from_log=args.resume_id is not None or args.resume_from_log,
            show_progress=not args.no_progress,
        )
    )


# ---------------------------------------------------------------------------- networks
def _spaces(env: gym.Env) -> tuple[Any, Any]:
    return env.observation_space.shape, env.action_space.shape


def probabilistic_actor(args: argparse.Namespace, env: gym.Env) -> ContinuousActorProbabilistic:
    """The SAC/REDQ actor: a state-conditioned Gaussian on ``--hidden-sizes`` ReLU layers."""
    obs_shape, act_shape = _spaces(env)
    return ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=args.hidden_sizes),
        action_shape=act_shape,
        unbounded=True,
        conditioned_sigma=True,
    ).to(args.device)


def deterministic_actor(args: argparse.Namespace, env: gym.Env) -> ContinuousActorDeterministic:
    """The DDPG/TD3 actor: ``--hidden-sizes`` ReLU layers and a tanh output in [-1, 1]."""
    obs_shape, act_shape = _spaces(env)
    return ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=obs_shape, hidden_sizes=args.hidden_sizes),
        action_shape=act_shape,
    ).to(args.device)


def q_critic(args: argparse.Namespace, env: gym.Env) -> ContinuousCritic:
    """A Q-network of the concatenated observation and action on ``--hidden-sizes`` layers."""
    obs_shape, act_shape = _spaces(env)
    net = Net(
        state_shape=obs_shape, action_shape=act_shape, hidden_sizes=args.hidden_sizes, concat=True
    )
    return ContinuousCritic(preprocess_net=net).to(args.device)


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    """A diagonal Gaussian over the action vector (one log-probability per action).

    The actor's output is the pair ``(loc, scale)``, passed whole to the distribution function.
    """
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def on_policy_actor_critic(
    args: argparse.Namespace, env: gym.Env
) -> tuple[ContinuousActorProbabilistic, ContinuousCritic]:
    """A Gaussian actor and a state-value critic on ``--hidden-sizes`` tanh layers.

    Initialised as Andrychowicz et al. (2020) recommend for on-policy methods: orthogonal
    weights, zero biases, a state-independent log standard deviation of -0.5, and a last policy
    layer scaled by 0.01 so that the policy starts near zero mean.
    """
    obs_shape, act_shape = _spaces(env)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(
            state_shape=obs_shape, hidden_sizes=args.hidden_sizes, activation=nn.Tanh
        ),
        action_shape=act_shape,
        unbounded=True,
    ).to(args.device)
    critic = ContinuousCritic(
        preprocess_net=Net(
            state_shape=obs_shape, hidden_sizes=args.hidden_sizes, activation=nn.Tanh
        )
    ).to(args.device)
    nn.init.constant_(actor.sigma_param, -0.5)
    for module in [*actor.modules(), *critic.modules()]:
        if isinstance(module, nn.Linear):
            nn.init.orthogonal_(module.weight, gain=np.sqrt(2))
            nn.init.zeros_(module.bias)
    for module in actor.mu.modules():
        if isinstance(module, nn.Linear):
            module.weight.data.mul_(0.01)
    return actor, critic


def gaussian_policy(
    args: argparse.Namespace, actor: nn.Module, env: gym.Env
) -> ProbabilisticActorPolicy:
    """The on-policy scripts' policy: :func:`gaussian` actions, bounded by
    ``--action-bound-method``, mean actions in testing with ``--deterministic-eval``."""
    return ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=gaussian,
        deterministic_eval=args.deterministic_eval,
        action_space=env.action_space,
        action_scaling=True,
        action_bound_method=args.action_bound_method,
    )


def with_lr_decay(optim: OptimizerFactory, args: argparse.Namespace) -> OptimizerFactory:
    """``optim`` with a learning rate decaying linearly to 0 over the run if ``--lr-decay``."""
    if not args.lr_decay:
        return optim
    return optim.with_lr_scheduler_factory(
        LRSchedulerFactoryLinear(
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
        )
    )


# ---------------------------------------------------------------------------- high-level API
class MujocoEnvObsRmsPersistence(Persistence):
    """Saves the training envs' observation statistics with the policy, and restores them.

    A policy trained on normalised observations is only valid with the statistics it was
    trained on; they are written next to the policy as :data:`OBS_RMS_FILE` (plain arrays,
    see :func:`save_obs_rms`) and, on restoring, given to all of the world's
    observation-normalising envs.
    """

    FILENAME = OBS_RMS_FILE

    def persist(self, event: PersistEvent, world: World) -> None:
        if event != PersistEvent.PERSIST_POLICY:
            return
        training_envs = world.envs.training_envs
        if not isinstance(training_envs, VectorEnvNormObs):
            raise TypeError(
                f"{type(self).__name__} needs observation-normalising training envs "
                f"(VectorEnvNormObs), got {type(training_envs).__name__}"
            )
        path = world.persist_path(self.FILENAME)
        tmp_path = path[: -len(".npz")] + ".tmp.npz"  # np.savez keeps a .npz suffix as is
        save_obs_rms(training_envs.get_obs_rms(), tmp_path)
        os.replace(tmp_path, path)

    def restore(self, event: RestoreEvent, world: World) -> None:
        if event != RestoreEvent.RESTORE_POLICY:
            return
        obs_rms = load_obs_rms(world.restore_path(self.FILENAME))
        for venv in (world.envs.training_envs, world.envs.test_envs, world.envs.watch_env):
            if isinstance(venv, VectorEnvNormObs):
                venv.set_obs_rms(obs_rms)


def _envpool_knows(task: str) -> bool:
    try:
        import envpool
    except ImportError:
        return False
    return task in envpool.list_all_envs()


class MujocoEnvFactory(EnvFactoryRegistered):
    """Builds the envs of a MuJoCo task for the high-level API, optionally normalising
    observations.

    With ``obs_norm`` the training envs normalise observations by running statistics, and the
    test and watch envs use the same statistics object, frozen (they see the training envs'
    current statistics without changing them); the statistics are saved and restored with the
    policy (:class:`MujocoEnvObsRmsPersistence`).

    :param task: a gymnasium MuJoCo task, e.g. ``"Hopper-v5"``.
    :param obs_norm: whether to normalise observations.
    :param venv_type: how training and test envs run when EnvPool is not used.
    :param use_envpool_if_available: build the training and test envs with EnvPool (much
        faster) when it is installed and knows the task, as :func:`make_mujoco_env` does.
    """

    def __init__(
        self,
        task: str,
        obs_norm: bool = True,
        venv_type: VectorEnvType = VectorEnvType.SUBPROC_SHARED_MEM_AUTO,
        use_envpool_if_available: bool = True,
    ) -> None:
        use_envpool = use_envpool_if_available and _envpool_knows(task)
        super().__init__(
            task=task,
            venv_type=venv_type,
            envpool_factory=EnvPoolFactory() if use_envpool else None,
        )
        self.obs_norm = obs_norm

    def create_envs(
        self,
        num_training_envs: int,
        num_test_envs: int,
        create_watch_env: bool = False,
        seed: int | None = None,
    ) -> ContinuousEnvironments:
        envs = super().create_envs(num_training_envs, num_test_envs, create_watch_env, seed)
        if not isinstance(envs, ContinuousEnvironments):
            raise ValueError(
                f"MujocoEnvFactory needs a task with a continuous (Box) action space; "
                f"{self.task} has {envs.get_action_space()}"
            )
        if self.obs_norm:
            training_envs = VectorEnvNormObs(envs.training_envs)
            envs.training_envs = training_envs
            envs.test_envs = _frozen_obs_norm(envs.test_envs, training_envs.get_obs_rms())
            if envs.watch_env is not None:
                envs.watch_env = _frozen_obs_norm(envs.watch_env, training_envs.get_obs_rms())
            envs.set_persistence(MujocoEnvObsRmsPersistence())
        return envs


def _frozen_obs_norm(venv: BaseVectorEnv, obs_rms: RunningMeanStd) -> VectorEnvNormObs:
    """``venv`` normalising observations by ``obs_rms`` without updating it."""
    normalising = VectorEnvNormObs(venv, update_obs_rms=False)
    normalising.set_obs_rms(obs_rms)
    return normalising
