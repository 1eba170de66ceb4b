import random
from collections.abc import Callable

import numpy as np
import pytest
import torch

from tianshou.utils.random_states import GlobalRandomStates


def seed_everything(seed: int) -> None:
    """What a run does when it starts."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def cpu_draws() -> tuple[float, list[float], list[float]]:
    return random.random(), np.random.random(3).tolist(), torch.rand(3).tolist()


def test_restore_replays_python_numpy_and_torch_cpu_after_another_run_reseeded_them() -> None:
    seed_everything(1)
    states = GlobalRandomStates.capture()
    expected = cpu_draws()
    seed_everything(2)  # another run takes its turn
    assert cpu_draws() != expected
    states.restore()
    assert cpu_draws() == expected
    cuda_devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert len(states.torch_cuda) == cuda_devices


def test_each_generator_is_restored_on_its_own() -> None:
    """A draw from any one generator alone is undone (none is left out of the states)."""
    draws: list[Callable[[], float]] = [
        random.random,
        np.random.random,
        lambda: torch.rand(1).item(),
    ]
    for draw in draws:
        states = GlobalRandomStates.capture()
        first = draw()
        states.restore()
        assert draw() == first


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_restore_replays_every_cuda_device() -> None:
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    torch.manual_seed(3)
    states = GlobalRandomStates.capture()
    assert len(states.torch_cuda) == len(devices)
    expected = [torch.rand(4, device=d).tolist() for d in devices]
    torch.manual_seed(4)
    assert [torch.rand(4, device=d).tolist() for d in devices] != expected
    states.restore()
    assert [torch.rand(4, device=d).tolist() for d in devices] == expected
