"""Trainers run the epochs of a training run: collect, update, checkpoint, test, stop.

Most users call ``algorithm.run_training(params)`` with one of the params classes below, which
creates the matching trainer and runs it.
"""

from tianshou.trainer.offline import OfflineTrainer
from tianshou.trainer.online import OffPolicyTrainer, OnPolicyTrainer
from tianshou.trainer.params import (
    OfflineTrainerParams,
    OffPolicyTrainerParams,
    OnlineTrainerParams,
    OnPolicyTrainerParams,
    TrainerParams,
)
from tianshou.trainer.trainer_base import OnlineTrainer, Trainer

__all__ = [
    "OffPolicyTrainer",
    "OffPolicyTrainerParams",
    "OfflineTrainer",
    "OfflineTrainerParams",
    "OnPolicyTrainer",
    "OnPolicyTrainerParams",
    "OnlineTrainer",
    "OnlineTrainerParams",
    "Trainer",
    "TrainerParams",
]
