import numpy as np
import torch

from tianshou.utils.conversion import to_optional_float


def test_numbers_become_python_floats() -> None:
    for value in (3, np.float32(0.5), np.int64(2), torch.tensor(1.5), 2.25):
        result = to_optional_float(value)
        assert type(result) is float and result == float(value)


def test_none_passes_through() -> None:
    assert to_optional_float(None) is None
