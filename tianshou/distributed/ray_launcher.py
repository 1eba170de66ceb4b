"""Launching a data-parallel job on a Ray cluster through Ray Train.

torchrun needs a command started on every machine; on a Ray cluster one driver process asks Ray
Train for N workers instead (``ray.train.torch.TorchTrainer``), which places them on the
cluster's nodes, sets up their ``torch.distributed`` process group (gloo on CPU, NCCL with
GPUs) and reports their failures back to the driver. Each worker then runs the same function,
which joins that process group as one rank through
:func:`~tianshou.distributed.data_parallel` (it joins a group that is already initialised and
leaves it to Ray Train when done)::

    def train_rank() -> InfoStats:
        with data_parallel("cpu") as ranks:
            ...
            return algorithm.run_training(params)

    results = launch_on_ray_train(train_rank, num_workers=2)  # one result per rank

Ray Train is the ``ray[train]`` extra; it is imported only when a job is launched.
"""

import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import torch.distributed as dist

from tianshou.distributed.process_group import DEFAULT_TIMEOUT_S

T = TypeVar("T")


def launch_on_ray_train(
    rank_fn: Callable[[], T],
    num_workers: int,
    use_gpu: bool = False,
    ray_address: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[T]:
    """Run ``rank_fn`` on ``num_workers`` Ray Train workers, one rank each, and return what it
    returned on every rank, in rank order.

    Connects to the Ray cluster at ``ray_address`` (or to the one ``RAY_ADDRESS`` names, else
    starts a local one) unless Ray is initialised already, and disconnects again if it
    connected. The job is not retried: a worker that fails ends it, and this raises.

    :param rank_fn: what each worker runs; it must be picklable (a module-level function, or a
        ``functools.partial`` of one) and its result too, and the modules it uses must be
        importable on the cluster's nodes.
    :param num_workers: the number of ranks.
    :param use_gpu: give each worker one GPU (and NCCL); else CPUs and gloo.
    :param ray_address: the address of the cluster's head node (``HOST:PORT``), or ``auto``.
    :param timeout_s: how long a collective waits for the other ranks before failing, so that a
        rank that hangs ends the job within this time.
    :raises RuntimeError: when a worker failed, naming its rank and the cause (every failing
        rank's, in rank order).
    """
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    connected = not ray.is_initialized()
    if connected:
        ray.init(address=ray_address)
    storage = tempfile.mkdtemp(prefix="tianshou-ray-train-")
    try:
        trainer = TorchTrainer(
            _run_rank,  # type: ignore[arg-type]  # v2 returns its value; the stubs are v1's
            train_loop_config={"rank_fn": rank_fn},
            scaling_config=ScalingConfig(num_workers=num_workers, use_gpu=use_gpu),
            torch_config=TorchConfig(
                backend="nccl" if use_gpu else "gloo", timeout_s=max(1, round(timeout_s))
            ),
            run_config=RunConfig(storage_path=storage, name="data_parallel"),
        )
        try:
            result = trainer.fit()
        except Exception as error:
            raise RuntimeError(_failure_report(error, num_workers)) from error
        if result.error is not None:
            raise RuntimeError(_failure_report(result.error, num_workers)) from result.error
        return list(result.return_value)  # type: ignore[attr-defined]  # v2's Result has it
    finally:
        shutil.rmtree(storage, ignore_errors=True)
        if connected:
            ray.shutdown()


def _run_rank(config: dict[str, Any]) -> list[Any] | None:
    """A Ray Train worker: run the rank function, then hand every rank's result to rank 0,
    whose return value is the one Ray Train gives back to the driver."""
    result = config["rank_fn"]()
    results: list[Any] | None = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
    dist.gather_object(result, results, dst=0)
    return results


def _failure_report(error: Exception, num_workers: int) -> str:
    """What the driver says of a failed job: each failing rank with its error, when Ray Train
    tells them apart (``WorkerGroupError``), else Ray Train's own error."""
    failures: Mapping[int, BaseException] = getattr(error, "worker_failures", None) or {}
    if not failures:
        return f"the Ray Train job of {num_workers} workers failed: {error}"
    causes = "; ".join(
        f"worker of rank {rank}: {type(cause).__name__}: {cause}"
        for rank, cause in sorted(failures.items())
    )
    return f"the Ray Train job of {num_workers} workers failed: {causes}"
