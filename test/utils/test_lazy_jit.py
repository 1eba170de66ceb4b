"""Kernels are compiled on first use, once per process."""

import numpy as np

from tianshou.utils.lazy_jit import compiled


def _running_sum(values: np.ndarray, out: np.ndarray) -> None:
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
        out[i] = total


def test_kernel_is_compiled_once_and_computes_what_the_python_version_does() -> None:
    kernel = compiled(_running_sum)
    assert compiled(_running_sum) is kernel
    assert kernel is not _running_sum and hasattr(kernel, "signatures")
    values = np.arange(5.0)
    got, want = np.empty(5), np.empty(5)
    kernel(values, got)
    _running_sum(values, want)
    np.testing.assert_array_equal(got, want)
