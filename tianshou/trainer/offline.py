"""The offline trainer: learns from a fixed data set, without interacting with an environment
(except in test steps)."""

from typing import TYPE_CHECKING, TypeVar

from tianshou.data import ReplayBuffer
from tianshou.trainer.params import OfflineTrainerParams
from tianshou.trainer.trainer_base import Trainer, _TrainingStepResult
from tianshou.utils.torch_utils import policy_within_training_step

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import OfflineAlgorithm

TOfflineAlgorithm = TypeVar("TOfflineAlgorithm", bound="OfflineAlgorithm")


class OfflineTrainer(Trainer[TOfflineAlgorithm, OfflineTrainerParams]):
    """Trains an offline algorithm on ``params.buffer``.

    An epoch is ``epoch_num_steps`` update steps, each one ``algorithm.update`` on a mini-batch
    of ``batch_size`` sampled transitions. The env-step counter advances by ``batch_size`` per
    update (the transitions consumed, by all ranks of a data-parallel run), which is the step
    loggers see. The buffer is passed through ``algorithm.process_buffer`` once, when the
    trainer is created (e.g. to add returns).

    Example::

        trainer = OfflineTrainer(algorithm, OfflineTrainerParams(
            buffer=dataset, test_collector=test_collector, max_epochs=5,
            epoch_num_steps=1000, batch_size=256))
        info = trainer.run()
    """

    _progress_unit = "update"

    def __init__(self, algorithm: TOfflineAlgorithm, params: OfflineTrainerParams) -> None:
        super().__init__(algorithm, params)
        self._buffer: ReplayBuffer = algorithm.process_buffer(params.buffer)

    def _training_step(self) -> _TrainingStepResult:
        with policy_within_training_step(self.algorithm.policy):
            stats = self.algorithm.update(sample_size=self.params.batch_size, buffer=self._buffer)
        self._env_step += self.params.batch_size * self._ranks.world_size
        self._record_update(stats)
        return _TrainingStepResult(steps_in_epoch=1, collect_stats=None, training_stats=stats)
