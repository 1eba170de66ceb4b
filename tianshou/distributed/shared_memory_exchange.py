"""Exchanging tensors between the ranks of one machine through shared memory: gradient means
and small all-gathers.

Every optimizer step of a data-parallel run averages the gradients over the ranks, and RL
steps often: PPO's MuJoCo settings take 320 gradient steps per collection of 2,048 env steps,
each on a 64x64 network whose step costs about a millisecond on one core. gloo's all-reduce of
those 10k floats between two processes of one machine costs 0.3 to 1.4 ms per call on our
2-core development machine (the call passes through gloo's worker and transport threads and
the loopback network twice), so averaging took as long as the learning itself and two ranks
were only 1.2x as fast as one.

Ranks that share a machine therefore exchange gradients through a file in ``/dev/shm`` that
all of them map into memory. Each rank writes its gradients into its own slot and publishes a
sequence number; once every rank has published, each sums all slots in rank order (so the
mean is bit-identical on every rank) and divides by the number of ranks. Two generations of
slots alternate, so a rank that races ahead to the next step never overwrites a slot that a
slower rank is still reading: to publish step ``s + 2`` it must have seen every rank publish
``s + 1``, which a rank does only after it has read step ``s``. One exchange costs about 50
microseconds on the development machine.

The trainers' per-step agreement (the env steps every rank collected, a few integers) goes the
same way when it can: an off-policy run that takes one env step per gradient step agrees on
every step.

The job stays a ``torch.distributed`` job: the process group sets the exchange up (and checks
that every rank really sees the same file) and carries everything else. Ranks on different
machines (or in containers that do not share ``/dev/shm``), GPUs, and machines other than
x86-64 (whose memory model does not order one core's plain stores as the others see them)
keep gloo's or NCCL's all-reduce.

A rank waiting for the others notices within a fraction of a second when one of them has
exited or recorded a failure, and gives up after the job's timeout.
"""

import contextlib
import mmap
import os
import platform
import secrets
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

SHARED_MEMORY_DIR = Path("/dev/shm")
_LINE = 64
"""Bytes per header line (a cache line: ranks publishing at once do not share one)."""
_TOKEN_BYTES = 16
_SPIN_S = 0.002
"""How long a waiting rank polls, yielding the core between polls, before it sleeps between
polls: long enough to catch a peer a fraction of a millisecond behind without a sleep's
wake-up latency, short enough that a busy machine's yields (each may give the core away for a
whole time slice) do not delay noticing a rank that is gone."""
_POLLS_PER_CLOCK_READ = 64
_POLL_SLEEP_S = 50e-6
_HEALTH_CHECK_INTERVAL_S = 0.1
_DTYPE_CODES = {
    torch.float32: 1,
    torch.float64: 2,
    torch.float16: 3,
    torch.bfloat16: 4,
    torch.int64: 5,
}


def shared_memory_supported() -> bool:
    """Whether this process could take part in a shared-memory exchange (x86-64 Linux with a
    ``/dev/shm``); every rank must be able to, and must see the same file, to use one."""
    return platform.machine().lower() in ("x86_64", "amd64") and SHARED_MEMORY_DIR.is_dir()


@dataclass(frozen=True, slots=True)
class _Peer:
    rank: int
    pid: int


class SharedMemoryExchange:
    """The element-wise mean (:meth:`mean_`), or all the values (:meth:`all_gather`), over the
    ranks of a job that all run on this machine, of a flat CPU tensor that every rank passes at
    the same step.

    Create it with :meth:`open` (a collective over the process group) and release it with
    :meth:`close`.

    :param mapping: the shared file, mapped into this process.
    :param rank: this process's rank.
    :param peers: every rank of the job with its process id (to notice one that exited).
    :param capacity_bytes: the largest tensor one slot holds, in bytes.
    :param timeout_s: how long to wait for the other ranks before failing.
    :param recorded_failure: the job's first recorded failure, if any (checked while waiting,
        so that a rank that failed without exiting ends the wait too).
    """

    def __init__(
        self,
        mapping: mmap.mmap,
        rank: int,
        peers: Sequence[_Peer],
        capacity_bytes: int,
        timeout_s: float,
        recorded_failure: Callable[[], str | None],
    ) -> None:
        self._mapping = mapping
        self._rank = rank
        self._peers = list(peers)
        self._world_size = len(peers)
        self._capacity_bytes = capacity_bytes
        self._timeout_s = timeout_s
        self._recorded_failure = recorded_failure
        header = np.frombuffer(
            mapping, dtype=np.int64, count=self._world_size * _LINE // 8, offset=_LINE
        ).reshape(self._world_size, _LINE // 8)
        self._published = header[:, 0]
        self._numels = header[:, 1:3]  # by generation: a rank a step ahead writes the other
        self._dtypes = header[:, 3:5]
        self._slots_offset = _LINE * (1 + self._world_size)
        self._step = int(self._published[rank])
        self._views: dict[tuple[int, int, torch.dtype, int], torch.Tensor] = {}

    # ------------------------------------------------------------------ setting up
    @classmethod
    def open(
        cls,
        capacity_bytes: int,
        timeout_s: float,
        recorded_failure: Callable[[], str | None],
    ) -> "SharedMemoryExchange | None":
        """Set up the exchange for every rank of the default process group, or return None on
        every rank if some rank cannot take part (another machine, another ``/dev/shm``, no
        space there, not x86-64). A collective: every rank calls it at the same point.

        :param capacity_bytes: the largest tensor to be averaged, in bytes; larger ones are
            left to the process group (:meth:`mean_` returns False).
        """
        rank, world_size = dist.get_rank(), dist.get_world_size()
        capacity_bytes = -(-max(capacity_bytes, 1) // _LINE) * _LINE
        size = _LINE * (1 + world_size) + 2 * world_size * capacity_bytes
        every_ranks: list[tuple[int, bool]] = [(0, False)] * world_size
        dist.all_gather_object(every_ranks, (os.getpid(), shared_memory_supported()))
        if not all(supported for _, supported in every_ranks):
            return None
        announced: list[tuple[str, bytes] | None] = [None]
        if rank == 0:
            announced = [_create_file(size)]
        dist.broadcast_object_list(announced, src=0)
        mapping = _map_file(announced[0], size)
        mapped: list[bool] = [False] * world_size
        dist.all_gather_object(mapped, mapping is not None)
        if rank == 0 and announced[0] is not None:
            os.unlink(announced[0][0])  # every rank holds its own mapping now (or none)
        if not all(mapped):
            if mapping is not None:
                mapping.close()
            return None
        assert mapping is not None
        peers = [_Peer(r, pid) for r, (pid, _) in enumerate(every_ranks)]
        return cls(mapping, rank, peers, capacity_bytes, timeout_s, recorded_failure)

    def close(self) -> None:
        """Unmap the shared file (it was removed from ``/dev/shm`` when set up).

        Views of the mapping still alive elsewhere (say, in the frames of a traceback) keep it
        mapped until they are gone.
        """
        self._views.clear()
        empty = np.zeros((0, 2), dtype=np.int64)
        self._published, self._numels, self._dtypes = empty[:, 0], empty, empty
        with contextlib.suppress(BufferError):  # else unmapped when the last view is collected
            self._mapping.close()

    # ------------------------------------------------------------------ exchanging
    def mean_(self, flat: torch.Tensor) -> bool:
        """Replace the contiguous CPU tensor ``flat`` by its mean over the ranks, in place
        (summed in rank order, then divided by the number of ranks).

        :return: False, doing nothing, if ``flat`` is larger than a slot or of a type the
            exchange does not carry (every rank decides alike, since every rank's tensor has the
            same size and type); True once averaged.
        :raises RuntimeError: if the ranks passed tensors of different sizes or types, if a
            rank exited or recorded a failure while this one waited, or after the timeout.
        """
        every_ranks = self._exchange(flat)
        if every_ranks is None:
            return False
        flat.copy_(every_ranks[0])
        for other in every_ranks[1:]:
            flat.add_(other)
        flat.div_(self._world_size)
        return True

    def all_gather(self, flat: torch.Tensor) -> torch.Tensor | None:
        """Every rank's contiguous CPU tensor ``flat``, stacked in rank order (a copy); None if
        the exchange does not carry it (see :meth:`mean_`, which also says what it raises)."""
        every_ranks = self._exchange(flat)
        return None if every_ranks is None else torch.stack(every_ranks)

    def _exchange(self, flat: torch.Tensor) -> list[torch.Tensor] | None:
        """Publish ``flat`` and return every rank's, as views of their slots (valid until this
        rank's next exchange), or None if the exchange does not carry it."""
        code = _DTYPE_CODES.get(flat.dtype)
        if code is None or flat.numel() * flat.element_size() > self._capacity_bytes:
            return None
        self._step += 1
        generation = self._step % 2
        self._slot(generation, self._rank, flat.dtype, flat.numel()).copy_(flat)
        self._numels[self._rank, generation] = flat.numel()
        self._dtypes[self._rank, generation] = code
        self._published[self._rank] = self._step  # last: the others read the slot after this
        self._wait_for_every_rank()
        self._check_same_shapes(flat, generation)
        return [
            self._slot(generation, rank, flat.dtype, flat.numel())
            for rank in range(self._world_size)
        ]

    def _slot(self, generation: int, rank: int, dtype: torch.dtype, numel: int) -> torch.Tensor:
        key = (generation, rank, dtype, numel)
        view = self._views.get(key)
        if view is None:
            offset = self._slots_offset + (generation * self._world_size + rank) * (
                self._capacity_bytes
            )
            view = torch.frombuffer(self._mapping, dtype=dtype, count=numel, offset=offset)
            self._views[key] = view
        return view

    def _wait_for_every_rank(self) -> None:
        """Return once every rank has published this step; poll, yielding the core, then
        sleep between polls, checking the others' health every tenth of a second."""
        step = self._step
        published = self._published
        start = time.monotonic()
        polls = 0
        while published.min() < step:
            polls += 1
            if polls % _POLLS_PER_CLOCK_READ == 0 and time.monotonic() - start >= _SPIN_S:
                break
            os.sched_yield()
        else:
            return
        next_check = start + _HEALTH_CHECK_INTERVAL_S
        while published.min() < step:
            time.sleep(_POLL_SLEEP_S)
            now = time.monotonic()
            if now >= next_check:
                self._fail_if_unhealthy(now - start)
                next_check = now + _HEALTH_CHECK_INTERVAL_S

    def _missing_ranks(self) -> list[int]:
        return [r for r in range(self._world_size) if self._published[r] < self._step]

    def _fail_if_unhealthy(self, waited_s: float) -> None:
        missing = self._missing_ranks()
        exited = [p for p in self._peers if p.rank in missing and not _process_alive(p.pid)]
        if exited:
            named = ", ".join(f"rank {p.rank} (pid {p.pid})" for p in exited)
            raise RuntimeError(f"{named} exited while rank {self._rank} waited for its gradients")
        failure = self._recorded_failure()
        if failure is not None:
            raise RuntimeError(
                f"rank {self._rank} stopped waiting for the gradients of ranks {missing}: {failure}"
            )
        if waited_s >= self._timeout_s:
            raise RuntimeError(
                f"rank {self._rank} waited {waited_s:.0f} s for the gradients of ranks "
                f"{missing} (the job's timeout); they hang or run far behind"
            )

    def _check_same_shapes(self, flat: torch.Tensor, generation: int) -> None:
        numels = self._numels[:, generation].tolist()
        codes = self._dtypes[:, generation].tolist()
        if len(set(numels)) > 1 or len(set(codes)) > 1:
            raise RuntimeError(
                "the ranks exchanged tensors of different sizes or types at the same step "
                f"(elements by rank: {numels}; rank {self._rank} has {flat.dtype}): their "
                "models or optimizers differ"
            )


def _create_file(size: int) -> tuple[str, bytes] | None:
    """A new file of ``size`` bytes in ``/dev/shm`` with a random token at its start (its
    path and token), or None if there is no room."""
    handle, path = tempfile.mkstemp(prefix="tianshou-gradients-", dir=SHARED_MEMORY_DIR)
    try:
        os.posix_fallocate(handle, 0, size)  # no space fails here, not as SIGBUS on a write
        token = secrets.token_bytes(_TOKEN_BYTES)
        os.pwrite(handle, token, 0)
    except OSError:
        os.close(handle)
        os.unlink(path)
        return None
    os.close(handle)
    return path, token


def _map_file(announced: tuple[str, bytes] | None, size: int) -> mmap.mmap | None:
    """The announced file mapped into this process if it is the one rank 0 created (the same
    token), else None (another machine or ``/dev/shm``)."""
    if announced is None:
        return None
    path, token = announced
    try:
        with open(path, "r+b") as file:
            if file.read(_TOKEN_BYTES) != token:
                return None
            return mmap.mmap(file.fileno(), size)
    except (OSError, ValueError):
        return None


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
