"""Helpers shared across layers: running statistics and torch mode switches."""

from tianshou.utils.statistics import MovAvg, RunningMeanStd
from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

__all__ = ["MovAvg", "RunningMeanStd", "policy_within_training_step", "torch_train_mode"]
