"""Let a training process reuse the host memory it frees instead of faulting it in again.

Every update frees and reallocates the same activation, gradient and sample tensors. glibc's
malloc, with its defaults, hands the free top of its heap back to the operating system as soon as
it exceeds a threshold that adapts to the largest block freed so far, and serves larger blocks
with fresh ``mmap`` calls; either way the next update touches brand-new pages, and each costs a
page fault and a zeroing in the kernel. Measured on FQF's update (64 x 32 x 128 activations):
220 to 800 page faults and 0.4 to 1.3 ms of kernel time per update, 4 to 10% of its time. Which
updates suffer depends on where the heap happens to lie, so it also made the same update's speed
swing from one process to the next.

:func:`retain_freed_host_memory` raises both thresholds, so that freed blocks stay in the
process for the next update. The trainers call it when they start, unless their params say
``retain_freed_host_memory=False``; benchmarks call it so that every side they compare runs with
the same allocator. glibc has no call that reads the thresholds back, so the change cannot be
undone: it lasts until the process ends, and the first time it is applied it is announced in
one INFO record of this module's logger, which says how to turn it off. The environment variable
:data:`OPT_OUT_VARIABLE` turns it off for every run of a process (e.g. for scripts one cannot
edit). ``docs/process.md`` lists this and every other process-wide effect of the library.
"""

import ctypes
import functools
import logging
import os
import platform

log = logging.getLogger(__name__)

TRIM_THRESHOLD_BYTES = 256 << 20
"""Free memory at the top of the heap beyond which glibc returns it to the OS (glibc's default:
128 KiB, raised to twice the adaptive mmap threshold as larger blocks are freed)."""
MMAP_THRESHOLD_BYTES = 32 << 20
"""Blocks at least this large are served by ``mmap`` (glibc's largest allowed value)."""

OPT_OUT_VARIABLE = "TIANSHOU_KEEP_MALLOC_DEFAULTS"
"""Set this environment variable to ``1`` to leave the C library's allocator settings alone."""

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_INT_MAX = 2**31 - 1
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_")


def retain_freed_host_memory(
    trim_threshold: int = TRIM_THRESHOLD_BYTES, mmap_threshold: int = MMAP_THRESHOLD_BYTES
) -> bool:
    """Keep up to ``trim_threshold`` bytes of freed heap memory in this process for reuse, and
    serve blocks below ``mmap_threshold`` bytes from that heap.

    This is process-wide and lasts until the process ends (glibc cannot report the previous
    thresholds, so they cannot be restored); the first call that applies it says so in one INFO
    log record. The price is a resident size that does not shrink back by more than
    ``trim_threshold`` after a peak; blocks of ``mmap_threshold`` bytes and more (e.g. a large
    replay buffer) are still returned to the OS when freed.

    Nothing is changed where the C library is not glibc, where the environment variable
    :data:`OPT_OUT_VARIABLE` is set to anything but ``0``, or where the user already chose
    glibc's thresholds through its own ``MALLOC_*_`` variables or ``GLIBC_TUNABLES``.

    :param trim_threshold: bytes of free memory at the top of the heap kept before any is
        returned to the OS.
    :param mmap_threshold: blocks of at least this many bytes get their own ``mmap``; at most
        32 MiB on 64-bit glibc.
    :return: whether the settings were applied.
    :raises ValueError: if a threshold is not positive or does not fit a C int.
    """
    if not (0 < trim_threshold <= _INT_MAX and 0 < mmap_threshold <= _INT_MAX):
        raise ValueError(
            f"the thresholds must be positive C ints, got trim_threshold={trim_threshold}, "
            f"mmap_threshold={mmap_threshold}"
        )
    if os.environ.get(OPT_OUT_VARIABLE, "0") != "0" or _user_chose_settings():
        return False
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    mmap_applied = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold))
    applied = bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold)) and mmap_applied
    if applied:
        _announce(trim_threshold, mmap_threshold)
    else:
        log.warning(
            "glibc refused the allocator thresholds (trim %d, mmap %d bytes); freed memory is "
            "returned to the OS as by default",
            trim_threshold,
            mmap_threshold,
        )
    return applied


@functools.cache
def _announce(trim_threshold: int, mmap_threshold: int) -> None:
    """Say once per process (and per pair of thresholds) that the allocator was changed: the
    change outlives the run that made it, and a trainer makes it without being asked."""
    log.info(
        "tianshou changed glibc's malloc for the rest of this process: up to %.3g MiB of freed "
        "heap memory stay in the process, and blocks under %.3g MiB come from that heap, so "
        "that updates reuse freed memory instead of faulting it in again; to keep glibc's "
        "defaults, pass retain_freed_host_memory=False in the trainer params or set %s=1",
        trim_threshold / 2**20,
        mmap_threshold / 2**20,
        OPT_OUT_VARIABLE,
    )


def _user_chose_settings() -> bool:
    """Whether the environment already sets glibc's malloc thresholds."""
    if any(name in os.environ for name in _USER_SETTINGS):
        return True
    return "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", "")
