"""Factories of learning-rate scheduler factories, configured from the training config (which
says how many updates a run has) rather than by hand.

>>> from tianshou.highlevel.config import OnPolicyTrainingConfig
>>> config = OnPolicyTrainingConfig(max_epochs=10, epoch_num_steps=5000,
...     collection_step_num_env_steps=1000, num_training_envs=1)
>>> LRSchedulerFactoryFactoryLinear(config).create_lr_scheduler_factory().num_scheduler_steps
50
"""

from abc import ABC, abstractmethod

from tianshou.algorithm.optim import LRSchedulerFactory, LRSchedulerFactoryLinear
from tianshou.distributed import current_rank_group
from tianshou.highlevel.config import (
    OffPolicyTrainingConfig,
    OnlineTrainingConfig,
    TrainingConfig,
)
from tianshou.utils.string import ToStringMixin


class LRSchedulerFactoryFactory(ToStringMixin, ABC):
    """Creates the learning-rate scheduler factory of an optimizer."""

    @abstractmethod
    def create_lr_scheduler_factory(self) -> LRSchedulerFactory:
        """The scheduler factory (its schedulers are stepped once per algorithm update)."""


class LRSchedulerFactoryFactoryLinear(LRSchedulerFactoryFactory):
    """Decays the learning rate linearly to 0 over all updates of the training run.

    The number of updates follows from the config: ``max_epochs * ceil(epoch_num_steps /
    collection_step_num_env_steps)`` training steps, each with one update for on-policy training
    and ``round(collection_step_num_env_steps * update_step_num_gradient_steps_per_sample)``
    gradient steps for off-policy training; for offline training (a plain
    :class:`TrainingConfig`), ``epoch_num_steps`` counts the updates of an epoch.

    :param training_config: the config of the run whose optimizer is scheduled; online configs
        must collect a fixed number of env steps per training step
        (``collection_step_num_env_steps``), since the number of updates is unknown otherwise.
    """

    def __init__(self, training_config: TrainingConfig) -> None:
        self.training_config = training_config

    def create_lr_scheduler_factory(self) -> LRSchedulerFactoryLinear:
        config = self.training_config
        if not isinstance(config, OnlineTrainingConfig):
            return LRSchedulerFactoryLinear(config.max_epochs, config.epoch_num_steps, 1)
        steps = config.collection_step_num_env_steps
        if steps is None:
            raise ValueError(
                "LRSchedulerFactoryFactoryLinear needs collection_step_num_env_steps in the "
                "training config to know the number of updates; collecting whole episodes "
                "(collection_step_num_episodes) makes it unknown"
            )
        updates_per_training_step = 1
        if isinstance(config, OffPolicyTrainingConfig):
            updates_per_training_step = round(
                steps * config.update_step_num_gradient_steps_per_sample
            )
            if updates_per_training_step < 1:
                raise ValueError(
                    "the training config performs no gradient steps (collection_step_num_env_steps "
                    f"* update_step_num_gradient_steps_per_sample = {steps} * "
                    f"{config.update_step_num_gradient_steps_per_sample} rounds to 0)"
                )
        # every epoch's training steps repeat updates_per_training_step times: scale the epochs;
        # in a data-parallel run, an epoch's env steps are collected by all ranks together
        return LRSchedulerFactoryLinear(
            max_epochs=config.max_epochs * updates_per_training_step,
            epoch_num_steps=config.epoch_num_steps,
            collection_step_num_env_steps=steps * current_rank_group().world_size,
        )
