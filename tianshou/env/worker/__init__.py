"""Env workers: one per environment, each hiding where and how its environment runs."""

from tianshou.env.worker.dummy import DummyEnvWorker
from tianshou.env.worker.ray import RayEnvWorker
from tianshou.env.worker.subproc import SubprocEnvWorker
from tianshou.env.worker.worker_base import EnvWorker, EnvWorkerError

__all__ = [
    "DummyEnvWorker",
    "EnvWorker",
    "EnvWorkerError",
    "RayEnvWorker",
    "SubprocEnvWorker",
]
