"""The settings of a training run, one keyword-only dataclass per kind of trainer.

Contradictory settings (a stop criterion without a test collector, both or neither collection
size, ...) are rejected with a ``ValueError`` when the object is created, long before a run
would have failed half-way.
"""

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from tianshou.data import AsyncCollector, BaseCollector, CollectStats, ReplayBuffer
from tianshou.utils.logger.logger_base import BaseLogger

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm

_RENAMED_FIELDS = {
    "train_fn": "training_fn",
    "test_in_train": "test_in_training",
    "train_collector": "training_collector",
    "max_epoch": "max_epochs",
    "step_per_epoch": "epoch_num_steps",
    "episode_per_test": "test_step_num_episodes",
    "step_per_collect": "collection_step_num_env_steps",
    "episode_per_collect": "collection_step_num_episodes",
    "repeat_per_collect": "update_step_num_repetitions",
    "update_per_step": "update_step_num_gradient_steps_per_sample",
    "reward_metric": "multi_agent_return_reduction",
}
"""Field names of earlier releases, mapped to today's names when an old pickle is loaded."""


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _check_positive_int(name: str, value: Any, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    ok = bool(isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= 1)
    _require(ok, f"{name} must be a positive integer, got {value!r}")


@dataclass(kw_only=True)
class TrainerParams:
    """Settings every trainer shares: epochs, testing, callbacks, logging and output.

    :param max_epochs: the number of epochs to train for (fewer if ``stop_fn`` fires).
    :param epoch_num_steps: the length of an epoch: env steps for online training, update steps
        for offline training. After each epoch the trainer checkpoints and tests.
    :param test_collector: the collector the policy is tested with (None: no testing). An
        ``AsyncCollector`` is not accepted, since its episodes would be biased toward short ones.
    :param test_step_num_episodes: episodes collected per test step.
    :param training_fn: called as ``training_fn(epoch, env_step)`` before each training
        collection (e.g. to anneal exploration).
    :param test_fn: called as ``test_fn(epoch, env_step)`` before each test collection.
    :param stop_fn: called with the best test score so far; training stops when it returns True.
    :param compute_score_fn: maps a test step's ``CollectStats`` to the score that decides which
        policy is best (default: the mean test return).
    :param save_best_fn: called with the algorithm whenever the test score improves (and after
        the initial test).
    :param save_checkpoint_fn: called by the logger as ``save_checkpoint_fn(epoch, env_step,
        update_step)`` at the end of epochs; it saves whatever is needed to resume and returns the
        checkpoint's path.
    :param resume_from_log: start from the epoch and step counters of the logger's last
        checkpoint and from the best result it logged up to then (restore the algorithm and
        buffer yourself before training). If the logger holds no checkpoint, a warning says that
        nothing was resumed and training starts from scratch.
    :param multi_agent_return_reduction: maps multi-agent returns of shape ``(episodes, agents)``
        to one return per episode, used for scores and logging.
    :param logger: where statistics go (None: nowhere).
    :param verbose: print a one-line summary after every test step.
    :param show_progress: show a progress bar for every epoch.
    :param retain_freed_host_memory: when the run starts, raise glibc's malloc thresholds so
        that the host memory each update frees is reused by the next instead of being returned
        to the OS and faulted in again (see :mod:`tianshou.utils.host_memory`). This changes the
        allocator of the whole process until it ends, which one INFO log record announces;
        False leaves the allocator alone. The environment variable
        ``TIANSHOU_KEEP_MALLOC_DEFAULTS=1`` turns it off for every run of the process.
    """

    max_epochs: int = 100
    epoch_num_steps: int = 30000
    test_collector: BaseCollector | None = None
    test_step_num_episodes: int = 1
    training_fn: Callable[[int, int], None] | None = None
    test_fn: Callable[[int, int | None], None] | None = None
    stop_fn: Callable[[float], bool] | None = None
    compute_score_fn: Callable[[CollectStats], float] | None = None
    save_best_fn: Callable[["Algorithm"], None] | None = None
    save_checkpoint_fn: Callable[[int, int, int], str] | None = None
    resume_from_log: bool = False
    multi_agent_return_reduction: Callable[[np.ndarray], np.ndarray] | None = None
    logger: BaseLogger | None = None
    verbose: bool = True
    show_progress: bool = True
    retain_freed_host_memory: bool = True

    def __post_init__(self) -> None:
        _require(
            bool(isinstance(self.max_epochs, int | np.integer) and self.max_epochs >= 0),
            f"max_epochs must be a non-negative integer, got {self.max_epochs!r}",
        )
        _check_positive_int("epoch_num_steps", self.epoch_num_steps)
        _check_positive_int("test_step_num_episodes", self.test_step_num_episodes)
        if self.test_collector is None:
            for name in ("stop_fn", "test_fn", "save_best_fn"):
                _require(
                    getattr(self, name) is None,
                    f"{name} is only used in test steps, which need a test_collector; "
                    "pass test_collector=... or drop it",
                )
        else:
            _require(
                isinstance(self.test_collector, BaseCollector),
                f"test_collector must be a collector, got {type(self.test_collector).__name__}",
            )
            _require(
                not isinstance(self.test_collector, AsyncCollector),
                "test_collector cannot be an AsyncCollector: it finishes short episodes first, "
                "so test returns would be biased; use a Collector",
            )
        _require(
            not self.resume_from_log or self.logger is not None,
            "resume_from_log=True needs a logger to read the checkpoint counters from",
        )

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Load pickles of earlier releases: rename old fields and fill in fields they lacked."""
        state = {_RENAMED_FIELDS.get(key, key): value for key, value in state.items()}
        for field in fields(self):
            if field.name not in state and field.default is not MISSING:
                state[field.name] = field.default
        self.__dict__.update(state)


@dataclass(kw_only=True)
class OnlineTrainerParams(TrainerParams):
    """Settings of trainers that collect their own data while training.

    :param training_collector: collects training data into its buffer.
    :param collection_step_num_env_steps: env steps collected per training step; set it to None
        to collect whole episodes instead.
    :param collection_step_num_episodes: episodes collected per training step (needs
        ``collection_step_num_env_steps=None``).
    :param test_in_training: whenever the training returns already satisfy ``stop_fn``, run a
        test step right away and stop if the test returns satisfy it too.
    """

    training_collector: BaseCollector
    collection_step_num_env_steps: int | None = 2048
    collection_step_num_episodes: int | None = None
    test_in_training: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(
            isinstance(self.training_collector, BaseCollector),
            f"training_collector must be a collector, got {type(self.training_collector).__name__}",
        )
        steps, episodes = self.collection_step_num_env_steps, self.collection_step_num_episodes
        _require(
            (steps is None) != (episodes is None),
            "exactly one of collection_step_num_env_steps and collection_step_num_episodes must "
            f"be set (the other None), got {steps!r} and {episodes!r}; note that "
            "collection_step_num_env_steps defaults to 2048",
        )
        _check_positive_int("collection_step_num_env_steps", steps, allow_none=True)
        _check_positive_int("collection_step_num_episodes", episodes, allow_none=True)
        _require(
            not self.test_in_training
            or (self.test_collector is not None and self.stop_fn is not None),
            "test_in_training=True needs both a test_collector and a stop_fn",
        )


@dataclass(kw_only=True)
class OnPolicyTrainerParams(OnlineTrainerParams):
    """Settings of the on-policy trainer, which learns from each collection once and discards it.

    :param batch_size: mini-batch size of the update; None or 0 update on everything collected
        as one mini-batch (what algorithms that learn from whole rollouts, such as PSRL, use).
    :param update_step_num_repetitions: passes over the collected data per update.
    """

    batch_size: int | None = 64
    update_step_num_repetitions: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        size = self.batch_size
        _require(
            size is None
            or bool(
                isinstance(size, int | np.integer) and not isinstance(size, bool) and size >= 0
            ),
            "batch_size must be a positive integer, or 0 or None for one mini-batch of everything "
            f"collected, got {size!r}",
        )
        _check_positive_int("update_step_num_repetitions", self.update_step_num_repetitions)


@dataclass(kw_only=True)
class OffPolicyTrainerParams(OnlineTrainerParams):
    """Settings of the off-policy trainer, which samples mini-batches from a growing replay buffer.

    :param batch_size: transitions sampled per gradient step.
    :param update_step_num_gradient_steps_per_sample: gradient steps per collected env step;
        after collecting n steps, ``round(n * this)`` gradient steps are taken (a training step
        that would take none is an error).
    """

    batch_size: int = 64
    update_step_num_gradient_steps_per_sample: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_positive_int("batch_size", self.batch_size)
        ratio = self.update_step_num_gradient_steps_per_sample
        _require(
            isinstance(ratio, int | float | np.number) and ratio >= 0 and np.isfinite(ratio),
            "update_step_num_gradient_steps_per_sample must be a finite number >= 0, "
            f"got {ratio!r}",
        )


@dataclass(kw_only=True)
class OfflineTrainerParams(TrainerParams):
    """Settings of the offline trainer, which learns from a fixed buffer without collecting.

    ``epoch_num_steps`` counts update steps here.

    :param buffer: the data set to learn from.
    :param batch_size: transitions sampled per update step.
    """

    buffer: ReplayBuffer
    batch_size: int = 64

    def __post_init__(self) -> None:
        super().__post_init__()
        _require(
            isinstance(self.buffer, ReplayBuffer),
            f"buffer must be a ReplayBuffer, got {type(self.buffer).__name__}",
        )
        _check_positive_int("batch_size", self.batch_size)
