"""Loggers the trainers write statistics to: TensorBoard, Weights & Biases, CSV, or nothing."""

from tianshou.utils.logger.csv import CSVLogger
from tianshou.utils.logger.logger_base import BaseLogger, DataScope, LazyLogger
from tianshou.utils.logger.tensorboard import TensorboardLogger
from tianshou.utils.logger.wandb import WandbLogger

__all__ = [
    "BaseLogger",
    "CSVLogger",
    "DataScope",
    "LazyLogger",
    "TensorboardLogger",
    "WandbLogger",
]
