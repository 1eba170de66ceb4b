"""What an algorithm learns or counts outside its networks, as checkpoint entries.

``nn.Module.state_dict`` holds parameters and buffers only. Two kinds of training state live
elsewhere and change what the next update does:

* running statistics (:class:`~tianshou.utils.RunningMeanStd` attributes), e.g. the return
  statistics of on-policy return scaling (``ret_rms``): a run resumed without them starts the
  estimate over, the critic's targets change scale at once, and learning can collapse;
* update counters named in the class attribute ``_checkpointed_counters``, e.g. DQN's count of
  updates that decides when the target network is copied: without it a resumed run copies it at
  its first update instead of when it was due.

They travel in the state dict's metadata (``state_dict._metadata[<module prefix>]``, under
``"tianshou_extra_state"``), which ``torch.save``/``torch.load`` keep (``weights_only=True``
too: the values are tensors) and which ``nn.Module.load_state_dict`` accepts and ignores. So the
keys of a checkpoint are exactly the published library's, and a checkpoint written by ours loads
with ``strict=True`` into code written for the published library, while ours restores the
extras from the metadata.

Checkpoints of ours from before this layout held the extras as keys
(``_running_stats.<attribute>.<field>`` and ``_counters.<attribute>``); they still load. The same
keys are written when ``state_dict`` is given a ``destination`` without metadata, so that nothing
is lost there.
"""

from collections.abc import Mapping
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

EXTRA_STATE_METADATA_KEY = "tianshou_extra_state"
"""Where a module's extras lie in its entry of the state dict's metadata."""

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


def extra_state(module: "Algorithm") -> ExtraState:
    """The running statistics and counters of ``module`` itself (not of its submodules)."""
    extras = ExtraState()
    for name, stats in vars(module).items():
        if isinstance(stats, RunningMeanStd):
            extras.running_stats[name] = {
                stat: torch.as_tensor(np.asarray(getattr(stats, stat), dtype=np.float64))
                for stat in _STATS_FIELDS
            }
    for name in module._checkpointed_counters:
        extras.counters[name] = torch.tensor(int(getattr(module, name)), dtype=torch.int64)
    return extras


def to_metadata(extras: ExtraState) -> dict[str, Any]:
    """``extras`` as the value stored under :data:`EXTRA_STATE_METADATA_KEY`."""
    return {"running_stats": extras.running_stats, "counters": extras.counters}


def to_entries(extras: ExtraState, prefix: str) -> dict[str, torch.Tensor]:
    """``extras`` as state-dict entries under ``prefix`` (the layout of older checkpoints)."""
    entries = {
        f"{prefix}{RUNNING_STATS_STATE_KEY}.{name}.{stat}": value
        for name, fields in extras.running_stats.items()
        for stat, value in fields.items()
    }
    for name, value in extras.counters.items():
        entries[f"{prefix}{COUNTERS_STATE_KEY}.{name}"] = value
    return entries


def pop_extra_state(
    module: "Algorithm",
    state: dict[str, Any],
    prefix: str = "",
    metadata: Mapping[str, Any] | None = None,
) -> ExtraState:
    """Collect ``module``'s extras from its metadata entry and from the entries of the older
    layout (which are removed from ``state``), checked against ``module``; nothing is restored
    yet. Extras that are absent (a checkpoint from before they were saved, from the published
    library, or whose metadata was dropped) are simply not restored.

    :param metadata: ``module``'s entry of the state dict's metadata, if there is one.
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
    stored = (metadata or {}).get(EXTRA_STATE_METADATA_KEY)
    if stored is not None:
        if not isinstance(stored, Mapping):
            raise RuntimeError(f"the checkpoint's {EXTRA_STATE_METADATA_KEY!r} is not a mapping")
        for name, fields in dict(stored.get("running_stats", {})).items():
            popped.running_stats.setdefault(name, {}).update(fields)
        popped.counters.update(stored.get("counters", {}))
    _check_fits(module, popped)
    return popped


def _check_fits(module: "Algorithm", popped: ExtraState) -> None:
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


def load_extra_state(module: "Algorithm", popped: ExtraState) -> None:
    """Restore what :func:`pop_extra_state` returned into ``module``'s attributes."""
    for name, fields in popped.running_stats.items():
        stats: RunningMeanStd = getattr(module, name)
        stats.mean = _restored(fields["mean"])
        stats.var = _restored(fields["var"])
        stats.count = _restored(fields["count"])
    for name, value in popped.counters.items():
        setattr(module, name, int(value))


def _restored(value: torch.Tensor) -> Any:
    """A saved statistic as the type the statistics use: a float for a scalar, else an array."""
    array = value.detach().cpu().numpy()
    return float(array) if array.ndim == 0 else array
