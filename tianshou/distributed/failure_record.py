"""The first failure of a data-parallel job, recorded where every rank can read it.

When a rank fails, the other ranks mostly see a consequence (a lost connection, a rank that
stopped answering). The first rank to fail therefore writes its own error under one key of the
process group's key-value store (which lives in rank 0's process), and every later failure
report leads with that cause.
"""

import torch.distributed as dist

FAILURE_KEY = "tianshou/first_failure"
"""The key of the process group's store under which the first failing rank says why."""


def failure_report(rank: int, world_size: int, error: BaseException) -> str:
    """What the failure of ``rank`` says: the first failure of the job, recorded now if this is
    it, with this rank's own error added when the first was another rank's.

    When the store cannot be reached (it went down with rank 0), the rank reports its own error
    alone.
    """
    own = f"rank {rank} of {world_size} failed: {type(error).__name__}: {error}"
    try:
        store = dist.distributed_c10d._get_default_store()
        if not store.check([FAILURE_KEY]):
            store.set(FAILURE_KEY, own)
            return own
        first = store.get(FAILURE_KEY).decode()
    except Exception:  # the store went down with rank 0: only this rank's view is left
        return own
    if first == own:
        return own
    return f"{first} (rank {rank} stopped too: {type(error).__name__}: {error})"


def recorded_failure() -> str | None:
    """The job's first failure if a rank has recorded one (None if none has, or if the store
    cannot be reached)."""
    try:
        store = dist.distributed_c10d._get_default_store()
        if not store.check([FAILURE_KEY]):
            return None
        return str(store.get(FAILURE_KEY).decode())
    except Exception:  # no store (no process group, or rank 0 is gone): nothing to read
        return None
