"""Row operations on observation batches, flat or dict.

Once collected, a ``gymnasium.spaces.Dict`` observation batch is a ``Batch`` with one array per
key; the networks that read it are in :mod:`tianshou.utils.net.dict_encoder` and
:mod:`tianshou.utils.net.dict_heads`.

Algorithms that repeat each observation for several sampled actions (BCQ, CQL) or stack the
observations of several passes into one network call work on rows. A flat observation batch is
one tensor; a dict observation batch is a ``Batch`` with one tensor per key, whose rows are
repeated and concatenated key by key. The flat case runs the very same torch operations as
before dict observations existed, so its numbers do not change.
"""

from collections.abc import Sequence
from typing import Any, TypeAlias

import torch

from tianshou.data.batch import Batch

ObsRows: TypeAlias = torch.Tensor | Batch
"""A batch of observations: a float tensor (flat) or a ``Batch`` of tensors (dict)."""


def obs_rows(values: Any, device: torch.device) -> ObsRows:
    """``values`` as an observation batch on ``device``: a float32 tensor for flat
    observations or, for dict observations (a ``Batch``), a copy whose entries are tensors of
    their own dtype (a network's encoder reads them: ``uint8`` images, integer indices)."""
    if isinstance(values, Batch):
        return values.to_torch(device=device)
    return torch.as_tensor(values, device=device, dtype=torch.float32)


def repeat_rows(obs: ObsRows, repeats: int) -> ObsRows:
    """Each row ``repeats`` times, the copies of a row adjacent (``repeat_interleave``)."""
    if isinstance(obs, Batch):
        return obs.apply_values_transform(lambda value: value.repeat_interleave(repeats, dim=0))  # type: ignore[return-value]
    return obs.repeat_interleave(repeats, dim=0)


def cat_rows(parts: Sequence[ObsRows]) -> ObsRows:
    """The rows of ``parts`` one after the other (all flat or all dict)."""
    if isinstance(parts[0], Batch):
        return Batch.cat(parts)  # type: ignore[arg-type]
    return torch.cat(parts)  # type: ignore[arg-type]
