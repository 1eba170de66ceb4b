"""What the Atari example scripts share: the command line, the environments, logging, watching.

Every script follows the same path: parse the options (:func:`atari_parser`), build the
environments (:func:`atari_envs`), build the algorithm, optionally load ``--resume-path``
(:func:`load_resume_path`), then either evaluate it (:func:`watch`, with ``--watch``) or train it
(:func:`create_logger`, then :func:`train_off_policy` or the script's own on-policy loop).

Observations stay uint8 everywhere: the environments never scale them, the replay buffers store
each frame once (``save_only_last_obs`` with ``stack_num`` frames re-stacked when sampling) and
networks built with ``--scale-obs`` divide by 255 inside (:func:`scale_obs_if`). A 100k-transition
buffer then holds about 100k x 84 x 84 bytes (0.7 GB) instead of 100k x 2 x 4 x 84 x 84 floats.
"""

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm import Algorithm
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm, OnPolicyAlgorithm
from tianshou.algorithm.modelbased.icm import ICMOffPolicyWrapper, ICMOnPolicyWrapper
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import (
    Collector,
    CollectStats,
    InfoStats,
    PrioritizedVectorReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.env import BaseVectorEnv, DummyVectorEnv
from tianshou.env.atari.atari_network import DQNet, ScaledObsInputActionReprNet
from tianshou.env.atari.atari_wrapper import AtariEnvFactory, make_atari_env
from tianshou.highlevel.env import EnvMode
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.logger.logger_base import BaseLogger
from tianshou.utils.net.action_repr import ActionReprNetWithVectorOutput
from tianshou.utils.net.discrete import IntrinsicCuriosityModule

sys.path.append(str(Path(__file__).resolve().parents[1]))  # examples/, for the shared command line
from script_cli import ArgumentParser, add_logger_options, logger_from_args

EPS_DECAY_STEPS = 1_000_000
"""Env steps over which the training epsilon decays linearly (Mnih et al. 2015: 1M frames)."""

PONG_SOLVED = 20.0
"""Test return at which training on Pong stops (its env spec has no reward threshold)."""


def atari_parser(description: str, *, off_policy: bool) -> ArgumentParser:
    """A parser with the options every Atari script has, at the DQN family's published values.

    Scripts add their own options and change defaults with ``parser.set_defaults(...)``.

    :param description: the script's one-line description (``--help``).
    :param off_policy: add the options of off-policy training (``--update-per-step``,
        ``--save-buffer-name``).
    """
    parser = ArgumentParser(description=description)
    parser.add_argument("--task", default="PongNoFrameskip-v4")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scale-obs", type=int, default=0, help="1: divide pixels by 255 inside the network"
    )
    parser.add_argument("--buffer-size", type=int, default=100_000)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument("--epoch", type=int, default=100)
    parser.add_argument("--epoch-num-steps", type=int, default=100_000)
    parser.add_argument("--collection-step-num-env-steps", type=int, default=10)
    if off_policy:
        parser.add_argument(
            "--update-per-step", type=float, default=0.1, help="gradient steps per env step"
        )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--num-train-envs", type=int, default=10)
    parser.add_argument("--num-test-envs", type=int, default=10)
    parser.add_argument("--frames-stack", type=int, default=4)
    parser.add_argument(
        "--max-episode-steps",
        type=int,
        default=None,
        help="truncate every episode after this many agent steps (default: the game's limit)",
    )
    parser.add_argument("--logdir", default="log")
    parser.add_argument(
        "--render", type=float, default=0.0, help="with --watch: seconds between rendered frames"
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved algorithm state to load")
    add_logger_options(parser, wandb_project="atari.benchmark")
    parser.add_argument("--watch", action="store_true", help="only evaluate the loaded policy")
    if off_policy:
        parser.add_argument(
            "--save-buffer-name",
            default=None,
            help="with --watch: collect --buffer-size steps with the policy and save them "
            "to this HDF5 file (e.g. as an offline data set)",
        )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser


def add_q_learning_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the Q-learning scripts: epsilon-greedy schedule, n-step, target network."""
    parser.add_argument("--eps-test", type=float, default=0.005)
    parser.add_argument("--eps-train", type=float, default=1.0)
    parser.add_argument("--eps-train-final", type=float, default=0.05)
    parser.add_argument("--n-step", type=int, default=3)
    parser.add_argument("--target-update-freq", type=int, default=500)


def add_icm_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the intrinsic curiosity module (Pathak et al. 2017), off by default."""
    parser.add_argument(
        "--icm-lr-scale",
        type=float,
        default=0.0,
        help="> 0: wrap the algorithm in an intrinsic curiosity module, its loss scaled by this",
    )
    parser.add_argument(
        "--icm-reward-scale",
        type=float,
        default=0.01,
        help="factor of the ICM's forward-model error in the intrinsic reward",
    )
    parser.add_argument(
        "--icm-forward-loss-weight",
        type=float,
        default=0.2,
        help="weight of the ICM's forward loss (the inverse loss gets 1 minus it)",
    )


def with_icm(
    algorithm: OffPolicyAlgorithm | OnPolicyAlgorithm,
    args: argparse.Namespace,
    envs: "AtariEnvs",
    *,
    feature_layer: int | None = None,
    hidden_size: int = 512,
) -> Algorithm:
    """``algorithm`` wrapped in an intrinsic curiosity module if ``--icm-lr-scale`` > 0.

    The ICM embeds frames with its own Nature-DQN torso (dividing the pixels by 255 first with
    ``--scale-obs``); its forward and inverse models have one hidden layer of ``hidden_size``
    units, and Adam trains it with ``--lr``.

    :param feature_layer: width of a ReLU layer appended to the torso (None: the 3136 conv
        features are the embedding).
    :param hidden_size: width of the hidden layer of the forward and inverse models.
    """
    if args.icm_lr_scale <= 0:
        return algorithm
    torso = DQNet(
        *envs.frame_shape,
        action_shape=envs.num_actions,
        features_only=True,
        output_dim_added_layer=feature_layer,
    )
    model = IntrinsicCuriosityModule(
        feature_net=_FeaturesOnly(scale_obs_if(args.scale_obs, torso)),
        feature_dim=torso.output_dim,
        action_dim=envs.num_actions,
        hidden_sizes=[hidden_size],
        device=args.device,
    )
    model.to(args.device)
    optim = AdamOptimizerFactory(lr=args.lr)
    scales: dict[str, float] = {
        "lr_scale": args.icm_lr_scale,
        "reward_scale": args.icm_reward_scale,
        "forward_loss_weight": args.icm_forward_loss_weight,
    }
    if isinstance(algorithm, OnPolicyAlgorithm):
        return ICMOnPolicyWrapper(wrapped_algorithm=algorithm, model=model, optim=optim, **scales)
    return ICMOffPolicyWrapper(wrapped_algorithm=algorithm, model=model, optim=optim, **scales)


def algo_name_with_icm(args: argparse.Namespace, algo_name: str) -> str:
    """The name runs are logged under: ``algo_name``, suffixed ``_icm`` with an ICM."""
    return f"{algo_name}_icm" if args.icm_lr_scale > 0 else algo_name


class _FeaturesOnly(torch.nn.Module):
    """Adapts a ``(obs) -> (features, state)`` network to the ICM's ``obs -> features``."""

    def __init__(self, net: ActionReprNetWithVectorOutput) -> None:
        super().__init__()
        self.net = net

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)[0]


@dataclass
class AtariEnvs:
    """A single env (for its spaces), the training and test vector envs, and the seconds
    between rendered frames when watching with ``--render`` (None: no rendering)."""

    env: gym.Env
    train_envs: BaseVectorEnv
    test_envs: BaseVectorEnv
    render: float | None = None

    @property
    def frame_shape(self) -> tuple[int, int, int]:
        """The observation shape ``(c, h, w)``: stacked frames, channels first."""
        c, h, w = self.env.observation_space.shape  # type: ignore[misc]
        return c, h, w

    @property
    def num_actions(self) -> int:
        return int(self.env.action_space.n)  # type: ignore[attr-defined]


class EpisodeStepLimit:
    """Truncates every episode of a vector env after ``max_steps`` agent steps.

    Works with the vector envs :func:`make_atari_env` returns (gymnasium-based or EnvPool);
    everything but ``reset`` and ``step`` is read from the wrapped env.

    :param venv: the vector env.
    :param max_steps: the steps after which an episode is reported as truncated.
    """

    def __init__(self, venv: BaseVectorEnv, max_steps: int) -> None:
        if max_steps < 1:
            raise ValueError(f"--max-episode-steps must be at least 1, got {max_steps}")
        self.venv = venv
        self.max_steps = max_steps
        self._steps = np.zeros(len(venv), dtype=np.int64)

    def __getattr__(self, key: str) -> Any:
        if key == "venv":  # not set yet, e.g. while unpickling
            raise AttributeError(key)
        return getattr(self.venv, key)

    def __len__(self) -> int:
        return len(self.venv)

    def _ids(self, env_id: Any) -> np.ndarray:
        return np.arange(len(self)) if env_id is None else np.atleast_1d(np.asarray(env_id))

    def reset(self, env_id: Any = None, **kwargs: Any) -> tuple[Any, Any]:
        self._steps[self._ids(env_id)] = 0
        return self.venv.reset(env_id, **kwargs)

    def step(self, action: Any, env_id: Any = None) -> tuple[Any, Any, Any, np.ndarray, Any]:
        obs, rew, terminated, truncated, info = self.venv.step(action, env_id)
        ids = self._ids(env_id)
        self._steps[ids] += 1
        truncated = np.logical_or(truncated, self._steps[ids] >= self.max_steps)
        return obs, rew, terminated, truncated, info


@contextmanager
def atari_envs(args: argparse.Namespace) -> Iterator[AtariEnvs]:
    """Seed numpy and torch with ``--seed`` and build the unscaled (uint8) environments,
    with episodes cut at ``--max-episode-steps`` if given. With ``--watch --render`` and a
    display, the test envs render to a window (see :func:`render_interval`).

    The vector envs are closed when the block ends.
    """
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    env, train_envs, test_envs = make_atari_env(
        args.task,
        args.seed,
        args.num_train_envs,
        args.num_test_envs,
        scale=0,
        frame_stack=args.frames_stack,
    )
    render = render_interval(args.render) if args.watch else None
    if render is not None:
        test_envs.close()
        test_envs = _rendering_envs(args)
    if args.max_episode_steps is not None:
        train_envs = EpisodeStepLimit(train_envs, args.max_episode_steps)  # type: ignore[assignment]
        test_envs = EpisodeStepLimit(test_envs, args.max_episode_steps)  # type: ignore[assignment]
    try:
        yield AtariEnvs(env, train_envs, test_envs, render)
    finally:
        train_envs.close()
        test_envs.close()


def _rendering_envs(args: argparse.Namespace) -> BaseVectorEnv:
    """``--num-test-envs`` gymnasium test envs rendering to a window (EnvPool cannot render),
    stepped in this process, which owns the window."""
    factory = AtariEnvFactory(args.task, args.frames_stack)
    seeds = range(args.seed, args.seed + args.num_test_envs)
    return DummyVectorEnv([partial(factory.create_env, EnvMode.WATCH, seed) for seed in seeds])


def scale_obs_if(scale: bool, net: ActionReprNetWithVectorOutput) -> ActionReprNetWithVectorOutput:
    """``net`` dividing its uint8 input by 255 first when ``scale`` (``--scale-obs 1``)."""
    return ScaledObsInputActionReprNet(net) if scale else net


def load_resume_path(algorithm: Algorithm, args: argparse.Namespace) -> None:
    """Load the algorithm state saved at ``--resume-path``, if given."""
    if args.resume_path:
        algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        print(f"loaded {args.resume_path}")


def _frame_buffer_options(args: argparse.Namespace) -> dict[str, Any]:
    """Store only each observation's newest frame, re-stack ``--frames-stack`` frames when
    sampling, and read ``obs_next`` from the next row: one uint8 frame per transition."""
    return {"ignore_obs_next": True, "save_only_last_obs": True, "stack_num": args.frames_stack}


def replay_buffer(args: argparse.Namespace, num_envs: int) -> VectorReplayBuffer:
    """A uniform buffer of ``--buffer-size`` transitions, one sub-buffer per env, storing each
    uint8 frame once."""
    return VectorReplayBuffer(args.buffer_size, num_envs, **_frame_buffer_options(args))


def prioritized_replay_buffer(
    args: argparse.Namespace, num_envs: int, alpha: float, beta: float, weight_norm: bool
) -> PrioritizedVectorReplayBuffer:
    """Like :func:`replay_buffer`, with prioritized sampling (see
    :class:`~tianshou.data.PrioritizedReplayBuffer` for ``alpha``, ``beta``, ``weight_norm``)."""
    return PrioritizedVectorReplayBuffer(
        args.buffer_size,
        num_envs,
        alpha=alpha,
        beta=beta,
        weight_norm=weight_norm,
        **_frame_buffer_options(args),
    )


def create_logger(args: argparse.Namespace, algo_name: str) -> tuple[BaseLogger, str]:
    """The logger (``--logger``) writing to ``<logdir>/<task>/<algo_name>/<seed>``, and that
    directory (where :func:`save_best_fn` saves the policy)."""
    run_name = os.path.join(args.task, algo_name, str(args.seed))
    log_path = os.path.join(args.logdir, run_name)
    return logger_from_args(args, log_path, run_name), log_path


def save_best_fn(log_path: str) -> Callable[[Algorithm], None]:
    """Saves the algorithm's state as ``<log_path>/policy.pth`` (for ``--resume-path``)."""

    def save(algorithm: Algorithm) -> None:
        torch.save(algorithm.state_dict(), os.path.join(log_path, "policy.pth"))

    return save


def stop_fn(env: gym.Env, task: str) -> Callable[[float], bool]:
    """Stops training at the task's reward threshold (Pong: a test return of 20)."""
    threshold = env.spec.reward_threshold if env.spec is not None else None
    if threshold is None and "Pong" in task:
        threshold = PONG_SOLVED

    def solved(mean_rewards: float) -> bool:
        return threshold is not None and mean_rewards >= threshold

    return solved


def epsilon_greedy_fns(
    policy: DiscreteQLearningPolicy, args: argparse.Namespace, logger: BaseLogger
) -> tuple[Callable[[int, int], None], Callable[[int, int | None], None]]:
    """The training and test hooks of the Q-learning scripts' exploration schedule.

    Training epsilon decays linearly from ``--eps-train`` to ``--eps-train-final`` over the
    first million env steps (the Nature DQN schedule), then stays; tests use ``--eps-test``.
    """

    def training_fn(epoch: int, env_step: int) -> None:
        progress = min(env_step / EPS_DECAY_STEPS, 1.0)
        eps = args.eps_train - progress * (args.eps_train - args.eps_train_final)
        policy.set_eps_training(eps)
        if env_step % 1000 == 0:
            logger.write("training/env_step", env_step, {"eps": eps})

    def test_fn(epoch: int, env_step: int | None) -> None:
        policy.set_eps_inference(args.eps_test)

    return training_fn, test_fn


def train_off_policy(
    algorithm: Algorithm,
    envs: AtariEnvs,
    args: argparse.Namespace,
    logger: BaseLogger,
    log_path: str,
    *,
    buffer: VectorReplayBuffer | PrioritizedVectorReplayBuffer | None = None,
    training_fn: Callable[[int, int], None] | None = None,
    test_fn: Callable[[int, int | None], None] | None = None,
) -> InfoStats:
    """Train with the off-policy trainer after filling ``batch_size x num_train_envs`` random
    transitions into the buffer (a uniform :func:`replay_buffer` unless ``buffer`` is given)."""
    if buffer is None:
        buffer = replay_buffer(args, len(envs.train_envs))
    train_collector = Collector[CollectStats](
        algorithm, envs.train_envs, buffer, exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, envs.test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.batch_size * args.num_train_envs, random=True)
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
            training_fn=training_fn,
            test_fn=test_fn,
            stop_fn=stop_fn(envs.env, args.task),
            save_best_fn=save_best_fn(log_path),
            logger=logger,
            resume_from_log=args.resume_id is not None,
            test_in_training=False,
            show_progress=not args.no_progress,
        )
    )
    print(result)
    return result


def run_q_learning(
    args: argparse.Namespace,
    build: Callable[[argparse.Namespace, AtariEnvs], Algorithm],
    algo_name: str,
) -> InfoStats | CollectStats:
    """The whole run of an epsilon-greedy Q-learning script (DQN, C51, QRDQN, IQN, FQF).

    Builds the algorithm with ``build``, loads ``--resume-path``, then either watches it or trains
    it with the epsilon schedules of :func:`epsilon_greedy_fns`, logging under ``algo_name``.
    """
    with atari_envs(args) as envs:
        algorithm = build(args, envs)
        load_resume_path(algorithm, args)
        if args.watch:
            return watch(algorithm, envs, args)
        logger, log_path = create_logger(args, algo_name)
        training_fn, test_fn = epsilon_greedy_fns(algorithm.policy, args, logger)
        return train_off_policy(
            algorithm, envs, args, logger, log_path, training_fn=training_fn, test_fn=test_fn
        )


def render_interval(render: float) -> float | None:
    """``--render`` (seconds between frames), or None: when it is 0, or (with a warning) when
    there is no display to render to, so that watching a policy on a headless machine still
    evaluates it instead of failing to open a window."""
    if render <= 0:
        return None
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        warnings.warn(
            "--render needs a display, and neither DISPLAY nor WAYLAND_DISPLAY is set: "
            "evaluating without rendering",
            stacklevel=2,
        )
        return None
    return render


def watch(algorithm: Algorithm, envs: AtariEnvs, args: argparse.Namespace) -> CollectStats:
    """Evaluate the (loaded) policy on the test envs for ``--num-test-envs`` episodes.

    With ``--save-buffer-name`` it instead collects ``--buffer-size`` steps into a replay
    buffer and saves it there as HDF5 (loadable with ``VectorReplayBuffer.load_hdf5``).
    """
    buffer_name = getattr(args, "save_buffer_name", None)
    if buffer_name:
        buffer = replay_buffer(args, len(envs.test_envs))
        collector = Collector[CollectStats](
            algorithm, envs.test_envs, buffer, exploration_noise=True
        )
        stats = collector.collect(n_step=args.buffer_size, reset_before_collect=True)
        buffer.save_hdf5(buffer_name)
        print(f"saved {len(buffer)} transitions to {buffer_name}")
    else:
        collector = Collector[CollectStats](algorithm, envs.test_envs, exploration_noise=True)
        stats = collector.collect(
            n_episode=args.num_test_envs,
            render=envs.render,
            reset_before_collect=True,
        )
    if len(stats.returns):
        print(f"mean return {stats.returns.mean():.1f} over {len(stats.returns)} episodes")
    return stats
