"""Plumbing between vector envs, policies and buffers for the collectors.

Two concerns live here, both on the collectors' hot path:

* Converting what a vector env returns into what a Batch stores: infos arrive as object arrays
  of dicts (or, from EnvPool, as a dict of arrays) and dict observations as object arrays of
  dicts; :func:`dicts_to_batch` stacks such rows column by column, far faster than the generic
  Batch constructor, and falls back to it for anything irregular.
* Staging: :class:`RolloutStaging` keeps the :class:`Transitions` of consecutive vector steps as
  the env and policy produced them and turns them into one Batch for a single ``buffer.add``
  call. One add per many steps, instead of one per step, is what keeps the per-step cost of
  collection small next to the cost of stepping the envs.

The type aliases below name the kinds of rows that move through a collection (one row per env).
Helpers that change rows of observations or hidden states return new objects and never write
into their inputs, because staged transitions still reference those inputs.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, TypeAlias, TypeVar, overload

import numpy as np
import torch

from tianshou.data.batch import Batch, batch_of_parsed_values

ObsRows: TypeAlias = np.ndarray | torch.Tensor | Batch
"""Observations, one row per env: an array (an object array for ragged observations), a tensor,
or a Batch (dict observations, see :func:`as_obs`)."""

VenvObs: TypeAlias = np.ndarray | Mapping[str, np.ndarray]
"""Observations as a vector env returns them: an array (an object array of dicts for dict
observations), or a dict of arrays (EnvPool)."""

InfoRows: TypeAlias = np.ndarray | Mapping[str, np.ndarray] | Batch
"""Infos, one row per env, as a vector env returns them: an object array of dicts, a dict of
arrays (EnvPool), or a Batch."""

ActRows: TypeAlias = np.ndarray | torch.Tensor | Batch
"""Actions, one row per env: what the policy returned (as stored), or what the envs receive."""

RowValue: TypeAlias = np.ndarray | torch.Tensor | Batch | Mapping[str, "RowValue"]
"""Anything the row helpers select, replace or join rows of."""

HiddenState: TypeAlias = RowValue | None
"""A recurrent policy's hidden state, one row per env (a tensor, an array, a Batch or a dict of
them, e.g. an LSTM's ``hidden`` and ``cell``); None for a stateless policy."""

ActRow: TypeAlias = np.ndarray | np.generic | tuple | dict | torch.Tensor | Batch
"""One env's action: a row of an array (a numpy scalar for scalar actions, a tuple or dict for
the object array of ``Tuple``/``Dict`` space actions), of a tensor or of a Batch."""

EnvActRows: TypeAlias = np.ndarray | Batch
"""Actions as the envs receive them (``Policy.map_action``'s result): an array (an object array
for ``Tuple``/``Dict`` spaces), or a Batch for structured actions."""

TLeafRows = TypeVar("TLeafRows", np.ndarray, torch.Tensor, Batch)
"""The kind of rows a row helper is given and returns: it returns the kind it was given."""

TPart = TypeVar("TPart")
"""The kind of value :func:`_all_of` checks the parts of a join to be."""

_NUMERIC_KINDS = frozenset("biufc")


class Transitions(NamedTuple):
    """The transitions of one vector step, one row per env that returned: what staging keeps
    and what a step hook sees (as a Batch, see :func:`rollout_batch`)."""

    obs: ObsRows
    """The observations the envs were acted on."""
    act: ActRows
    """The actions, as stored (the policy's raw actions)."""
    obs_next: ObsRows
    """The observations the step returned (before any reset of finished envs)."""
    rew: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    info: InfoRows
    """The infos the step returned."""
    policy: Batch | None
    """The policy's ``policy`` sub-batch for the actions; None when the policy stores nothing."""
    env_ids: np.ndarray
    """The env of each row."""


def dicts_to_batch(rows: Sequence[dict] | np.ndarray) -> Batch:
    """Stack a sequence of dicts with the same keys into a Batch of arrays (one row per dict).

    Numeric values are stacked per key with one ``np.array`` call. Rows with differing keys, or
    values that are not plain numbers/arrays (nested dicts, strings, tensors, ragged arrays),
    go through the generic ``Batch`` constructor, which pads and parses them.
    """
    rows = rows.tolist() if isinstance(rows, np.ndarray) else list(rows)
    if not rows:
        return Batch()
    first = rows[0]
    # equal total size plus every row having each of the first row's keys = identical key sets
    if sum(map(len, rows)) != len(first) * len(rows):
        return Batch(rows)
    data: dict[str, np.ndarray] = {}
    try:
        for key, value in first.items():
            if isinstance(value, dict | Batch | torch.Tensor):
                return Batch(rows)
            column = np.array([row[key] for row in rows])
            if column.dtype.kind not in _NUMERIC_KINDS:
                return Batch(rows)
            data[key] = column
    except (KeyError, ValueError):  # differing keys, or ragged values
        return Batch(rows)
    return batch_of_parsed_values(data)


def info_to_batch(info: InfoRows) -> Batch:
    """The Batch form of a vector env's info: an object array of dicts, a dict of arrays, or a
    Batch already."""
    if isinstance(info, np.ndarray):
        return dicts_to_batch(info)
    if isinstance(info, Batch):
        return info
    return Batch(dict(info))


def as_obs(obs: VenvObs | ObsRows) -> ObsRows:
    """Observations as a Batch stores them: dict observations (an object array of dicts from the
    vector env, or a dict of arrays) become a Batch; arrays, ragged object arrays, tensors and
    Batches pass through."""
    if type(obs) is np.ndarray:
        if obs.dtype.kind != "O" or len(obs) == 0 or not isinstance(obs[0], dict):
            return obs
        return dicts_to_batch(obs)
    if isinstance(obs, Mapping):
        return Batch(dict(obs))
    return obs


@overload
def concat_rows(parts: Sequence[TLeafRows]) -> TLeafRows: ...
@overload
def concat_rows(parts: Sequence[Mapping[str, TLeafRows]]) -> dict[str, TLeafRows]: ...
@overload
def concat_rows(parts: Sequence[RowValue]) -> RowValue: ...
def concat_rows(parts: Sequence[RowValue]) -> RowValue:
    """Join per-step values along their first axis (arrays, tensors, Batches or dicts); every
    part must be of the first part's kind."""
    first = parts[0]
    if len(parts) == 1:
        return first
    if isinstance(first, np.ndarray):
        arrays = _all_of(np.ndarray, parts)
        try:
            return np.concatenate(arrays)
        except ValueError:  # ragged observations: some steps object arrays, others numeric
            return _object_rows([row for array in arrays for row in array])
    if isinstance(first, torch.Tensor):
        return torch.cat(_all_of(torch.Tensor, parts))
    if isinstance(first, Batch):
        return Batch.cat(_all_of(Batch, parts))
    if isinstance(first, Mapping):
        mappings = [part for part in parts if isinstance(part, Mapping)]
        for part in mappings:
            if part.keys() != first.keys():
                raise ValueError(
                    f"cannot join per-step dicts with keys {sorted(first)} and {sorted(part)}: "
                    "a vector env's dict of infos must report the same keys at every step"
                )
        if len(mappings) == len(parts):
            return {key: concat_rows([part[key] for part in mappings]) for key in first}
    raise TypeError(
        f"cannot join per-step values of types {sorted({type(part).__name__ for part in parts})}"
    )


def _all_of(kind: type[TPart], parts: Sequence[object]) -> list[TPart]:
    """``parts``, each checked to be a ``kind``, for joining them with the joiner of that kind."""
    checked = [part for part in parts if isinstance(part, kind)]
    if len(checked) != len(parts):
        kinds = sorted({type(part).__name__ for part in parts})
        raise TypeError(f"cannot join per-step values of different types {kinds}")
    return checked


def _object_rows(rows: Sequence[object]) -> np.ndarray:
    """A 1-d object array holding ``rows`` (which numpy would otherwise try to stack)."""
    out = np.empty(len(rows), dtype=object)
    for i, row in enumerate(rows):
        out[i] = row
    return out


@overload
def take_rows(value: TLeafRows, index: np.ndarray) -> TLeafRows: ...
@overload
def take_rows(value: Mapping[str, TLeafRows], index: np.ndarray) -> dict[str, TLeafRows]: ...
@overload
def take_rows(value: RowValue, index: np.ndarray) -> RowValue: ...
def take_rows(value: RowValue, index: np.ndarray) -> RowValue:
    """Rows ``index`` of an array, tensor, Batch or dict (per key)."""
    if isinstance(value, np.ndarray | Batch):
        return value[index]
    if isinstance(value, torch.Tensor):
        return value[torch.as_tensor(index, device=value.device)]
    return {key: take_rows(rows, index) for key, rows in value.items()}


def take_state_rows(state: HiddenState, index: np.ndarray) -> HiddenState:
    """Rows ``index`` of a hidden state (None, a stateless policy's, stays None)."""
    return None if state is None else take_rows(state, index)


@overload
def replace_rows(
    value: TLeafRows, index: np.ndarray, new: RowValue | Sequence[float]
) -> TLeafRows: ...
@overload
def replace_rows(
    value: Mapping[str, TLeafRows], index: np.ndarray, new: RowValue | Sequence[float]
) -> dict[str, TLeafRows]: ...
@overload
def replace_rows(
    value: RowValue, index: np.ndarray, new: RowValue | Sequence[float]
) -> RowValue: ...
def replace_rows(value: RowValue, index: np.ndarray, new: RowValue | Sequence[float]) -> RowValue:
    """A copy of ``value`` whose rows ``index`` are ``new`` (arrays, object arrays, Batches,
    dicts of arrays, tensors); ``value`` itself is left untouched. A Batch's or dict's new rows
    must come as a Batch or dict."""
    if isinstance(value, Batch | Mapping):
        if not isinstance(new, Batch | Mapping):
            raise TypeError(
                f"the new rows of a {type(value).__name__} must be a Batch or dict with its "
                f"keys, got {type(new).__name__}"
            )
        if isinstance(value, Batch):
            return batch_of_parsed_values(
                {key: replace_rows(rows, index, new[key]) for key, rows in value.items()}
            )
        # EnvPool infos; keys a reset does not report keep their rows
        return {
            key: replace_rows(rows, index, new[key]) if key in new else rows
            for key, rows in value.items()
        }
    if isinstance(value, torch.Tensor):
        out_t = value.clone()
        out_t[torch.as_tensor(index, device=value.device)] = torch.as_tensor(
            new, dtype=value.dtype, device=value.device
        )
        return out_t
    new_a = np.asarray(new)
    if value.dtype != object and new_a.dtype != object and new_a.shape[1:] == value.shape[1:]:
        out_a = value.copy()
        out_a[index] = new_a
        return out_a
    # object rows (ragged observations, infos), or rows whose shape differs from the others'
    rows = _object_rows(list(value))
    for j, i in enumerate(index):
        rows[i] = new_a[j]
    return rows


@overload
def zero_rows(state: None, index: np.ndarray) -> None: ...
@overload
def zero_rows(state: TLeafRows, index: np.ndarray) -> TLeafRows: ...
@overload
def zero_rows(state: RowValue, index: np.ndarray) -> RowValue: ...
@overload
def zero_rows(state: HiddenState, index: np.ndarray) -> HiddenState: ...
def zero_rows(state: HiddenState, index: np.ndarray) -> HiddenState:
    """A copy of a recurrent hidden state with rows ``index`` cleared (zeros, or None for object
    arrays), for environments that just started a new episode."""
    if state is None:
        return None
    if isinstance(state, Batch):
        return Batch.empty(state, index)
    if isinstance(state, Mapping):
        return {key: zero_rows(rows, index) for key, rows in state.items()}
    if isinstance(state, torch.Tensor):  # one out-of-place kernel instead of copy + write
        return state.index_fill(0, torch.as_tensor(index, dtype=torch.long, device=state.device), 0)
    out_a = np.array(state, copy=True)
    out_a[index] = None if out_a.dtype == object else 0
    return out_a


def nbytes(value: object) -> int:
    """Memory held by the arrays of ``value`` (0 for objects it cannot size)."""
    if isinstance(value, np.ndarray):
        return value.nbytes if value.dtype != object else 0
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    if isinstance(value, Batch):
        return sum(nbytes(v) for v in value.values())
    return 0


def rollout_batch(transitions: Transitions, info: Batch, policy: Batch) -> Batch:
    """Transitions as the buffer stores them (``done`` derived), with their info and policy
    entry already as Batches."""
    terminated, truncated = transitions.terminated, transitions.truncated
    return batch_of_parsed_values(
        {
            "obs": transitions.obs,
            "act": transitions.act,
            "rew": transitions.rew,
            "terminated": terminated,
            "truncated": truncated,
            "done": np.logical_or(terminated, truncated),
            "obs_next": transitions.obs_next,
            "info": info,
            "policy": policy,
        }
    )


class RolloutStaging:
    """Transitions of the latest vector steps, kept as the env and policy returned them until
    they are written to the buffer together.

    Nothing is copied while staging: every staged value must be a fresh object that nobody
    writes into afterwards (the collectors build new arrays whenever rows change).
    """

    def __init__(self) -> None:
        self._staged: list[Transitions] = []
        self.steps = 0
        """Number of staged vector steps."""
        self.act_transform: Callable[[ActRows], ActRows] | None = None
        """Applied once to the joined actions before writing; random collection stores the
        inverse-mapped env actions, a row-wise map that is cheaper on many rows at once."""

    def clear(self) -> None:
        """Drop everything staged (e.g. left over from a collection interrupted by an error)."""
        self._staged = []
        self.steps = 0

    def stage(self, transitions: Transitions) -> None:
        """Keep one vector step's transitions."""
        self._staged.append(transitions)
        self.steps += 1

    def take(self) -> tuple[Batch, np.ndarray] | None:
        """The staged transitions as one Batch plus the env id of each row (None if empty);
        the staging is cleared."""
        if not self.steps:
            return None
        staged = self._staged
        self.clear()
        # one C-level transposition of the staged steps into per-field sequences
        obs, act, obs_next, rew, term, trunc, info, policy, ids = zip(*staged, strict=True)
        joined_act = concat_rows(act)
        if self.act_transform is not None:
            joined_act = self.act_transform(joined_act)
        if all(p is None for p in policy):
            joined_policy = Batch()
        else:
            joined_policy = concat_rows([Batch() if p is None else p for p in policy])
        joined = Transitions(
            concat_rows(obs),
            joined_act,
            concat_rows(obs_next),
            concat_rows(rew),
            concat_rows(term),
            concat_rows(trunc),
            concat_rows(info),
            joined_policy,
            _joined_env_ids(ids),
        )
        return rollout_batch(joined, info_to_batch(joined.info), joined_policy), joined.env_ids


def _joined_env_ids(ids: Sequence[np.ndarray]) -> np.ndarray:
    first_ids = ids[0]
    if all(part is first_ids for part in ids):  # the same envs stepped every time
        return np.tile(first_ids, len(ids))
    return concat_rows(ids)


@overload
def stack_rows(rows: Sequence[Batch]) -> Batch: ...
@overload
def stack_rows(rows: Sequence[torch.Tensor]) -> torch.Tensor: ...
@overload
def stack_rows(rows: Sequence[np.ndarray | np.generic | tuple | dict]) -> np.ndarray: ...
@overload
def stack_rows(rows: Sequence[ActRow]) -> ActRows: ...
def stack_rows(rows: Sequence[ActRow]) -> ActRows:
    """Stack single rows (numpy scalars/arrays, tuples/dicts, tensors or Batches) along a new
    first axis; every row must be of the first row's kind."""
    first = rows[0]
    if isinstance(first, Batch):
        return Batch.stack(_all_of(Batch, rows))
    if isinstance(first, torch.Tensor):
        return torch.stack(_all_of(torch.Tensor, rows))
    # the conversion np.stack applies to each row, made explicit for tuples and dicts
    return np.stack([np.asanyarray(row) for row in rows])


def put_rows(value: HiddenState, index: np.ndarray, new: RowValue, total: int) -> RowValue:
    """Like :func:`replace_rows` for a hidden state, but ``value`` None stands for ``total`` zero
    rows shaped like ``new`` (a per-env hidden state that does not exist yet)."""
    if value is None:
        if len(index) == total:
            return new
        value = zero_rows(take_rows(new, np.zeros(total, dtype=np.int64)), np.arange(total))
    return replace_rows(value, index, new)


def env_ids_of(info: InfoRows) -> np.ndarray:
    """The ``env_id`` of every row of a vector env's info (object array, dict or Batch)."""
    if isinstance(info, np.ndarray):
        return np.fromiter((row["env_id"] for row in info), dtype=np.int64, count=len(info))
    return np.asarray(info["env_id"], dtype=np.int64)
