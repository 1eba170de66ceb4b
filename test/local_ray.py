"""A fresh local Ray instance for the tests that run Ray tasks."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def fresh_local_ray(num_cpus: int) -> Iterator[Any]:
    """A local Ray of ``num_cpus`` CPUs, without dashboard or worker logs, for the block; a Ray
    left running by an earlier test (e.g. a ``RayVectorEnv`` test in this worker) is shut down
    first. Yields the ``ray`` module."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()
