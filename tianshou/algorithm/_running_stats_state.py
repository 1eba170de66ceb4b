"""The running statistics an algorithm keeps outside its networks, as checkpoint entries.

On-policy algorithms scale their critics' targets by a running estimate of the returns'
spread (``ret_rms``, a :class:`~tianshou.utils.RunningMeanStd`). Those statistics are not
parameters or buffers, so ``nn.Module.state_dict`` leaves them out; a run resumed without them
starts the estimate over, the critic's targets change scale at once, and learning can collapse.
The entries hold tensors only, so a checkpoint still loads with ``torch.load(weights_only=True)``.
"""

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from tianshou.utils.statistics import RunningMeanStd

RUNNING_STATS_STATE_KEY = "_running_stats"
"""The prefix of the ``Algorithm.state_dict()`` entries holding the algorithm's running
statistics: ``_running_stats.<attribute>.<field>``, each a float64 tensor."""

_FIELDS = ("mean", "var", "count")


def running_stats_state(module: nn.Module, prefix: str = "") -> dict[str, torch.Tensor]:
    """The ``mean``, ``var`` and ``count`` of each :class:`RunningMeanStd` attribute of
    ``module`` (not of its submodules), as float64 tensors under
    ``<prefix>_running_stats.<attribute>.<field>``."""
    return {
        f"{prefix}{RUNNING_STATS_STATE_KEY}.{name}.{field}": torch.as_tensor(
            np.asarray(getattr(stats, field), dtype=np.float64)
        )
        for name, stats in vars(module).items()
        if isinstance(stats, RunningMeanStd)
        for field in _FIELDS
    }


def pop_running_stats_state(
    module: nn.Module, state: dict[str, Any], prefix: str = ""
) -> dict[str, dict[str, torch.Tensor]]:
    """Remove ``module``'s running-statistics entries from ``state`` and return them by
    attribute and field, checked against ``module`` (nothing is restored yet).

    :raises RuntimeError: if an entry names no :class:`RunningMeanStd` attribute of ``module``
        (a checkpoint of another algorithm), or an attribute lacks a field.
    """
    head = f"{prefix}{RUNNING_STATS_STATE_KEY}."
    by_name: dict[str, dict[str, torch.Tensor]] = {}
    for key in [k for k in state if k.startswith(head)]:
        name, _, field = key[len(head) :].rpartition(".")
        by_name.setdefault(name, {})[field] = state.pop(key)
    for name, fields in by_name.items():
        if not isinstance(getattr(module, name, None), RunningMeanStd):
            raise RuntimeError(
                f"the checkpoint has running statistics {name!r}, which this "
                f"{type(module).__name__} does not keep (a checkpoint of another algorithm?)"
            )
        missing = [field for field in _FIELDS if field not in fields]
        if missing:
            raise RuntimeError(f"the running statistics {name!r} lack {missing}")
    return by_name


def load_running_stats_state(
    module: nn.Module, state: Mapping[str, Mapping[str, torch.Tensor]]
) -> None:
    """Restore statistics returned by :func:`pop_running_stats_state` into ``module``."""
    for name, fields in state.items():
        stats: RunningMeanStd = getattr(module, name)
        stats.mean = _restored(fields["mean"])
        stats.var = _restored(fields["var"])
        stats.count = _restored(fields["count"])


def _restored(value: torch.Tensor) -> Any:
    """A saved field as the type the statistics use: a float for a scalar, else an array."""
    array = value.detach().cpu().numpy()
    return float(array) if array.ndim == 0 else array
