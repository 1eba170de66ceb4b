"""Helpers shared across layers: loggers, progress bars, running statistics, torch mode switches,
deprecation warnings."""

from tianshou.utils.logger import BaseLogger, LazyLogger, TensorboardLogger, WandbLogger
from tianshou.utils.progress_bar import DummyTqdm, tqdm_config
from tianshou.utils.statistics import MovAvg, RunningMeanStd
from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode
from tianshou.utils.warning import deprecation

__all__ = [
    "BaseLogger",
    "DummyTqdm",
    "LazyLogger",
    "MovAvg",
    "RunningMeanStd",
    "TensorboardLogger",
    "WandbLogger",
    "deprecation",
    "policy_within_training_step",
    "torch_train_mode",
    "tqdm_config",
]
