"""Logger factories: the logger an experiment writes its statistics to."""

import os
from abc import ABC, abstractmethod
from typing import Literal, TypeAlias

from tianshou.utils.logger import BaseLogger, CSVLogger, TensorboardLogger, WandbLogger
from tianshou.utils.string import ToStringMixin

TLogger: TypeAlias = BaseLogger
"""The logger type the high-level API works with."""

TLoggerType: TypeAlias = Literal["tensorboard", "wandb", "pandas", "csv"]


class LoggerFactory(ToStringMixin, ABC):
    """Builds the logger of an experiment run."""

    @abstractmethod
    def create_logger(
        self,
        log_dir: str,
        experiment_name: str,
        run_id: str | None,
        config_dict: dict | None = None,
    ) -> TLogger:
        """Build the logger.

        :param log_dir: the directory logs are written to.
        :param experiment_name: the experiment's name.
        :param run_id: identifies the run (e.g. to resume a W&B run); None for a new one.
        :param config_dict: the experiment's configuration, recorded with the logs; None
            records none.
        """

    @abstractmethod
    def get_logger_class(self) -> type[TLogger]:
        """The class of the loggers this factory builds."""


class LoggerFactoryDefault(LoggerFactory):
    """Builds a TensorBoard, Weights & Biases or CSV logger.

    :param logger_type: ``"tensorboard"``; ``"wandb"`` (which also writes TensorBoard files);
        ``"pandas"`` or ``"csv"``: CSV files, one per data scope, readable with
        ``pandas.read_csv``.
    :param wand_entity: the W&B entity (user or team); None: the default one.
    :param wandb_project: the W&B project (required for ``"wandb"``).
    :param group: the W&B group of the run.
    :param job_type: the W&B job type of the run.
    :param save_interval: minimum epochs between two checkpoints; None: the logger's own
        default (a checkpoint after every epoch).
    """

    def __init__(
        self,
        logger_type: TLoggerType = "tensorboard",
        wand_entity: str | None = None,
        wandb_project: str | None = None,
        group: str | None = None,
        job_type: str | None = None,
        save_interval: int | None = None,
    ) -> None:
        if logger_type not in ("tensorboard", "wandb", "pandas", "csv"):
            raise ValueError(
                f"unknown logger_type {logger_type!r}; use 'tensorboard', 'wandb', 'pandas' or "
                f"'csv'"
            )
        if logger_type == "wandb" and wandb_project is None:
            raise ValueError("logger_type='wandb' needs wandb_project")
        self.logger_type = logger_type
        self.wandb_entity = wand_entity
        self.wandb_project = wandb_project
        self.group = group
        self.job_type = job_type
        self.save_interval = save_interval

    def create_logger(
        self,
        log_dir: str,
        experiment_name: str,
        run_id: str | None,
        config_dict: dict | None = None,
    ) -> TLogger:
        if self.logger_type in ("pandas", "csv"):
            if self.save_interval is None:
                return CSVLogger(log_dir)
            return CSVLogger(log_dir, save_interval=self.save_interval)
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(log_dir)
        if config_dict is not None:
            writer.add_text("args", str(config_dict))
        if self.logger_type == "tensorboard":
            return TensorboardLogger(writer, save_interval=self.save_interval)
        wandb_logger = WandbLogger(
            save_interval=self.save_interval,
            name=experiment_name.replace(os.path.sep, "__"),
            run_id=run_id,
            config=config_dict,
            entity=self.wandb_entity,
            project=self.wandb_project,
            group=self.group,
            job_type=self.job_type,
            log_dir=log_dir,
        )
        wandb_logger.load(writer)
        return wandb_logger

    def get_logger_class(self) -> type[TLogger]:
        match self.logger_type:
            case "tensorboard":
                return TensorboardLogger
            case "wandb":
                return WandbLogger
        return CSVLogger
