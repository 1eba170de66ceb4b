"""Callbacks the high-level API hands to the trainer, with the objects they act on.

Each callback class turns into the plain function the trainer calls (``training_fn``,
``test_fn``, ``stop_fn``) through ``get_trainer_fn(context)``, which binds the
:class:`TrainingContext`.
"""

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tianshou.utils.logger import DataScope
from tianshou.utils.string import ToStringMixin

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm
    from tianshou.highlevel.env import Environments
    from tianshou.highlevel.logger import TLogger

log = logging.getLogger(__name__)


class TrainingContext:
    """What callbacks may act on during training.

    :param algorithm: the algorithm being trained.
    :param envs: the experiment's environments.
    :param logger: the logger training statistics go to.
    """

    def __init__(self, algorithm: "Algorithm", envs: "Environments", logger: "TLogger") -> None:
        self.algorithm = algorithm
        self.envs = envs
        self.logger = logger


class EpochTrainCallback(ToStringMixin, ABC):
    """Called at the start of each epoch's training phase (the trainer's ``training_fn``)."""

    @abstractmethod
    def callback(self, epoch: int, env_step: int, context: TrainingContext) -> None:
        """Act before the epoch's data collection.

        :param epoch: the current epoch (from 1).
        :param env_step: env steps collected so far.
        :param context: the training context.
        """

    def get_trainer_fn(self, context: TrainingContext) -> Callable[[int, int], None]:
        """This callback bound to ``context``, as the trainer's ``training_fn``."""

        def fn(epoch: int, env_step: int) -> None:
            self.callback(epoch, env_step, context)

        return fn


class EpochTestCallback(ToStringMixin, ABC):
    """Called at the start of each test phase (the trainer's ``test_fn``)."""

    @abstractmethod
    def callback(self, epoch: int, env_step: int | None, context: TrainingContext) -> None:
        """Act before the test episodes are collected.

        :param epoch: the current epoch (0 for the test before training).
        :param env_step: env steps collected so far (None where the trainer has none).
        :param context: the training context.
        """

    def get_trainer_fn(self, context: TrainingContext) -> Callable[[int, int | None], None]:
        """This callback bound to ``context``, as the trainer's ``test_fn``."""

        def fn(epoch: int, env_step: int | None) -> None:
            self.callback(epoch, env_step, context)

        return fn


class EpochStopCallback(ToStringMixin, ABC):
    """Decides after each test phase whether training stops early (the trainer's ``stop_fn``)."""

    @abstractmethod
    def should_stop(self, mean_rewards: float, context: TrainingContext) -> bool:
        """Whether to stop training.

        :param mean_rewards: the best mean test return so far (the trainer's test score).
        :param context: the training context.
        """

    def get_trainer_fn(self, context: TrainingContext) -> Callable[[float], bool]:
        """This callback bound to ``context``, as the trainer's ``stop_fn``."""

        def fn(mean_rewards: float) -> bool:
            return self.should_stop(mean_rewards, context)

        return fn


@dataclass
class TrainerCallbacks:
    """The callbacks an experiment passes to its trainer (None: no such callback)."""

    epoch_train_callback: EpochTrainCallback | None = None
    epoch_test_callback: EpochTestCallback | None = None
    epoch_stop_callback: EpochStopCallback | None = None


def _eps_policy(context: TrainingContext, setter: str) -> Any:
    policy = context.algorithm.policy
    if not callable(getattr(policy, setter, None)):
        raise TypeError(
            f"DQN eps callbacks need a policy with {setter} (a DiscreteQLearningPolicy, as used "
            f"by DQN, C51, IQN, ...), got {type(policy).__name__}"
        )
    return policy


class EpochTrainCallbackDQNSetEps(EpochTrainCallback):
    """Sets the exploration rate of a DQN-family policy for training at the start of each epoch.

    :param eps: the probability of a random action while collecting training data.
    """

    def __init__(self, eps: float) -> None:
        self.eps = eps

    def callback(self, epoch: int, env_step: int, context: TrainingContext) -> None:
        _eps_policy(context, "set_eps_training").set_eps_training(self.eps)


class EpochTrainCallbackDQNEpsLinearDecay(EpochTrainCallback):
    """Decays the training exploration rate of a DQN-family policy linearly over env steps.

    The rate is ``eps_train`` at step 0, falls linearly to ``eps_train_final`` at
    ``decay_steps`` and stays there; it is set at the start of each epoch and logged as
    ``training/eps``.

    :param eps_train: the initial rate.
    :param eps_train_final: the final rate.
    :param decay_steps: env steps over which the rate decays.
    """

    def __init__(
        self, eps_train: float, eps_train_final: float, decay_steps: int = 1_000_000
    ) -> None:
        if decay_steps <= 0:
            raise ValueError(f"decay_steps must be positive, got {decay_steps}")
        self.eps_train = eps_train
        self.eps_train_final = eps_train_final
        self.decay_steps = decay_steps

    def eps_at(self, env_step: int) -> float:
        """The exploration rate after ``env_step`` env steps."""
        fraction = min(env_step / self.decay_steps, 1.0)
        return self.eps_train + fraction * (self.eps_train_final - self.eps_train)

    def callback(self, epoch: int, env_step: int, context: TrainingContext) -> None:
        eps = self.eps_at(env_step)
        _eps_policy(context, "set_eps_training").set_eps_training(eps)
        context.logger.write(f"{DataScope.TRAINING.value}/env_step", env_step, {"eps": eps})


class EpochTestCallbackDQNSetEps(EpochTestCallback):
    """Sets the exploration rate of a DQN-family policy for testing at the start of each test.

    :param eps: the probability of a random action in test episodes.
    """

    def __init__(self, eps: float) -> None:
        self.eps = eps

    def callback(self, epoch: int, env_step: int | None, context: TrainingContext) -> None:
        _eps_policy(context, "set_eps_inference").set_eps_inference(self.eps)


class EpochStopCallbackRewardThreshold(EpochStopCallback):
    """Stops once the mean test return reaches a threshold.

    :param threshold: the return to reach; None uses the env's ``spec.reward_threshold``.
    """

    def __init__(self, threshold: float | None = None) -> None:
        self.threshold = threshold

    def should_stop(self, mean_rewards: float, context: TrainingContext) -> bool:
        threshold = self.threshold
        if threshold is None:
            spec = context.envs.env.spec
            threshold = None if spec is None else spec.reward_threshold
            if threshold is None:
                raise ValueError(
                    f"EpochStopCallbackRewardThreshold got no threshold and env {spec and spec.id} "
                    f"declares no spec.reward_threshold; pass threshold=..."
                )
        reached = mean_rewards >= threshold
        if reached:
            log.info("reward threshold reached: %s >= %s", mean_rewards, threshold)
        return reached
