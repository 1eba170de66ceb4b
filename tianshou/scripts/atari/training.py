"""Running an Atari script: load ``--resume-path``, then either evaluate the policy
(:func:`watch`, with ``--watch``) or train it (:func:`create_logger`, then
:func:`train_off_policy` or the script's own on-policy loop, ending with :func:`report_run`);
:func:`run_q_learning` is the whole run of the epsilon-greedy Q-learning scripts.
"""

import argparse
import os
from collections.abc import Callable

import gymnasium as gym
import torch

from tianshou.algorithm import Algorithm
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.data import (
    Collector,
    CollectStats,
    InfoStats,
    PrioritizedVectorReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.scripts.atari.buffers import replay_buffer
from tianshou.scripts.atari.envs import AtariEnvs, atari_envs
from tianshou.scripts.persistence import POLICY_FILE
from tianshou.scripts.summary import final_test_return, report_training
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.cli import logger_from_args, torch_threads_from_args
from tianshou.utils.logger.logger_base import BaseLogger

EPS_DECAY_STEPS = 1_000_000
"""Env steps over which the training epsilon decays linearly (Mnih et al. 2015: 1M frames)."""


PONG_SOLVED = 20.0
"""Test return at which training on Pong stops (its env spec has no reward threshold)."""


def load_resume_path(algorithm: Algorithm, args: argparse.Namespace) -> None:
    """Load the algorithm state saved at ``--resume-path``, if given."""
    if args.resume_path:
        algorithm.load_state_dict(torch.load(args.resume_path, map_location=args.device))
        print(f"loaded {args.resume_path}")


def create_logger(args: argparse.Namespace, algo_name: str) -> tuple[BaseLogger, str]:
    """The logger (``--logger-type``) writing to
    ``<persistence-base-dir>/<task>/<algo_name>/<seed>``, and that directory (where
    :func:`save_best_fn` saves the policy)."""
    run_name = os.path.join(args.task, algo_name, str(args.seed))
    log_path = os.path.join(args.persistence_base_dir, run_name)
    return logger_from_args(args, log_path, run_name), log_path


def save_best_fn(log_path: str) -> Callable[[Algorithm], None]:
    """Saves the algorithm's state as ``<log_path>/policy.pth`` (for ``--resume-path``)."""

    def save(algorithm: Algorithm) -> None:
        torch.save(algorithm.state_dict(), os.path.join(log_path, POLICY_FILE))

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
    algo_name: str,
    buffer: VectorReplayBuffer | PrioritizedVectorReplayBuffer | None = None,
    training_fn: Callable[[int, int], None] | None = None,
    test_fn: Callable[[int, int | None], None] | None = None,
) -> InfoStats:
    """Train with the off-policy trainer after filling ``batch_size x num_training_envs`` random
    transitions into the buffer (a uniform :func:`replay_buffer` unless ``buffer`` is given),
    then report the run as ``algo_name`` (:func:`report_run`)."""
    if buffer is None:
        buffer = replay_buffer(args, len(envs.train_envs))
    train_collector = Collector[CollectStats](
        algorithm, envs.train_envs, buffer, exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, envs.test_envs, exploration_noise=True)
    train_collector.reset()
    train_collector.collect(n_step=args.batch_size * args.num_training_envs, random=True)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=train_collector,
            test_collector=test_collector,
            max_epochs=args.epoch,
            epoch_num_steps=args.epoch_num_steps,
            collection_step_num_env_steps=args.collection_step_num_env_steps,
            test_step_num_episodes=args.num_test_envs,
            batch_size=args.batch_size,
            update_step_num_gradient_steps_per_sample=args.update_step_num_gradient_steps_per_sample,
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
    report_run(result, test_collector, args, algo_name, log_path)
    return result


def report_run(
    result: InfoStats,
    test_collector: Collector[CollectStats],
    args: argparse.Namespace,
    algo_name: str,
    log_path: str,
) -> None:
    """Test the trained policy on ``--num-test-envs`` new episodes, then print the run's summary
    and write its result file (:func:`~tianshou.scripts.summary.report_training`)."""
    report_training(
        task=args.task,
        algorithm=algo_name,
        info=result,
        final_test_return=final_test_return(test_collector, args.num_test_envs),
        log_dir=log_path,
        config=vars(args),
        policy_path=os.path.join(log_path, POLICY_FILE),
    )


def run_q_learning(
    args: argparse.Namespace,
    build: Callable[[argparse.Namespace, AtariEnvs], Algorithm],
    algo_name: str,
) -> InfoStats | CollectStats:
    """The whole run of an epsilon-greedy Q-learning script (DQN, C51, QRDQN, IQN, FQF).

    Builds the algorithm with ``build``, loads ``--resume-path``, then either watches it or trains
    it with the epsilon schedules of :func:`epsilon_greedy_fns`, logging under ``algo_name``;
    torch uses ``--torch-threads`` threads meanwhile.
    """
    with torch_threads_from_args(args), atari_envs(args) as envs:
        algorithm = build(args, envs)
        load_resume_path(algorithm, args)
        if args.watch:
            return watch(algorithm, envs, args)
        logger, log_path = create_logger(args, algo_name)
        training_fn, test_fn = epsilon_greedy_fns(algorithm.policy, args, logger)
        return train_off_policy(
            algorithm,
            envs,
            args,
            logger,
            log_path,
            algo_name=algo_name,
            training_fn=training_fn,
            test_fn=test_fn,
        )


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
