"""Running a procedural MuJoCo script: train its algorithm (off- or on-policy) or, with
``--watch``, evaluate a saved one; everything goes under
``--persistence-base-dir/<task>/<algo>/<seed>``.

Every script (``mujoco_<algo>.py``) builds its algorithm with its own ``build_<algo>(args, env)``
and hands it to :func:`run_experiment` with :func:`train_off_policy` or :func:`train_on_policy`.
"""

import argparse
import os
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from typing import TypeVar

import gymnasium as gym
import numpy as np
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Collector, CollectStats, InfoStats, VectorReplayBuffer
from tianshou.distributed import (
    SINGLE_PROCESS,
    RankGroup,
    current_rank_group,
    data_parallel,
    launch_on_ray_train,
    rank_device,
)
from tianshou.distributed.options import DataParallelOptions
from tianshou.env import BaseVectorEnv, VectorEnvNormObs
from tianshou.env.mujoco import make_mujoco_env
from tianshou.env.obs_norm_file import array_obs_rms
from tianshou.evaluation.video import has_display, record_video, select_offscreen_rendering
from tianshou.scripts.persistence import (
    POLICY_FILE,
    checkpoint_saver,
    load_algorithm,
    load_replay_buffer,
    replay_buffer_path,
    save_algorithm,
)
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.cli import logger_from_args, torch_threads_from_args
from tianshou.utils.logger.logger_base import BaseLogger, LazyLogger

TAlgorithm = TypeVar("TAlgorithm", bound=Algorithm)


def log_dir(args: argparse.Namespace, algo_name: str) -> str:
    """``--persistence-base-dir/<task>/<algo>/<seed>``: where a run's log, policy, result file
    and video go."""
    return os.path.join(args.persistence_base_dir, args.task, algo_name, str(args.seed))


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
    """Train ``build(args, env)`` with ``train`` or, with ``--watch``, evaluate it, with torch's
    thread count of ``--torch-threads``.

    With ``--distributed`` this process is one rank of a torchrun job; with ``--launcher ray``
    it is the driver of a job of ``--num-workers`` ranks on Ray Train (at ``--ray-address``),
    and returns rank 0's result (see ``docs/distributed.md``).

    With ``--resume-path`` the saved state (networks, optimisers and observation statistics) is
    loaded first, and training continues from it (an off-policy run also with the replay buffer
    saved beside it, see :func:`train_off_policy`). Training ends by testing the final policy on
    ``--num-test-envs`` new episodes and reporting the run
    (:func:`~tianshou.scripts.summary.report_training`: a summary, and a result file in the log
    directory). ``--watch`` evaluates ``--num-test-envs`` episodes; with a display they are
    shown in a window, without one a deterministic episode is recorded to
    ``<log dir>/watch.mp4`` (see :func:`~tianshou.evaluation.video.record_video`). Without a
    display, MuJoCo is first set to render off-screen
    (:func:`~tianshou.evaluation.video.select_offscreen_rendering`).
    """
    parallel = DataParallelOptions.from_args(args)
    if parallel.launcher != "ray":
        return _run_rank(args, algo_name, build, train, obs_norm)
    if args.watch:
        raise ValueError("--watch evaluates in one process: drop --launcher ray")
    results = launch_on_ray_train(
        partial(_run_rank, args, algo_name, build, train, obs_norm),
        num_workers=parallel.num_workers,
        use_gpu=torch.device(args.device).type == "cuda",
        ray_address=parallel.ray_address,
        timeout_s=parallel.timeout_s,
    )
    return results[0]


def _run_rank(
    args: argparse.Namespace,
    algo_name: str,
    build: Callable[[argparse.Namespace, gym.Env], TAlgorithm],
    train: TrainFn,
    obs_norm: bool,
) -> InfoStats | CollectStats:
    """:func:`run_experiment` in this process: a single process, or one rank of a job."""
    select_offscreen_rendering()
    with torch_threads_from_args(args), _rank_group(args) as ranks:
        return _run(args, algo_name, build, train, obs_norm, ranks)


def _rank_group(args: argparse.Namespace) -> AbstractContextManager[RankGroup]:
    """With ``--distributed`` (or ``--launcher ray``), this process's rank of the job that
    torchrun or Ray Train started; else a single process."""
    parallel = DataParallelOptions.from_args(args)
    if not parallel.enabled:
        return nullcontext(SINGLE_PROCESS)
    if args.watch:
        raise ValueError("--watch evaluates in one process: drop --distributed")
    return data_parallel(args.device, timeout_s=parallel.timeout_s)


def _run(
    args: argparse.Namespace,
    algo_name: str,
    build: Callable[[argparse.Namespace, gym.Env], TAlgorithm],
    train: TrainFn,
    obs_norm: bool,
    ranks: RankGroup,
) -> InfoStats | CollectStats:
    ranks.check_same_config(vars(args))
    if ranks.world_size > 1:
        args = argparse.Namespace(**{**vars(args), "device": str(rank_device(args.device))})
    # every rank explores with its own random streams; its envs continue the seeds of the
    # previous rank's (env i of rank r gets seed + r * num_training_envs + i)
    seed = args.seed + ranks.rank * args.num_training_envs
    np.random.seed(seed)
    torch.manual_seed(seed)
    window = args.watch and has_display()
    env, train_envs, test_envs = make_mujoco_env(
        args.task,
        seed,
        args.num_training_envs,
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
    ranks.attach(algorithm, train_envs)
    test_collector = Collector[CollectStats](algorithm, test_envs)
    try:
        if args.watch:
            if not window:
                obs_rms = (
                    array_obs_rms(test_envs) if isinstance(test_envs, VectorEnvNormObs) else None
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
        if not ranks.is_reporting:
            return result
        report_training(
            task=args.task,
            algorithm=algo_name,
            info=result,
            final_test_return=final_test_return(test_collector, args.num_test_envs),
            log_dir=log_path,
            config=vars(args),
            policy_path=os.path.join(log_path, POLICY_FILE),
        )
        return result
    finally:
        train_envs.close()
        test_envs.close()


def _reporting_logger(args: argparse.Namespace, log_path: str) -> BaseLogger:
    """The logger of ``args`` on the rank that reports; a :class:`LazyLogger` on the others,
    which would only write files that their trainer never fills (they resume the counters
    from rank 0's log)."""
    if not current_rank_group().is_reporting:
        return LazyLogger()
    return logger_from_args(args, log_path, os.path.relpath(log_path, args.persistence_base_dir))


def _resumed_buffer_path(resume_path: str) -> str:
    """The replay buffer this rank resumes from: its own, else rank 0's."""
    own = replay_buffer_path(resume_path, current_rank_group().rank)
    return own if os.path.exists(own) else replay_buffer_path(resume_path)


def train_off_policy(
    algorithm: Algorithm,
    train_envs: BaseVectorEnv,
    test_collector: Collector[CollectStats],
    log_path: str,
    args: argparse.Namespace,
) -> InfoStats:
    """Off-policy training: ``--start-timesteps`` uniformly random steps, then the trainer.

    With ``--save-checkpoints`` each checkpoint also holds the replay buffer. With
    ``--resume-path`` of such a checkpoint, training goes on with the saved buffer and the random
    warm-up is skipped; beside a policy file without a buffer (e.g. an older checkpoint), the
    warm-up is collected again.

    ``args`` needs, besides the common options, ``start_timesteps`` and ``update_per_step``.
    In a data-parallel run every rank saves and resumes its own buffer (a rank that the
    checkpoint has none for starts from rank 0's).
    """
    buffer_path = _resumed_buffer_path(args.resume_path) if args.resume_path else ""
    resumed = os.path.exists(buffer_path)
    if resumed:
        buffer = load_replay_buffer(buffer_path, args.buffer_size, len(train_envs))
        print(f"loaded {len(buffer)} transitions from {buffer_path}: no random warm-up")
    else:
        buffer = VectorReplayBuffer(args.buffer_size, len(train_envs))
    train_collector = Collector[CollectStats](algorithm, train_envs, buffer, exploration_noise=True)
    train_collector.reset(reset_buffer=False)
    if not resumed:
        if args.resume_path:
            print(
                f"no replay buffer beside {args.resume_path}: collecting the "
                f"{args.start_timesteps} random warm-up steps again"
            )
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
            update_step_num_gradient_steps_per_sample=args.update_step_num_gradient_steps_per_sample,
            save_best_fn=lambda alg: save_algorithm(alg, train_envs, log_path),
            save_checkpoint_fn=checkpoint_saver(algorithm, train_envs, log_path, args, buffer),
            logger=_reporting_logger(args, log_path),
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
            logger=_reporting_logger(args, log_path),
            resume_from_log=args.resume_id is not None or args.resume_from_log,
            show_progress=not args.no_progress,
        )
    )
