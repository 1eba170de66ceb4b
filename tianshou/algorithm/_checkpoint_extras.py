"""What an algorithm learns or counts outside its networks, as checkpoint entries.

``nn.Module.state_dict`` holds parameters and buffers only. Two kinds of training state live
elsewhere and change what the next update does:

* running statistics (:class:`~tianshou.utils.RunningMeanStd` attributes), e.g. the return
  statistics of on-policy return scaling (``ret_rms``): a run resumed without them starts the
  estimate over, the critic's targets change scale at once, and learning can collapse;
* update counters named in the class attribute ``_checkpointed_counters``, e.g. DQN's count of
  updates that decides when the target network is copied: without it a resumed run copies it at
  its first update instead of when it was due.

They are saved as tensors only (``_running_stats.<attribute>.<field>`` float64 and
``_counters.<attribute>`` int64), so a checkpoint still loads with
``torch.load(weights_only=True)``.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from tianshou.utils.statistics import RunningMeanStd

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm

RUNNING_STATS_STATE_KEY = "_running_stats"
"""The prefix of the entries holding running statistics: ``_running_stats.<attribute>.<field>``."""

COUNTERS_STATE_KEY = "_counters"
"""The prefix of the entries holding update counters: ``_counters.<attribute>``."""

_STATS_FIELDS = ("mean", "var", "count")


@dataclass
class ExtraState:
    """The extra entries of one algorithm in a checkpoint, checked and ready to restore."""

    running_stats: dict[str, dict[str, torch.Tensor]] = field(default_factory=dict)
    counters: dict[str, torch.Tensor] = field(default_factory=dict)


def is_extra_state_key(key: str) -> bool:
    """Whether ``key`` of a state dict is one of these extra entries (at any prefix)."""
    dotted = f".{key}"
    return f".{RUNNING_STATS_STATE_KEY}." in dotted or f".{COUNTERS_STATE_KEY}." in dotted


def extra_state(module: "Algorithm", prefix: str = "") -> dict[str, torch.Tensor]:
    """The running statistics and counters of ``module`` itself (not of its submodules), as
    state-dict entries under ``prefix``."""
    result = {
        f"{prefix}{RUNNING_STATS_STATE_KEY}.{name}.{stat}": torch.as_tensor(
            np.asarray(getattr(stats, stat), dtype=np.float64)
        )
        for name, stats in vars(module).items()
        if isinstance(stats, RunningMeanStd)
        for stat in _STATS_FIELDS
    }
    for name in module._checkpointed_counters:
        result[f"{prefix}{COUNTERS_STATE_KEY}.{name}"] = torch.tensor(
            int(getattr(module, name)), dtype=torch.int64
        )
    return result


def pop_extra_state(module: "Algorithm", state: dict[str, Any], prefix: str = "") -> ExtraState:
    """Remove ``module``'s extra entries from ``state`` and return them, checked against
    ``module`` (nothing is restored yet). Entries that are absent (a checkpoint from before
    they were saved, or from the published library) are simply not restored.

    :raises RuntimeError: for running statistics or a counter that ``module`` does not keep
        (a checkpoint of another algorithm), or statistics lacking a field.
    """
    popped = ExtraState()
    stats_head = f"{prefix}{RUNNING_STATS_STATE_KEY}."
    counters_head = f"{prefix}{COUNTERS_STATE_KEY}."
    for key in list(state):
        if key.startswith(stats_head):
            name, _, stat = key[len(stats_head) :].rpartition(".")
            popped.running_stats.setdefault(name, {})[stat] = state.pop(key)
        elif key.startswith(counters_head):
            popped.counters[key[len(counters_head) :]] = state.pop(key)
    kind = type(module).__name__
    for name, fields in popped.running_stats.items():
        if not isinstance(getattr(module, name, None), RunningMeanStd):
            raise RuntimeError(
                f"the checkpoint has running statistics {name!r}, which this {kind} does not "
                "keep (a checkpoint of another algorithm?)"
            )
        missing = [stat for stat in _STATS_FIELDS if stat not in fields]
        if missing:
            raise RuntimeError(f"the running statistics {name!r} lack {missing}")
    for name in popped.counters:
        if name not in module._checkpointed_counters:
            raise RuntimeError(
                f"the checkpoint has the update counter {name!r}, which this {kind} does not "
                "keep (a checkpoint of another algorithm?)"
            )
    return popped


def load_extra_state(module: "Algorithm", popped: ExtraState) -> None:
    """Restore what :func:`pop_extra_state` returned into ``module``'s attributes."""
    for name, fields in popped.running_stats.items():
        stats: RunningMeanStd = getattr(module, name)
        stats.mean = _restored(fields["mean"])
        stats.var = _restored(fields["var"])
        stats.count = _restored(fields["count"])
    for name, value in popped.counters.items():
        setattr(module, name, int(value.item()))


def _restored(value: torch.Tensor) -> Any:
    """A saved statistic as the type the statistics use: a float for a scalar, else an array."""
    array = value.detach().cpu().numpy()
    return float(array) if array.ndim == 0 else array
