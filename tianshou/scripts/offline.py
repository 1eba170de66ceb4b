"""What the offline example scripts (``examples/offline/``) share: the Minari data set,
command line, test envs, training and evaluation in D4RL-normalised scores.

Every script (``minari_<algo>.py``) builds its parser with :func:`common_parser`, its algorithm
with its own ``build_<algo>(args, env)``, and hands both to :func:`run_offline`, which loads the
data set, trains the algorithm on it without ever stepping an env for training data (or, with
``--watch``, only evaluates a saved policy), tests it on the data set's env and writes
everything under ``--persistence-base-dir/<dataset>/<algo>/<seed>``, ending with the run's
summary and result file (:func:`~tianshou.scripts.summary.report_training`).

The data sets are Minari's (``mujoco/<task>/{expert,medium,simple}-v0``, ...), read from
``$MINARI_DATASETS_PATH`` (default ``~/.minari/datasets``); fetch one once with
``minari download mujoco/hopper/expert-v0``. Test returns are reported as D4RL-normalised
scores (0: a random policy, 100: the data set's expert), the measure offline RL papers report.

The networks come from the MuJoCo scripts (:mod:`tianshou.scripts.mujoco.networks`), the saving
and loading from :mod:`tianshou.scripts.persistence`.
"""

import argparse
import os
from collections.abc import Callable
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Collector, CollectStats, InfoStats, ReplayBuffer
from tianshou.data.minari import load_minari_buffer, load_minari_dataset, minari_normalized_score
from tianshou.env import BaseVectorEnv, DummyVectorEnv, SubprocVectorEnv, VectorEnvNormObs
from tianshou.scripts.mujoco.cli import add_alpha_options
from tianshou.scripts.mujoco.networks import (
    deterministic_actor,
    entropy_alpha,
    probabilistic_actor,
    q_critic,
)
from tianshou.scripts.persistence import POLICY_FILE, load_algorithm, save_algorithm
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OfflineTrainerParams
from tianshou.utils.cli import (
    ArgumentParser,
    add_logger_options,
    add_torch_threads_option,
    logger_from_args,
    torch_threads_from_args,
)
from tianshou.utils.statistics import RunningMeanStd

__all__ = [
    "DEFAULT_DATASET",
    "add_alpha_options",
    "common_parser",
    "deterministic_actor",
    "entropy_alpha",
    "flat_dims",
    "open_dataset",
    "probabilistic_actor",
    "q_critic",
    "run_offline",
]

DEFAULT_DATASET = "mujoco/hopper/expert-v0"
TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)


# ---------------------------------------------------------------------------- command line
def common_parser(description: str | None, **defaults: Any) -> ArgumentParser:
    """The options every offline script has; ``defaults`` are the script's own defaults.

    Defaults follow the D4RL benchmarks of these algorithms: 256x256 networks, batch 256,
    200 epochs of 5000 updates (a million updates), 10 test episodes after each epoch.
    """
    parser = ArgumentParser(description=(description or "").split("\n")[0])
    parser.add_argument("--dataset", default=DEFAULT_DATASET, help="the Minari dataset id")
    parser.add_argument(
        "--task",
        default=None,
        help="gymnasium env id to test on (default: the dataset's own env, recovered from it)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epoch", type=int, default=200, help="number of epochs")
    parser.add_argument("--epoch-num-steps", type=int, default=5000, help="updates per epoch")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden-sizes", type=int, nargs="*", default=[256, 256])
    parser.add_argument("--gamma", type=float, default=0.99)
    parser.add_argument(
        "--norm-obs",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="normalise observations by the dataset's mean and standard deviation",
    )
    parser.add_argument("--num-test-envs", type=int, default=10, help="also test episodes")
    parser.add_argument("--backend", default="auto", choices=["auto", "dummy", "subproc"])
    parser.add_argument(
        "--persistence-base-dir",
        default="log",
        help="runs write their log, policy and result file to <this>/<dataset>/<algo>/<seed>",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--resume-path", default=None, help="a saved policy.pth to load")
    add_logger_options(parser, wandb_project="offline.benchmark")
    parser.add_argument("--watch", action="store_true", help="only evaluate the loaded policy")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    add_torch_threads_option(parser)
    parser.set_known_defaults(**defaults)
    return parser


# ---------------------------------------------------------------------------- data and envs
def open_dataset(dataset_id: str) -> Any:
    """The local Minari dataset ``dataset_id``; if it is missing, exit (status 1) with a message
    naming the ``minari download`` command."""
    try:
        return load_minari_dataset(dataset_id)
    except FileNotFoundError as err:
        raise SystemExit(f"error: {err}") from None


def env_factory(args: argparse.Namespace, dataset: Any) -> Callable[[], gym.Env]:
    """A maker of the test env: ``--task``, else the dataset's evaluation env.

    :raises SystemExit: if the dataset names no env and ``--task`` is not given, or if the env's
        spaces differ from the dataset's.
    """
    if args.task is not None:
        spec = gym.spec(args.task)
    elif dataset.env_spec is None:
        raise SystemExit(
            f"error: the dataset {dataset.id!r} does not record its env; pass --task ENV_ID"
        )
    else:
        spec = dataset.recover_environment(eval_env=True).spec

    def make() -> gym.Env:
        return gym.make(spec)

    env = make()
    for name in ("observation_space", "action_space"):
        env_space, data_space = getattr(env, name), getattr(dataset, name)
        if env_space.shape != data_space.shape:
            raise SystemExit(
                f"error: the env's {name} {env_space} does not match the dataset's {data_space}"
            )
    if not isinstance(env.action_space, gym.spaces.Box):
        raise SystemExit(f"error: these scripts need a Box action space, got {env.action_space}")
    env.close()
    return make


def flat_dims(env: gym.Env) -> tuple[int, int]:
    """The flat widths of ``env``'s observations and actions."""
    return (
        int(np.prod(env.observation_space.shape)),  # type: ignore[arg-type]
        int(np.prod(env.action_space.shape)),  # type: ignore[arg-type]
    )


def make_test_envs(make: Callable[[], gym.Env], num: int, seed: int, backend: str) -> BaseVectorEnv:
    """``num`` seeded test envs, stepped in this process (``dummy``, the ``auto`` choice for up
    to two envs) or one process each (``subproc``)."""
    if backend == "auto":
        backend = "dummy" if num <= 2 else "subproc"
    venv_cls = DummyVectorEnv if backend == "dummy" else SubprocVectorEnv
    venv = venv_cls([make] * num)
    venv.seed(seed)
    return venv


def training_buffer(
    buffer: ReplayBuffer, algorithm: Algorithm, obs_rms: RunningMeanStd | None
) -> ReplayBuffer:
    """The dataset's ``buffer`` in the policy's terms: actions mapped into its raw action space
    (the inverse of its action scaling: the identity for MuJoCo's [-1, 1] bounds) and, with
    ``obs_rms``, observations normalised as the test envs normalise them."""
    obs, obs_next = buffer.obs, buffer.obs_next
    if obs_rms is not None:
        obs, obs_next = obs_rms.norm(obs), obs_rms.norm(obs_next)
    return ReplayBuffer.from_data(
        obs=obs,
        act=algorithm.policy.map_action_inverse(buffer.act),
        rew=buffer.rew,
        terminated=buffer.terminated,
        truncated=buffer.truncated,
        done=buffer.done,
        obs_next=obs_next,
    )


def observation_statistics(buffer: ReplayBuffer) -> RunningMeanStd:
    """Mean and variance of the observations in ``buffer`` (TD3+BC's state normalisation)."""
    obs_rms = RunningMeanStd()
    obs_rms.update(buffer.obs)
    return obs_rms


# ---------------------------------------------------------------------------- scores
def score_fn(dataset: Any) -> Callable[[CollectStats], float] | None:
    """The mean test return as a D4RL-normalised score, or None if the dataset has no
    reference scores (then raw returns decide and are reported)."""
    try:
        minari_normalized_score(dataset, 0.0)
    except ValueError as err:
        print(f"note: {err}; reporting raw returns")
        return None

    def normalised(stats: CollectStats) -> float:
        return float(np.mean(minari_normalized_score(dataset, stats.returns)))

    return normalised


def report(stats: CollectStats, score: Callable[[CollectStats], float] | None) -> None:
    """Print the mean return of ``stats`` and, if known, its normalised score."""
    line = f"mean return {stats.returns.mean():.1f} over {len(stats.returns)} episodes"
    if score is not None:
        line = f"normalised score {score(stats):.1f} ({line})"
    print(line)


# ---------------------------------------------------------------------------- running
def log_dir(args: argparse.Namespace, algo_name: str) -> str:
    """``--persistence-base-dir/<dataset>/<algo>/<seed>``: where a run's log, policy and result
    file go."""
    return os.path.join(args.persistence_base_dir, args.dataset, algo_name, str(args.seed))


def run_offline(
    args: argparse.Namespace,
    algo_name: str,
    build: Callable[[argparse.Namespace, gym.Env], TAlgorithm],
) -> InfoStats | CollectStats:
    """Train ``build(args, env)`` on ``--dataset`` or, with ``--watch``, evaluate it, with
    torch's thread count of ``--torch-threads``.

    With ``--resume-path`` the saved state (networks, optimisers, observation statistics) is
    loaded first. Training tests ``--num-test-envs`` episodes after every epoch, keeps the
    policy with the best normalised score in ``<log dir>/policy.pth``, prints that score and
    ends with the run's summary.
    """
    with torch_threads_from_args(args):
        return _run(args, algo_name, build)


def _run(
    args: argparse.Namespace,
    algo_name: str,
    build: Callable[[argparse.Namespace, gym.Env], TAlgorithm],
) -> InfoStats | CollectStats:
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    dataset = open_dataset(args.dataset)
    make_env = env_factory(args, dataset)
    algorithm = build(args, make_env())
    buffer = load_minari_buffer(dataset)
    obs_rms = observation_statistics(buffer) if args.norm_obs else None
    test_envs = make_test_envs(make_env, args.num_test_envs, args.seed, args.backend)
    if obs_rms is not None:
        test_envs = VectorEnvNormObs(test_envs, update_obs_rms=False)
        test_envs.set_obs_rms(obs_rms)
    if args.resume_path:
        load_algorithm(algorithm, args.resume_path, args.device, [test_envs])
        print(f"loaded {args.resume_path}")
    test_collector = Collector[CollectStats](algorithm, test_envs)
    score = score_fn(dataset)
    try:
        if args.watch:
            stats = test_collector.collect(n_episode=args.num_test_envs, reset_before_collect=True)
            report(stats, score)
            return stats
        log_path = log_dir(args, algo_name)
        logger = logger_from_args(
            args, log_path, os.path.relpath(log_path, args.persistence_base_dir)
        )
        result = algorithm.run_training(
            OfflineTrainerParams(
                buffer=training_buffer(buffer, algorithm, obs_rms),
                test_collector=test_collector,
                max_epochs=args.epoch,
                epoch_num_steps=args.epoch_num_steps,
                test_step_num_episodes=args.num_test_envs,
                batch_size=args.batch_size,
                compute_score_fn=score,
                save_best_fn=lambda alg: save_algorithm(alg, test_envs, log_path),
                logger=logger,
                resume_from_log=args.resume_id is not None,
                show_progress=not args.no_progress,
            )
        )
        best = f"best mean return {result.best_reward:.1f}"
        if score is not None:
            best = f"best normalised score {result.best_score:.1f} ({best})"
        print(best)
        report_training(
            task=args.dataset,
            algorithm=algo_name,
            info=result,
            final_test_return=final_test_return(test_collector, args.num_test_envs),
            log_dir=log_path,
            config=vars(args),
            policy_path=os.path.join(log_path, POLICY_FILE),
        )
        return result
    finally:
        test_envs.close()
