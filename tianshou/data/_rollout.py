"""Plumbing between vector envs, policies and buffers for the collectors.

Two concerns live here, both on the collectors' hot path:

* Converting what a vector env returns into what a Batch stores: infos arrive as object arrays
  of dicts (or, from EnvPool, as a dict of arrays) and dict observations as object arrays of
  dicts; :func:`dicts_to_batch` stacks such rows column by column, far faster than the generic
  Batch constructor, and falls back to it for anything irregular.
* Staging: :class:`RolloutStaging` keeps the transitions of consecutive vector steps as lists of
  the arrays the env and policy produced and turns them into one Batch for a single
  ``buffer.add`` call. One add per many steps, instead of one per step, is what keeps the
  per-step cost of collection small next to the cost of stepping the envs.

Helpers that change rows of observations or hidden states return new objects and never write
into their inputs, because staged transitions still reference those inputs.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from tianshou.data.batch import Batch, batch_of_parsed_values

_NUMERIC_KINDS = frozenset("biufc")


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
    data: dict[str, Any] = {}
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


def info_to_batch(info: Any) -> Batch:
    """The Batch form of a vector env's info: an object array of dicts, a dict of arrays, or a
    Batch already."""
    if isinstance(info, Batch):
        return info
    if isinstance(info, dict):
        return Batch(info)
    return dicts_to_batch(info)


def as_obs(obs: Any) -> Any:
    """Observations as a Batch stores them: dict observations (an object array of dicts from the
    vector env) become a Batch; arrays, ragged object arrays and Batches pass through."""
    if type(obs) is np.ndarray:
        if obs.dtype.kind != "O" or len(obs) == 0 or not isinstance(obs[0], dict):
            return obs
        return dicts_to_batch(obs)
    if isinstance(obs, dict):
        return Batch(obs)
    return obs


def concat_rows(parts: Sequence[Any]) -> Any:
    """Join per-step values along their first axis (arrays, tensors, Batches or dicts)."""
    first = parts[0]
    if len(parts) == 1:
        return first
    if isinstance(first, np.ndarray):
        try:
            return np.concatenate(parts)
        except ValueError:  # ragged observations: some steps object arrays, others numeric
            rows = [row for part in parts for row in part]
            out = np.empty(len(rows), dtype=object)
            for i, row in enumerate(rows):
                out[i] = row
            return out
    if isinstance(first, torch.Tensor):
        return torch.cat(list(parts))
    if isinstance(first, Batch):
        return Batch.cat(list(parts))
    if isinstance(first, dict):
        for part in parts:
            if part.keys() != first.keys():
                raise ValueError(
                    f"cannot join per-step dicts with keys {sorted(first)} and {sorted(part)}: "
                    "a vector env's dict of infos must report the same keys at every step"
                )
        return {key: concat_rows([part[key] for part in parts]) for key in first}
    raise TypeError(f"cannot join per-step values of type {type(first).__name__}")


def take_rows(value: Any, index: np.ndarray) -> Any:
    """Rows ``index`` of an array, tensor, Batch, dict (per key) or None."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {key: take_rows(v, index) for key, v in value.items()}
    if isinstance(value, torch.Tensor):
        return value[torch.as_tensor(index, device=value.device)]
    return value[index]


def replace_rows(value: Any, index: np.ndarray, new: Any) -> Any:
    """A copy of ``value`` whose rows ``index`` are ``new`` (arrays, object arrays, Batches,
    dicts of arrays, tensors); ``value`` itself is left untouched."""
    if isinstance(value, Batch):
        out = batch_of_parsed_values(dict(value.__dict__))
        for key, sub in value.__dict__.items():
            out.__dict__[key] = replace_rows(sub, index, new[key])
        return out
    if isinstance(value, dict):  # EnvPool infos; keys a reset does not report keep their rows
        return {
            key: replace_rows(sub, index, new[key]) if key in new else sub
            for key, sub in value.items()
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
    rows = np.empty(len(value), dtype=object)
    for i in range(len(value)):
        rows[i] = value[i]
    for j, i in enumerate(index):
        rows[i] = new_a[j]
    return rows


def zero_rows(state: Any, index: np.ndarray) -> Any:
    """A copy of a recurrent hidden state with rows ``index`` cleared (zeros, or None for object
    arrays), for environments that just started a new episode."""
    if state is None:
        return None
    if isinstance(state, Batch):
        return Batch.empty(state, index)
    if isinstance(state, dict):
        return {key: zero_rows(sub, index) for key, sub in state.items()}
    if isinstance(state, torch.Tensor):
        out_t = state.clone()
        out_t[torch.as_tensor(index, device=state.device)] = 0
        return out_t
    out_a = np.array(state, copy=True)
    out_a[index] = None if out_a.dtype == object else 0
    return out_a


def nbytes(value: Any) -> int:
    """Memory held by the arrays of ``value`` (0 for objects it cannot size)."""
    if isinstance(value, np.ndarray):
        return value.nbytes if value.dtype != object else 0
    if isinstance(value, torch.Tensor):
        return value.element_size() * value.nelement()
    if isinstance(value, Batch):
        return sum(nbytes(v) for v in value.__dict__.values())
    return 0


def rollout_batch(
    obs: Any,
    act: Any,
    obs_next: Any,
    rew: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    info: Batch,
    policy: Batch,
) -> Batch:
    """The transitions of one or more steps as the buffer stores them (``done`` derived)."""
    return batch_of_parsed_values(
        {
            "obs": obs,
            "act": act,
            "rew": rew,
            "terminated": terminated,
            "truncated": truncated,
            "done": np.logical_or(terminated, truncated),
            "obs_next": obs_next,
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
        self._columns: list[list[Any]] = []
        self.steps = 0
        """Number of staged vector steps."""
        self.act_transform: Callable[[Any], Any] | None = None
        """Applied once to the joined actions before writing; random collection stores the
        inverse-mapped env actions, a row-wise map that is cheaper on many rows at once."""
        self.clear()

    def clear(self) -> None:
        """Drop everything staged (e.g. left over from a collection interrupted by an error)."""
        self._columns = [[] for _ in range(9)]
        self.steps = 0

    def stage(
        self,
        obs: Any,
        act: Any,
        obs_next: Any,
        rew: np.ndarray,
        terminated: np.ndarray,
        truncated: np.ndarray,
        info: Any,
        policy: Batch | None,
        env_ids: np.ndarray,
    ) -> None:
        """Keep one vector step's transitions (``env_ids``: the env of each row; ``policy``
        None when the policy stores nothing)."""
        columns = self._columns
        columns[0].append(obs)
        columns[1].append(act)
        columns[2].append(obs_next)
        columns[3].append(rew)
        columns[4].append(terminated)
        columns[5].append(truncated)
        columns[6].append(info)
        columns[7].append(policy)
        columns[8].append(env_ids)
        self.steps += 1

    def take(self) -> tuple[Batch, np.ndarray] | None:
        """The staged transitions as one Batch plus the env id of each row (None if empty);
        the staging is cleared."""
        if not self.steps:
            return None
        obs, act, obs_next, rew, term, trunc, info, policy, ids = self._columns
        self.clear()
        joined_act = concat_rows(act)
        if self.act_transform is not None:
            joined_act = self.act_transform(joined_act)
        if all(p is None for p in policy):
            joined_policy = Batch()
        else:
            joined_policy = concat_rows([Batch() if p is None else p for p in policy])
        batch = rollout_batch(
            concat_rows(obs),
            joined_act,
            concat_rows(obs_next),
            concat_rows(rew),
            concat_rows(term),
            concat_rows(trunc),
            info_to_batch(concat_rows(info)),
            joined_policy,
        )
        first_ids = ids[0]
        if all(part is first_ids for part in ids):  # the same envs stepped every time
            return batch, np.tile(first_ids, len(ids))
        return batch, concat_rows(ids)


def stack_rows(rows: Sequence[Any]) -> Any:
    """Stack single rows (numpy scalars/arrays, tensors or Batches) along a new first axis."""
    first = rows[0]
    if isinstance(first, Batch):
        return Batch.stack(list(rows))
    if isinstance(first, torch.Tensor):
        return torch.stack(list(rows))
    return np.stack(rows)


def put_rows(value: Any, index: np.ndarray, new: Any, total: int) -> Any:
    """Like :func:`replace_rows`, but ``value`` None stands for ``total`` zero rows shaped like
    ``new`` (a per-env hidden state that does not exist yet)."""
    if value is None:
        if len(index) == total:
            return new
        value = zero_rows(take_rows(new, np.zeros(total, dtype=np.int64)), np.arange(total))
    return replace_rows(value, index, new)


def env_ids_of(info: Any) -> np.ndarray:
    """The ``env_id`` of every row of a vector env's info (object array, dict or Batch)."""
    if isinstance(info, dict | Batch):
        return np.asarray(info["env_id"], dtype=np.int64)
    return np.fromiter((row["env_id"] for row in info), dtype=np.int64, count=len(info))
