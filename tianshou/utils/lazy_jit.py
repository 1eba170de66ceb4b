"""Numba compilation on first use, shared by the library's loop kernels.

A kernel is a plain Python function written in the subset numba compiles. :func:`compiled`
returns its machine-code version, compiling it the first time it is asked for and caching the
result on disk, so importing tianshou never imports numba or pays for compilation.
"""

from collections.abc import Callable
from typing import Any

_compiled: dict[Callable[..., Any], Callable[..., Any]] = {}


def compiled(fn: Callable[..., Any], **options: Any) -> Callable[..., Any]:
    """The numba-compiled ``fn`` (``njit`` with ``cache=True, nogil=True`` and ``options``, e.g.
    ``fastmath``), compiled once per process and loaded from the disk cache after that.

    :param fn: the kernel; each kernel is compiled with the options of its first call.
    :param options: further ``numba.njit`` options.
    """
    kernel = _compiled.get(fn)
    if kernel is None:
        import numba

        kernel = _compiled[fn] = numba.njit(cache=True, nogil=True, **options)(fn)
    return kernel
