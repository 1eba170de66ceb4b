"""The two online trainers: on-policy (learn from each collection once) and off-policy (sample
mini-batches from a replay buffer)."""

import logging
from typing import TYPE_CHECKING, TypeVar

from tianshou.data import CollectStats
from tianshou.trainer.params import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.trainer.trainer_base import OnlineTrainer

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import (
        OffPolicyAlgorithm,
        OnPolicyAlgorithm,
        TrainingStats,
    )

log = logging.getLogger(__name__)

TOnPolicyAlgorithm = TypeVar("TOnPolicyAlgorithm", bound="OnPolicyAlgorithm")
TOffPolicyAlgorithm = TypeVar("TOffPolicyAlgorithm", bound="OffPolicyAlgorithm")


class OnPolicyTrainer(OnlineTrainer[TOnPolicyAlgorithm, OnPolicyTrainerParams]):
    """Trains an on-policy algorithm: each training step collects fresh data, runs one update
    over all of it (``update_step_num_repetitions`` passes in mini-batches of ``batch_size``)
    and then empties the buffer.

    The buffer is emptied with ``keep_statistics=True``: an episode still running when a
    collection stops keeps its partial return and length, so its statistics are right when it
    finishes in a later collection.

    Example::

        trainer = OnPolicyTrainer(algorithm, OnPolicyTrainerParams(
            training_collector=train_collector, test_collector=test_collector,
            max_epochs=10, epoch_num_steps=50_000, collection_step_num_env_steps=2048,
            batch_size=64, update_step_num_repetitions=10))
        info = trainer.run()
    """

    def _update_step(self, collect_stats: CollectStats) -> "TrainingStats":
        params = self.params
        collector = params.training_collector
        log.info("Performing on-policy update on buffer of length %d", len(collector.buffer))
        stats = self.algorithm.update(
            buffer=collector.buffer,
            batch_size=params.batch_size,
            repeat=params.update_step_num_repetitions,
        )
        collector.reset_buffer(keep_statistics=True)
        self._record_update(stats)
        return stats


class OffPolicyTrainer(OnlineTrainer[TOffPolicyAlgorithm, OffPolicyTrainerParams]):
    """Trains an off-policy algorithm: after collecting n env steps, it takes
    ``round(n * update_step_num_gradient_steps_per_sample)`` gradient steps, each on a
    mini-batch of ``batch_size`` transitions sampled from the training collector's buffer.

    Example::

        trainer = OffPolicyTrainer(algorithm, OffPolicyTrainerParams(
            training_collector=train_collector, test_collector=test_collector,
            max_epochs=10, epoch_num_steps=10_000, collection_step_num_env_steps=10,
            batch_size=64, update_step_num_gradient_steps_per_sample=0.1))
        info = trainer.run()
    """

    def _update_step(self, collect_stats: CollectStats) -> "TrainingStats":
        params = self.params
        num_steps = round(
            params.update_step_num_gradient_steps_per_sample * collect_stats.n_collected_steps
        )
        if num_steps <= 0:
            raise ValueError(
                "this training step would take no gradient step: "
                f"round(update_step_num_gradient_steps_per_sample="
                f"{params.update_step_num_gradient_steps_per_sample} * n_collected_steps="
                f"{collect_stats.n_collected_steps}) = 0; raise one of them"
            )
        update = self.algorithm.update
        buffer = params.training_collector.buffer
        batch_size = params.batch_size
        record = self._record_update
        for _ in range(num_steps):
            stats = update(sample_size=batch_size, buffer=buffer)
            record(stats)
        return stats
