"""Let networks written for flat observations read dict observations."""

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np
import torch
from torch import nn

from tianshou.utils.net.layers import as_shape_tuple

TModule = TypeVar("TModule", bound=nn.Module)


class DictObsDecorator(Protocol):
    """Turns a module class taking flat observations into one taking dict observations."""

    def __call__(self, module_class: type[TModule]) -> type[TModule]: ...


def get_dict_state_decorator(
    state_shape: dict[str, int | Sequence[int]], keys: Sequence[str]
) -> tuple[DictObsDecorator, int]:
    """Make networks written for flat observations accept dict observations.

    Environments with dict observation spaces yield a ``Batch`` (or dict) of arrays per step.
    The returned decorator subclasses a module class so that its ``forward`` first flattens the
    entries ``keys`` of such an observation to ``(batch, -1)`` and concatenates them in that
    order; plain arrays and tensors pass through unchanged. Build the network with the returned
    flat width:

    >>> from tianshou.utils.net.common import Net
    >>> decorator, flat_dim = get_dict_state_decorator({"pos": 2, "img": (2, 3)}, ["pos", "img"])
    >>> net = decorator(Net)(state_shape=flat_dim, action_shape=4)
    >>> obs = {"pos": np.zeros((5, 2)), "img": np.zeros((5, 2, 3))}
    >>> flat_dim, net(obs)[0].shape
    (8, torch.Size([5, 4]))

    :param state_shape: the shape of each entry of one (unbatched) observation.
    :param keys: the entries the network reads, in the order they are concatenated.
    :return: the decorator and the flat input width (the summed sizes of the ``keys`` entries).
    """
    missing = [key for key in keys if key not in state_shape]
    if not keys or missing:
        raise ValueError(
            f"keys must name at least one entry of state_shape {sorted(state_shape)}; "
            f"got keys={list(keys)}"
        )
    shapes = {key: as_shape_tuple(state_shape[key]) for key in keys}
    flat_dim = sum(int(np.prod(shape)) for shape in shapes.values())

    def flatten_obs(obs: Any) -> Any:
        if isinstance(obs, np.ndarray | torch.Tensor):
            return obs
        parts = []
        for key, shape in shapes.items():
            part = torch.as_tensor(obs[key], dtype=torch.float32)
            if tuple(part.shape[1:]) != shape:
                raise ValueError(
                    f"observation entry {key!r} has shape {tuple(part.shape)}, expected "
                    f"(batch, *{shape})"
                )
            parts.append(part.reshape(len(part), -1))  # scalar entries (B,) too
        return torch.cat(parts, dim=1)

    def decorator(module_class: type[TModule]) -> type[TModule]:
        class DictObsModule(module_class):  # type: ignore[valid-type,misc]
            def forward(self, obs: Any, *args: Any, **kwargs: Any) -> Any:
                return super().forward(flatten_obs(obs), *args, **kwargs)

        DictObsModule.__name__ = DictObsModule.__qualname__ = f"DictObs{module_class.__name__}"
        return DictObsModule

    return decorator, flat_dim
