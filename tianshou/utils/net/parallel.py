"""Wrappers that spread a network's batch over all visible GPUs with ``nn.DataParallel``."""

from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.action_repr import ActionReprNet


def _data_parallel(net: nn.Module, wrapper_name: str) -> nn.DataParallel:
    """Move ``net`` to the first GPU and wrap it in ``nn.DataParallel``, or explain why not."""
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"{wrapper_name} splits batches across CUDA GPUs, but torch sees no CUDA device; "
            "on this machine use the wrapped network directly instead"
        )
    return nn.DataParallel(net.to(torch.device("cuda", 0)))


def _as_cuda_float(obs: np.ndarray | torch.Tensor) -> torch.Tensor:
    """``obs`` as a float32 tensor on the first GPU, where ``nn.DataParallel`` scatters from."""
    return torch.as_tensor(obs, dtype=torch.float32, device=torch.device("cuda", 0))


class DataParallelNet(nn.Module):
    """Runs a network on all visible GPUs at once, each on a slice of the batch.

    ``forward(obs, *args, **kwargs)`` turns ``obs`` into a float tensor on the first GPU and calls
    the wrapped network through ``nn.DataParallel``, which splits the batch dim over the GPUs and
    concatenates the outputs. Needs CUDA: without it construction raises a RuntimeError.

    :param net: the network to parallelise; it is moved to the first GPU (``cuda:0``).
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = _data_parallel(net, type(self).__name__)

    def forward(self, obs: np.ndarray | torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        return self.net(_as_cuda_float(obs), *args, **kwargs)


class ActionReprNetDataParallelWrapper(ActionReprNet[Any]):
    """:class:`DataParallelNet` for an :class:`ActionReprNet`, keeping its forward signature.

    The recurrent ``state`` (tensors or dicts of tensors) is split over the GPUs along its batch
    dim like the observations. Needs CUDA: without it construction raises a RuntimeError.

    :param net: the network to parallelise; it is moved to the first GPU (``cuda:0``).
    """

    def __init__(self, net: ActionReprNet) -> None:
        super().__init__()
        self.net = _data_parallel(net, type(self).__name__)

    def forward(
        self,
        obs: np.ndarray | torch.Tensor,
        state: Any = None,
        info: dict[str, Any] | None = None,
    ) -> tuple[Any, Any]:
        return self.net(_as_cuda_float(obs), state=state, info=info)
