"""The epoch loop every trainer shares, and the collect-then-update step of online trainers.

A run is: :meth:`Trainer.reset` (counters, optional resume from the logger's checkpoint, collector
resets, an initial test step that sets the best score), then :meth:`Trainer.execute_epoch` until
``max_epochs`` or ``stop_fn`` fires. An epoch is training steps until ``epoch_num_steps`` env steps
(online) or update steps (offline) are done, then a checkpoint and a test step.

The per-step path is kept lean: losses are only averaged, dicts only built and the progress bar's
text only formatted when someone will look at them (a log write that is due, a bar refresh, the
end of an epoch).
"""

import logging
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np

from tianshou import config as tianshou_config
from tianshou.data import CollectStats, CollectStatsBase, SequenceSummaryStats
from tianshou.data.buffer.buffer_base import MalformedBufferError, ReplayBuffer
from tianshou.data.stats import EpochStats, InfoStats, TimingStats
from tianshou.distributed.rank_group import current_rank_group
from tianshou.trainer.params import OnlineTrainerParams, TrainerParams
from tianshou.utils.determinism import TraceLogger, torch_param_hash
from tianshou.utils.host_memory import retain_freed_host_memory
from tianshou.utils.logger.logger_base import BaseLogger, LazyLogger
from tianshou.utils.progress_bar import progress_bar
from tianshou.utils.statistics import MovAvg
from tianshou.utils.torch_utils import policy_within_training_step

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm, TrainingStats

log = logging.getLogger(__name__)

TAlgorithm = TypeVar("TAlgorithm", bound="Algorithm")
TTrainerParams = TypeVar("TTrainerParams", bound=TrainerParams)
TOnlineTrainerParams = TypeVar("TOnlineTrainerParams", bound=OnlineTrainerParams)

_POSTFIX_REFRESH_SECONDS = 0.25
"""How often the progress bar's text (returns, losses) is rebuilt."""
_LOSS_WINDOW = 100
"""Window of the moving averages of the losses (``MovAvg``'s default)."""
_BEST_FIELDS = ("best_score", "best_reward", "best_reward_std")
"""The logged info fields a resumed run restores its best result from."""
_INITIAL_TEST_PREFIX = "Initial test step"
"""How the summary line of the test step that starts a run begins (later ones name their epoch)."""


@dataclass(slots=True)
class _TrainingStepResult:
    """What one training step did, for the epoch loop's counters and display."""

    steps_in_epoch: int
    """How far the step advances the epoch (env steps online, 1 update offline)."""
    collect_stats: CollectStatsBase | None
    training_stats: "TrainingStats | None"
    should_stop: bool = False


def _mean_return(stats: CollectStats) -> float:
    """The default test score: the mean return of the test episodes."""
    return float(stats.returns_stat.mean) if stats.returns_stat is not None else float("nan")


def _logs_only_when_due(logger: BaseLogger, method: str) -> bool:
    """Whether ``logger.<method>`` is the interval-gated base implementation, so the trainer may
    skip building the data dict whenever the interval has not passed yet."""
    return getattr(type(logger), method) is getattr(BaseLogger, method)


def check_recent_rows_for_nan(buffer: ReplayBuffer, num_rows: int) -> None:
    """Raise ``MalformedBufferError`` if one of the last ``num_rows`` rows written to any
    sub-buffer holds a NaN or None.

    A collection of ``num_rows`` steps wrote at most that many rows into each sub-buffer, so this
    covers the fresh data while costing O(num_rows * sub-buffers) instead of a full scan.
    """
    edges = buffer.subbuffer_edges
    last_rows = np.atleast_1d(buffer.last_index)
    sub_buffers = getattr(buffer, "buffers", None)
    lengths = [len(sub) for sub in sub_buffers] if sub_buffers is not None else [len(buffer)]
    recent = [
        start + (last - start - np.arange(min(num_rows, length))) % (stop - start)
        for start, stop, last, length in zip(edges[:-1], edges[1:], last_rows, lengths, strict=True)
        if length
    ]
    if recent and buffer[np.concatenate(recent)].hasnull():
        raise MalformedBufferError(
            "the freshly collected data holds NaN or None values; drop them with "
            "buffer.dropnull(). Typical causes: an environment returning NaN observations or "
            "rewards, or a collector hook writing incomplete data"
        )


class Trainer(Generic[TAlgorithm, TTrainerParams], ABC):
    """Runs the epochs of a training run: training steps, checkpoints, test steps, stopping.

    Use :meth:`run` for a whole run, or :meth:`reset` followed by :meth:`execute_epoch` calls
    (or iterate over the trainer, which yields each epoch's ``EpochStats``) to drive it yourself.

    In a data-parallel run (:mod:`tianshou.distributed`), every rank runs a trainer: env steps
    and episodes count the total over the ranks (so epochs end on all ranks together), stop
    decisions are agreed, and only rank 0 logs, tests, shows progress and saves; the other ranks'
    loggers are replaced by a :class:`LazyLogger`.

    :param algorithm: the algorithm to train; its ``policy`` is what collectors run.
    :param params: the run's settings.
    """

    def __init__(self, algorithm: TAlgorithm, params: TTrainerParams) -> None:
        self.algorithm = algorithm
        self.params = params
        self._ranks = current_rank_group()
        reporting = self._ranks.is_reporting
        self._logger: BaseLogger = (
            params.logger if params.logger is not None and reporting else LazyLogger()
        )
        self._show_progress = params.show_progress and reporting
        self._tests = params.test_collector is not None
        self._log_update_when_due = _logs_only_when_due(self._logger, "log_update_data")
        self._log_training_when_due = _logs_only_when_due(self._logger, "log_training_data")
        # only the do-nothing logger itself may be skipped: a subclass that overrides a hook
        # (the usual way to write a small custom logger) must see every call
        self._logs_nothing = type(self._logger) is LazyLogger
        self._compute_score = params.compute_score_fn or _mean_return
        self._reset_counters()

    def _reset_counters(self) -> None:
        self._epoch = 0
        self._env_step = 0
        self._env_episode = 0
        self._current_update_step = 0
        self._start_env_step = 0
        self._best_score = 0.0
        self._best_reward = 0.0
        self._best_reward_std = 0.0
        self._best_epoch = 0
        self._stop_fn_flag = False
        self._test_steps = 0
        self._test_episodes = 0
        self._test_time = 0.0
        self._train_collect_time = 0.0
        self._policy_update_time = 0.0
        self._start_time = time.perf_counter()
        self._loss_avgs: dict[str, MovAvg] = {}
        self._pending_updates: deque[TrainingStats] = deque(maxlen=_LOSS_WINDOW)
        self._last_collect_with_episodes: CollectStats | None = None
        self._next_postfix_time = 0.0
        self._last_test_score = float("nan")

    # ------------------------------------------------------------------ run / reset / epochs
    def run(
        self, reset_collectors: bool = True, reset_collector_buffers: bool = False
    ) -> InfoStats:
        """Train until ``max_epochs`` or until ``stop_fn`` fires, and return the final counters.

        :param reset_collectors: reset the collectors' envs and counters first.
        :param reset_collector_buffers: also empty their buffers (by default data collected
            before, e.g. a random warm-up, is kept).
        """
        self.reset(
            reset_collectors=reset_collectors, reset_collector_buffers=reset_collector_buffers
        )
        while self._epoch < self.params.max_epochs and not self._stop_fn_flag:
            self.execute_epoch()
        return self._create_info_stats()

    def reset(self, reset_collectors: bool = True, reset_collector_buffers: bool = False) -> None:
        """Zero the counters (or restore them from the logger's checkpoint with
        ``resume_from_log``), reset the collectors, and run the initial test step, whose score
        becomes the best score so far (``save_best_fn`` is called for it).

        A resumed run also restores the best result logged up to its checkpoint; the initial
        test step then replaces it only if it scores higher. With ``resume_from_log`` and no
        checkpoint in the logger, a warning says that nothing was resumed.

        Unless the params say ``retain_freed_host_memory=False``, from here on the process keeps
        the host memory it frees for the next update instead of faulting it in again (see
        :mod:`tianshou.utils.host_memory`).
        """
        if self.params.retain_freed_host_memory:
            retain_freed_host_memory()
        self._reset_counters()
        # the reporting rank resumes the counters (the others have no logger) and shares them
        best_restored = (
            self.params.resume_from_log and self._ranks.is_reporting and self._resume_from_log()
        )
        self._agree_on_start_counters()
        TraceLogger.log(
            log,
            lambda: (
                f"training starts at epoch {self._epoch}: "
                f"parameters {torch_param_hash(self.algorithm)}"
            ),
        )
        if reset_collectors:
            self._reset_collectors(reset_buffer=reset_collector_buffers)
        if self._tests and self._ranks.is_reporting:
            self._test_step(
                force_update_best=not best_restored, log_msg_prefix=_INITIAL_TEST_PREFIX
            )

    def _agree_on_start_counters(self) -> None:
        """Start every rank from rank 0's counters (those of the checkpoint it resumed from)."""
        counters = (self._epoch, self._env_step, self._current_update_step)
        agreed = self._ranks.decision_of_reporter(counters)
        self._epoch, self._env_step, self._current_update_step = agreed
        self._start_env_step = self._env_step

    def _resume_from_log(self) -> bool:
        """Restore the counters of the logger's last checkpoint and the best result logged up to
        it; return whether the best result was restored (else the initial test step sets it).

        Says so in a warning when there is nothing to resume from, and training starts from
        scratch.
        """
        logger = self._logger
        epoch, env_step, update_step = logger.restore_data()
        if (epoch, env_step, update_step) == (0, 0, 0):
            where = logger.logged_data_path()
            log.warning(
                "resume_from_log=True, but %s%s holds no checkpoint: nothing was resumed, "
                "training starts from scratch (checkpoints are written by the logger's "
                "save_data when save_checkpoint_fn is set)",
                type(logger).__name__,
                "" if where is None else f" at {where!r}",
            )
            return False
        self._epoch, self._env_step, self._current_update_step = epoch, env_step, update_step
        self._start_env_step = env_step
        record = logger.restore_info_data(epoch)
        if record is None or not all(key in record for key in _BEST_FIELDS):
            log.warning(
                "resumed from epoch %d, but %s has no logged best result up to that epoch; "
                "the initial test step sets the best result",
                epoch,
                type(logger).__name__,
            )
            return False
        self._best_score = record["best_score"]
        self._best_reward = record["best_reward"]
        self._best_reward_std = record["best_reward_std"]
        self._best_epoch = logger.restore_best_epoch(epoch)
        log.info(
            "resumed from epoch %d (env step %d, update step %d) with best score %s from epoch %d",
            epoch,
            env_step,
            update_step,
            self._best_score,
            self._best_epoch,
        )
        return True

    def _reset_collectors(self, reset_buffer: bool = False) -> None:
        if self.params.test_collector is not None:
            self.params.test_collector.reset(reset_buffer=reset_buffer)

    def __iter__(self) -> Iterator[EpochStats]:
        """Reset, then yield the ``EpochStats`` of each epoch until the run would end."""
        self.reset()
        while self._epoch < self.params.max_epochs and not self._stop_fn_flag:
            yield self.execute_epoch()

    def execute_epoch(self) -> EpochStats:
        """Run one epoch: training steps until ``epoch_num_steps`` is reached (or training is
        stopped), then, unless stopped, a checkpoint through the logger and a test step."""
        self._epoch += 1
        epoch_steps = self.params.epoch_num_steps
        steps_done = 0
        train_collect: CollectStatsBase | None = None
        training: TrainingStats | None = None
        with self._progress_bar() as bar:
            while steps_done < epoch_steps and not self._stop_fn_flag:
                self._current_update_step += 1
                result = self._training_step()
                steps_done += result.steps_in_epoch
                if result.collect_stats is not None:
                    train_collect = result.collect_stats
                    self._log_training_data(result.collect_stats)
                if result.training_stats is not None:
                    training = result.training_stats
                self._stop_fn_flag = result.should_stop
                if self._show_progress and time.perf_counter() >= self._next_postfix_time:
                    self._refresh_postfix(bar)
                bar.update(result.steps_in_epoch)
            if self._show_progress:
                self._refresh_postfix(bar)
        if training is not None:
            training.smoothed_loss = self._flush_loss_averages()
        test_collect = None
        if not self._stop_fn_flag:
            self._save_checkpoint()
            if self._tests:
                stop = False
                if self._ranks.is_reporting:
                    test_collect = self._test_step()
                    stop_fn = self.params.stop_fn
                    stop = bool(stop_fn is not None and stop_fn(self._best_score))
                self._stop_fn_flag = self._ranks.decision_of_reporter(stop)
        TraceLogger.log(
            log,
            lambda: (
                f"epoch {self._epoch} done: env_step={self._env_step}, "
                f"update_step={self._current_update_step}, test_score={self._last_test_score}, "
                f"best_score={self._best_score}"
            ),
        )
        info = self._create_info_stats()
        if not self._logs_nothing:
            self._logger.log_info_data(asdict(info), self._epoch)
        return EpochStats(
            epoch=self._epoch,
            train_collect_stat=train_collect,
            test_collect_stat=test_collect,
            training_stat=training,
            info_stat=info,
        )

    def _save_checkpoint(self) -> None:
        """Let the logger save a checkpoint if one is due (rank 0's logger decides when).

        In a data-parallel run, every other rank then calls ``save_checkpoint_fn`` with the
        same arguments, so that it can save its own part of the run (its envs, replay buffer
        and random streams, which rank 0's checkpoint does not hold; see
        ``docs/distributed.md``); the function tells the ranks apart by
        :func:`~tianshou.distributed.current_rank_group`.
        """
        save_checkpoint_fn = self.params.save_checkpoint_fn
        counters = (self._epoch, self._env_step, self._current_update_step)
        if self._ranks.world_size == 1 or save_checkpoint_fn is None:
            self._logger.save_data(*counters, save_checkpoint_fn)
            return
        saved: list[str] = []

        def save_and_tell(epoch: int, env_step: int, update_step: int) -> str:
            saved.append(save_checkpoint_fn(epoch, env_step, update_step))
            return saved[-1]

        self._logger.save_data(*counters, save_and_tell)
        if self._ranks.decision_of_reporter(bool(saved)) and not self._ranks.is_reporting:
            save_checkpoint_fn(*counters)

    @abstractmethod
    def _training_step(self) -> _TrainingStepResult:
        """One unit of training (collect and update, or one offline update)."""

    # ------------------------------------------------------------------ testing
    def _test_step(
        self, force_update_best: bool = False, log_msg_prefix: str | None = None
    ) -> CollectStats:
        """Collect test episodes, update the best score (calling ``save_best_fn`` on an
        improvement), log the summary line and print it when verbose.

        :param log_msg_prefix: what the summary line starts with (by default ``Epoch #<k>``),
            naming why this test step ran.
        """
        params = self.params
        collector = params.test_collector
        assert collector is not None
        start = time.perf_counter()
        collector.reset(reset_stats=False)
        if params.test_fn is not None:
            params.test_fn(self._epoch, self._env_step)
        stats = collector.collect(n_episode=params.test_step_num_episodes)
        self._test_time += time.perf_counter() - start
        self._test_steps += stats.n_collected_steps
        self._test_episodes += stats.n_collected_episodes
        self._reduce_multi_agent_returns(stats)
        if not self._logs_nothing:
            self._logger.log_test_data(asdict(stats), self._env_step)
        self._last_test_score = score = float(self._compute_score(stats))
        returns = stats.returns_stat or SequenceSummaryStats.from_single_value(float("nan"))
        if force_update_best or score > self._best_score:
            self._best_score = score
            self._best_epoch = self._epoch
            self._best_reward, self._best_reward_std = returns.mean, returns.std
            if params.save_best_fn is not None:
                params.save_best_fn(self.algorithm)
        line = self._summary_line(returns, score, log_msg_prefix or f"Epoch #{self._epoch}")
        log.info(line)
        if params.verbose:
            self._print(line)
        return stats

    def _print(self, line: str) -> None:
        """Print without tearing an open progress bar."""
        if self._show_progress:
            import tqdm

            tqdm.tqdm.write(line)
        else:
            print(line, flush=True)

    def _summary_line(self, returns: SequenceSummaryStats, score: float, prefix: str) -> str:
        """The test step's console line, worded as the published trainer words it (users grep
        it): the score parts appear only when the score is not the mean return."""
        score_part = best_score_part = ""
        if score != returns.mean:
            score_part = f", score: {score: .6f}"
            best_score_part = f", best_score: {self._best_score:.6f}"
        return (
            f"{prefix}: test_reward: {returns.mean:.6f} ± {returns.std:.6f},{score_part} "
            f"best_reward: {self._best_reward:.6f} ± {self._best_reward_std:.6f}"
            f"{best_score_part} in #{self._best_epoch}"
        )

    def _reduce_multi_agent_returns(self, stats: CollectStats) -> None:
        """Apply ``multi_agent_return_reduction`` to the per-episode returns, in place."""
        reduce = self.params.multi_agent_return_reduction
        if reduce is None or stats.n_collected_episodes == 0:
            return
        stats.returns = np.asarray(reduce(stats.returns), dtype=float)
        stats.returns_stat = SequenceSummaryStats.from_sequence(stats.returns)

    # ------------------------------------------------------------------ update bookkeeping
    def _record_update(self, stats: "TrainingStats") -> None:
        """Account for one ``algorithm.update`` result and hand it to the logger; cheap when the
        logger would not write it, since it runs per gradient step.

        Every update is offered to ``log_update_data`` at the current update step (several per
        training step off-policy, as the published trainer does); the call is skipped only
        where the logger's own interval check would drop it anyway.
        """
        self._policy_update_time += stats.train_time
        self._pending_updates.append(stats)
        if self._logs_nothing:
            return
        step = self._current_update_step
        logger = self._logger
        if (
            self._log_update_when_due
            and step - logger.last_log_update_step < logger.update_interval
        ):
            return
        stats.smoothed_loss = self._flush_loss_averages()
        logger.log_update_data(asdict(stats), step)

    def _log_training_data(self, stats: CollectStatsBase) -> None:
        """Offer a training step's collection statistics to the logger, as the published
        trainer does after every training step (with or without finished episodes)."""
        if self._logs_nothing:
            return
        logger = self._logger
        if (
            self._log_training_when_due
            and self._env_step - logger.last_log_train_step < logger.training_interval
        ):
            return
        logger.log_training_data(asdict(stats), self._env_step)

    def _flush_loss_averages(self) -> dict[str, float]:
        """Feed the losses of the updates since the last flush into the moving averages and
        return the averages. Only the last ``_LOSS_WINDOW`` updates can still be in a window,
        so only those are kept pending."""
        pending = self._pending_updates
        per_key: dict[str, list[float]] = {}
        for stats in pending:
            for key, value in stats.get_loss_stats_dict().items():
                per_key.setdefault(key, []).append(value)
        pending.clear()
        for key, values in per_key.items():
            self._loss_avgs.setdefault(key, MovAvg(_LOSS_WINDOW)).add(values)
        return {key: avg.get() for key, avg in self._loss_avgs.items()}

    # ------------------------------------------------------------------ display and stats
    def _progress_bar(self) -> Any:
        return progress_bar(
            self._show_progress,
            self.params.epoch_num_steps,
            desc=f"Epoch #{self._epoch}",
            unit=self._progress_unit,
        )

    _progress_unit = "env_step"

    def _refresh_postfix(self, bar: Any) -> None:
        """Show the latest counters, training returns and smoothed losses on the bar."""
        self._next_postfix_time = time.perf_counter() + _POSTFIX_REFRESH_SECONDS
        postfix: dict[str, str] = {"env_step": str(self._env_step)}
        last = self._last_collect_with_episodes
        if last is not None and last.returns_stat is not None and last.lens_stat is not None:
            postfix["env_episode"] = str(self._env_episode)
            postfix["rew"] = f"{last.returns_stat.mean:.2f}"
            postfix["len"] = str(int(last.lens_stat.mean))
        for key, value in self._flush_loss_averages().items():
            postfix[key] = f"{value:.3f}"
        bar.set_postfix(postfix, refresh=False)

    def _create_info_stats(self) -> InfoStats:
        total = time.perf_counter() - self._start_time
        train_time = max(total - self._test_time, 0.0)
        steps = self._env_step - self._start_env_step
        return InfoStats(
            update_step=self._current_update_step,
            best_score=self._best_score,
            best_reward=self._best_reward,
            best_reward_std=self._best_reward_std,
            train_step=self._env_step,
            train_episode=self._env_episode,
            test_step=self._test_steps,
            test_episode=self._test_episodes,
            timing=TimingStats(
                total_time=total,
                train_time=train_time,
                train_time_collect=self._train_collect_time,
                train_time_update=self._policy_update_time,
                test_time=self._test_time,
                update_speed=steps / train_time if train_time > 0 else 0.0,
            ),
        )


class OnlineTrainer(Trainer[TAlgorithm, TOnlineTrainerParams], ABC):
    """A trainer whose training step collects data with the training collector, then updates.

    The step runs inside ``policy_within_training_step(algorithm.policy)``: ``training_fn``,
    the collection, the buffer check, the optional test-in-training and the update.
    """

    def _reset_collectors(self, reset_buffer: bool = False) -> None:
        super()._reset_collectors(reset_buffer=reset_buffer)
        self.params.training_collector.reset(reset_buffer=reset_buffer)

    def _training_step(self) -> _TrainingStepResult:
        with policy_within_training_step(self.algorithm.policy):
            collect_stats = self._collect_training_data()
            totals = self._ranks.sum_collection(
                collect_stats.n_collected_steps,
                collect_stats.n_collected_episodes,
                self._training_score_would_stop(collect_stats),
            )
            self._env_episode += totals.episodes
            should_stop = totals.any_wants_test and self._test_in_training()
            training_stats = None if should_stop else self._update_step(collect_stats)
            # what the ranks' collections and updates added to running statistics
            self._ranks.merge_running_stats()
        # the step's env steps count from here on: a test in training logs at the step before
        self._env_step += totals.env_steps
        return _TrainingStepResult(
            steps_in_epoch=totals.env_steps,
            collect_stats=collect_stats,
            training_stats=training_stats,
            should_stop=should_stop,
        )

    def _collect_training_data(self) -> CollectStats:
        params = self.params
        if params.training_fn is not None:
            params.training_fn(self._epoch, self._env_step)
        collector = params.training_collector
        stats = collector.collect(
            n_step=params.collection_step_num_env_steps,
            n_episode=params.collection_step_num_episodes,
        )
        if tianshou_config.ENABLE_VALIDATION and not collector.raise_on_nan_in_buffer:
            check_recent_rows_for_nan(collector.buffer, stats.n_collected_steps)
        self._train_collect_time += stats.collect_time
        TraceLogger.log(
            log,
            lambda: (
                f"collected {stats.n_collected_steps} steps, "
                f"episode returns {stats.returns.tolist()}"
            ),
        )
        if stats.n_collected_episodes > 0:
            self._reduce_multi_agent_returns(stats)
            self._last_collect_with_episodes = stats
        return stats

    def _training_score_would_stop(self, collect_stats: CollectStats) -> bool:
        """Whether the score of the training episodes satisfies ``stop_fn`` (with
        ``test_in_training``), which calls for a test step right away."""
        params = self.params
        stop_fn = params.stop_fn
        if (
            not params.test_in_training
            or stop_fn is None
            or collect_stats.n_collected_episodes == 0
        ):
            return False
        return bool(stop_fn(float(self._compute_score(collect_stats))))

    def _test_in_training(self) -> bool:
        """Test right away (outside the training step's exploration settings) because the
        training episodes of some rank satisfied ``stop_fn``; True if the best score then
        satisfies it as well (decided by the reporting rank, which tests)."""
        params = self.params
        stop_fn = params.stop_fn
        assert stop_fn is not None
        stop = False
        if self._tests and self._ranks.is_reporting:
            with policy_within_training_step(self.algorithm.policy, enabled=False):
                self._test_step(
                    log_msg_prefix=f"Test step triggered by train stats (env_step={self._env_step})"
                )
            stop = bool(stop_fn(self._best_score))
        if self._ranks.decision_of_reporter(stop):
            return True
        if params.training_fn is not None:
            params.training_fn(self._epoch, self._env_step)
        return False

    @abstractmethod
    def _update_step(self, collect_stats: CollectStats) -> "TrainingStats":
        """Update the algorithm with the freshly collected data."""
