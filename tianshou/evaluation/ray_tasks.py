"""Running functions as Ray tasks, on this machine or on a Ray cluster: the core that
:class:`~tianshou.evaluation.launcher.RayExpLauncher` and the benchmark campaign's Ray launcher
share.

* :func:`ray_connection`: use the Ray instance this process is connected to, or join a cluster,
  or start a local instance, for the duration of a block;
* :func:`run_tasks`: submit one task per set of arguments, at most so many at a time, hand each
  result to the caller as its task ends, and cancel the tasks still running if the caller stops
  (an exception, a ``KeyboardInterrupt`` included);
* :func:`pack_dir` and :func:`unpack_dir`: a directory as an archive in bytes, so that files can
  travel to and from a task through Ray's object store on a cluster without a shared file
  system.

Ray is imported only when a task runs, as it is an optional dependency (the ``ray`` extra).
"""

import io
import os
import tarfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.exceptions import RayError

T = TypeVar("T")


def pack_dir(directory: str | Path) -> bytes:
    """The content of ``directory`` as an uncompressed tar archive."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(directory), arcname=".")
    return buffer.getvalue()


def unpack_dir(archive: bytes, directory: str | Path) -> None:
    """Extract an archive made by :func:`pack_dir` into ``directory`` (created if missing; files
    already there and not in the archive stay). Entries that would land outside ``directory``
    (absolute paths, ``..``, links out of it) are refused with a ``tarfile`` error."""
    os.makedirs(directory, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r") as tar:
        tar.extractall(directory, filter="data")


@contextmanager
def ray_connection(
    address: str | None = None, local_num_cpus: int | None = None, **init_options: Any
) -> Iterator[None]:
    """Make Ray available for the block: the instance this process is already connected to if
    any (left as it is afterwards), else the cluster at ``address`` (or the ``RAY_ADDRESS``
    environment variable), else a new local instance without a dashboard. A cluster joined or an
    instance started here is left (shut down) when the block ends.

    :param address: the cluster to join (e.g. ``"ray://head:10001"`` or ``"auto"``); None:
        ``RAY_ADDRESS`` if set, else a local instance.
    :param local_num_cpus: CPUs of a local instance started here; None: one per core.
    :param init_options: further options of ``ray.init`` (e.g. ``runtime_env`` so that the
        workers can import the tasks' code, ``log_to_driver=False``).
    """
    import ray

    if ray.is_initialized():
        yield
        return
    address = address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, **init_options)
    else:
        num_cpus = local_num_cpus if local_num_cpus is not None else os.cpu_count()
        ray.init(num_cpus=num_cpus, include_dashboard=False, **init_options)
    try:
        yield
    finally:
        ray.shutdown()


def run_tasks(
    function: Callable[..., T],
    arguments: Iterable[tuple[Any, ...]],
    on_done: Callable[[int, "T | RayError"], None],
    num_cpus: float = 1,
    num_gpus: float = 0,
    max_retries: int = 3,
    max_concurrent: int | None = None,
) -> None:
    """Run ``function(*args)`` as a Ray task for each ``args`` of ``arguments``, calling
    ``on_done(index, outcome)`` in this thread as each task ends, in the order they end:
    ``index`` counts the arguments from 0, ``outcome`` is what the task returned, or the
    ``ray.exceptions.RayError`` that ended it (an exception raised by ``function`` arrives as a
    ``RayTaskError``). If anything here raises, ``on_done`` included, or the caller is
    interrupted, every task still running is cancelled (its worker killed) first.

    Needs a Ray connection (see :func:`ray_connection`).

    :param function: the task's body, a module-level function (its workers import it).
    :param arguments: the tasks' positional arguments, read only when a task can start, so that
        large ones (e.g. a packed directory) are made just in time.
    :param on_done: receives each task's outcome.
    :param num_cpus: CPUs Ray reserves per task; with the cluster's CPUs, limits how many run.
    :param num_gpus: GPUs (may be fractional) Ray reserves per task.
    :param max_retries: how often Ray runs a task again whose worker died (3 is Ray's default;
        0 reports the death as the task's error).
    :param max_concurrent: at most this many tasks submitted at once; None: all at once.
    """
    import ray

    if max_concurrent is not None and max_concurrent < 1:
        raise ValueError(f"max_concurrent must be at least 1 or None, got {max_concurrent}")
    task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=max_retries)(function)
    waiting = enumerate(arguments)
    in_flight: dict[ObjectRef, int] = {}
    try:
        while True:
            while (max_concurrent is None or len(in_flight) < max_concurrent) and (
                submission := next(waiting, None)
            ) is not None:
                index, args = submission
                in_flight[task.remote(*args)] = index
            if not in_flight:
                return
            (ref,), _ = ray.wait(list(in_flight), num_returns=1)
            index = in_flight.pop(ref)
            try:
                outcome = ray.get(ref)
            except ray.exceptions.RayError as error:
                outcome = error
            on_done(index, outcome)
    except BaseException:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        raise
