"""Training configurations of the high-level API: how long to train, with how many envs, how
large a buffer, and how data collection alternates with updates.

The fields of :class:`OnPolicyTrainingConfig` and :class:`OffPolicyTrainingConfig` carry the names
of the fields of :class:`~tianshou.trainer.OnPolicyTrainerParams` and
:class:`~tianshou.trainer.OffPolicyTrainerParams` they are passed on to; the remaining fields say
how the environments, buffers and collectors are built.

>>> config = OffPolicyTrainingConfig(max_epochs=5, epoch_num_steps=1000, num_training_envs=4,
...     buffer_size=20000, batch_size=256)
>>> config.collection_step_num_env_steps
2048
"""

import multiprocessing
from dataclasses import MISSING, dataclass, fields
from typing import Any

from tianshou.utils.string import ToStringMixin
from tianshou.utils.torch_utils import DEFAULT_TORCH_THREADS


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_int(name: str, value: object, minimum: int) -> None:
    _require(
        _is_int(value) and value >= minimum,  # type: ignore[operator]
        f"{name} must be an integer >= {minimum}, got {value!r}",
    )


@dataclass(kw_only=True)
class TrainingConfig(ToStringMixin):
    """Settings of a training run that every algorithm shares.

    :param max_epochs: number of epochs; after each, the policy is tested and checkpointed.
    :param epoch_num_steps: length of an epoch in env steps (update steps for offline training).
    :param num_training_envs: number of training envs collecting in parallel; -1 (the default)
        uses one per CPU core (resolved on construction).
    :param num_test_envs: number of envs the policy is tested on.
    :param test_step_num_episodes: episodes collected per test step (over all test envs); -1
        (the default) collects one episode per test env. With fewer test envs than episodes,
        some envs run several episodes.
    :param buffer_size: capacity of the replay buffer in transitions (all training envs together).
        On-policy algorithms need room for one collection step.
    :param collection_step_num_env_steps: env steps collected per training step (summed over the
        training envs); None to collect whole episodes instead.
    :param collection_step_num_episodes: episodes collected per training step (needs
        ``collection_step_num_env_steps=None``). Exactly one of the two collection fields is set.
    :param start_timesteps: env steps collected before training starts (off-policy warm-up: the
        first updates then sample from a buffer that is not tiny and one-sided); 0 for none.
    :param start_timesteps_random: collect the warm-up steps with uniformly random actions
        instead of the initial policy.
    :param replay_buffer_ignore_obs_next: do not store ``obs_next`` (it is read from the next
        transition's ``obs``), which halves the memory of image observations.
    :param replay_buffer_save_only_last_obs: store only the last frame of stacked observations
        (Atari frame stacks), rebuilding the stack on sampling.
    :param replay_buffer_stack_num: number of consecutive observations stacked per sample.
    :param test_in_training: when the training returns already satisfy the stop criterion, test
        right away and stop if the test returns satisfy it too.
    :param show_progress: show the trainer's progress bar of each epoch.
    :param torch_threads: torch's intra-op thread count while the experiment runs (restored
        afterwards); None leaves torch's own setting (one thread per core). The default of 1
        suits the small networks of RL: on an idle machine more threads gain little, and with
        one other busy process they make each update many times slower. Raise it for large
        convolutional networks (Atari), where more threads pay (see ``docs/performance.md``).
    """

    max_epochs: int = 100
    epoch_num_steps: int = 30000
    num_training_envs: int = -1
    num_test_envs: int = 1
    test_step_num_episodes: int = -1
    buffer_size: int = 4096
    collection_step_num_env_steps: int | None = 2048
    collection_step_num_episodes: int | None = None
    start_timesteps: int = 0
    start_timesteps_random: bool = False
    replay_buffer_ignore_obs_next: bool = False
    replay_buffer_save_only_last_obs: bool = False
    replay_buffer_stack_num: int = 1
    test_in_training: bool = False
    show_progress: bool = True
    torch_threads: int | None = DEFAULT_TORCH_THREADS

    def __post_init__(self) -> None:
        _check_int("max_epochs", self.max_epochs, 0)
        if self.torch_threads is not None:
            _check_int("torch_threads", self.torch_threads, 1)
        _check_int("epoch_num_steps", self.epoch_num_steps, 1)
        if self.num_training_envs == -1:
            self.num_training_envs = multiprocessing.cpu_count()
        _require(
            _is_int(self.num_training_envs) and self.num_training_envs >= 1,
            "num_training_envs must be a positive integer or -1 (one env per CPU core), got "
            f"{self.num_training_envs!r}",
        )
        _check_int("num_test_envs", self.num_test_envs, 0)
        _require(
            _is_int(self.test_step_num_episodes)
            and (self.test_step_num_episodes == -1 or self.test_step_num_episodes >= 1),
            "test_step_num_episodes must be a positive integer or -1 (one episode per test env), "
            f"got {self.test_step_num_episodes!r}",
        )
        _check_int("buffer_size", self.buffer_size, 1)
        _check_int("start_timesteps", self.start_timesteps, 0)
        _check_int("replay_buffer_stack_num", self.replay_buffer_stack_num, 1)
        self._check_collection_step()

    def _check_collection_step(self) -> None:
        steps, episodes = self.collection_step_num_env_steps, self.collection_step_num_episodes
        _require(
            (steps is None) != (episodes is None),
            "exactly one of collection_step_num_env_steps and collection_step_num_episodes must "
            f"be set (the other None), got {steps!r} and {episodes!r}; note that "
            "collection_step_num_env_steps defaults to 2048",
        )
        for name, value in (
            ("collection_step_num_env_steps", steps),
            ("collection_step_num_episodes", episodes),
        ):
            if value is not None:
                _check_int(name, value, 1)

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Load pickles of experiments saved before a field existed (by an earlier version, or
        by the published library): the missing fields take their defaults."""
        for field in fields(self):
            if field.name not in state and field.default is not MISSING:
                state[field.name] = field.default
        self.__dict__.update(state)


@dataclass(kw_only=True)
class OnlineTrainingConfig(TrainingConfig):
    """Settings of algorithms that collect their own data while training (the base of the
    on- and off-policy configurations)."""


@dataclass(kw_only=True)
class OnPolicyTrainingConfig(OnlineTrainingConfig):
    """Settings of on-policy training, which learns from each collection and then discards it.

    :param batch_size: mini-batch size of the update; None or 0 uses all collected data as one
        batch.
    :param update_step_num_repetitions: passes over the collected data per update (PPO's
        "epochs").
    """

    batch_size: int | None = 64
    update_step_num_repetitions: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.batch_size is not None:
            _check_int("batch_size", self.batch_size, 0)
        _check_int("update_step_num_repetitions", self.update_step_num_repetitions, 1)


@dataclass(kw_only=True)
class OffPolicyTrainingConfig(OnlineTrainingConfig):
    """Settings of off-policy training, which samples mini-batches from a growing replay buffer.

    :param batch_size: transitions sampled per gradient step.
    :param update_step_num_gradient_steps_per_sample: gradient steps per collected env step
        (the update-to-data ratio); after collecting n steps, ``round(n * ratio)`` gradient steps
        are taken.
    """

    batch_size: int = 64
    update_step_num_gradient_steps_per_sample: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_int("batch_size", self.batch_size, 1)
        ratio = self.update_step_num_gradient_steps_per_sample
        is_number = isinstance(ratio, int | float) and not isinstance(ratio, bool)
        _require(
            is_number and 0 <= ratio < float("inf"),
            "update_step_num_gradient_steps_per_sample must be a finite number >= 0, "
            f"got {ratio!r}",
        )
