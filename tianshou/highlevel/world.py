"""The objects an experiment runs with, gathered in one place for persistence and callbacks."""

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm
    from tianshou.data import BaseCollector
    from tianshou.highlevel.env import Environments
    from tianshou.highlevel.logger import TLogger
    from tianshou.trainer import Trainer


@dataclass(kw_only=True)
class World:
    """The envs, algorithm, collectors, logger, trainer and directories of one experiment run.

    :param envs: the environments.
    :param algorithm: the algorithm the run trains (and whose policy it persists and watches).
    :param logger: the logger.
    :param persist_directory: where the run writes its files (policy, logs).
    :param restore_directory: where a restored run reads its files from; None for a fresh run.
    :param training_collector: collects training data; None until created (a trainer needs it).
    :param test_collector: collects test episodes; None until created or when the run does not
        test.
    :param trainer: the trainer, once created.
    """

    envs: "Environments"
    algorithm: "Algorithm"
    logger: "TLogger"
    persist_directory: str
    restore_directory: str | None
    training_collector: "BaseCollector | None" = None
    test_collector: "BaseCollector | None" = None
    trainer: "Trainer | None" = None

    def persist_path(self, filename: str) -> str:
        """The absolute path of ``filename`` in :attr:`persist_directory`."""
        return os.path.abspath(os.path.join(self.persist_directory, filename))

    def restore_path(self, filename: str) -> str:
        """The path of ``filename`` in :attr:`restore_directory`."""
        if self.restore_directory is None:
            raise ValueError(
                f"cannot locate {filename!r} to restore: this World has no restore_directory "
                f"(pass one to restore a persisted run)"
            )
        return os.path.join(self.restore_directory, filename)
