"""Cutting chronological transitions into padded sequence chunks, for recurrent training.

A recurrent network is trained on *sequences*: each chunk is a run of consecutive steps of one
episode, at most ``chunk_len`` long, and it starts from the hidden state stored when its first
step was collected. Chunks never cross an episode boundary, so the state is reset there exactly
as it was during collection. Chunks shorter than ``chunk_len`` are padded; the ``valid`` mask
says which entries are real, and every loss averages over the valid entries only.

>>> starts = np.array([True, False, False, True, False])  # two episodes: rows 0-2 and 3-4
>>> rows, valid = chunk_rows(starts, chunk_len=2)
>>> rows.tolist(), valid.tolist()
([[0, 1], [2, 2], [3, 4]], [[True, True], [True, False], [True, True]])
"""

from typing import Any

import numpy as np
import torch

from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.data.buffer.sequence import sequence_rows
from tianshou.spaces.dict_observations import ObsRows, obs_rows
from tianshou.spaces.masks import split_masked_obs


def segment_starts(buffer: ReplayBuffer, indices: np.ndarray, done: np.ndarray) -> np.ndarray:
    """Which rows of a chronologically ordered sample begin a new run of consecutive steps.

    A row begins a run if it is the first, if the row before it ended an episode, or if it does
    not follow the row before it in the buffer (another env's sub-buffer, or a gap).

    :param buffer: the buffer the rows were sampled from (for its ``next`` links).
    :param indices: the rows' buffer indices, in chronological order per env.
    :param done: whether each row ended its episode (terminated or truncated).
    """
    indices = np.asarray(indices)
    if len(indices) == 0:
        return np.zeros(0, dtype=bool)
    starts = np.ones(len(indices), dtype=bool)
    follows = buffer.next(indices[:-1]) == indices[1:]
    starts[1:] = np.asarray(done[:-1], dtype=bool) | ~follows
    return starts


def chunk_rows(starts: np.ndarray, chunk_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Cut runs (marked by ``starts``) into chunks of at most ``chunk_len`` steps.

    :return: ``(rows, valid)``, both ``(num_chunks, chunk_len)``: ``rows`` are row numbers into
        the sample (padding repeats the chunk's last row, so gathering is always in range),
        ``valid`` marks the real entries.
    """
    if chunk_len < 1:
        raise ValueError(f"chunk_len must be a positive int, got {chunk_len}")
    starts = np.asarray(starts, dtype=bool)
    num = len(starts)
    if num == 0:
        return np.zeros((0, chunk_len), dtype=np.int64), np.zeros((0, chunk_len), dtype=bool)
    if not starts[0]:
        raise ValueError("the first row must start a run")
    run_id = np.cumsum(starts) - 1
    run_first = np.flatnonzero(starts)
    position = np.arange(num) - run_first[run_id]
    offset = position % chunk_len
    chunk_id = np.cumsum(offset == 0) - 1
    rows = np.full((chunk_id[-1] + 1, chunk_len), -1, dtype=np.int64)
    rows[chunk_id, offset] = np.arange(num)
    valid = rows >= 0
    last_valid = np.maximum.accumulate(rows, axis=1)
    return np.where(valid, rows, last_valid), valid


def run_ends(starts: np.ndarray) -> np.ndarray:
    """Which rows end their run: the row before every start, and the last row."""
    ends = np.zeros(len(starts), dtype=bool)
    if len(starts):
        ends[:-1] = starts[1:]
        ends[-1] = True
    return ends


def state_rows(stored: Any, rows: Any, device: torch.device | None) -> Any:
    """The stored recurrent states of ``rows`` as (nested) dicts of float tensors.

    :param stored: a state as the buffer keeps it: a Batch (or dict) of arrays or tensors with
        one leading row per transition, possibly nested (``{"actor": {"hidden": ...}}``).
    :param rows: any numpy index of the rows (an index array, or ``np.s_[:, 0]`` for the first
        step of every sequence).
    """
    if isinstance(stored, Batch | dict):
        return {key: state_rows(value, rows, device) for key, value in stored.items()}
    return torch.as_tensor(stored[rows], device=device, dtype=torch.float32)


def masked_mean(values: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` over the entries ``valid`` marks (padding excluded; 0 if none)."""
    weights = valid.to(values.dtype)
    return (values * weights).sum() / weights.sum().clamp_min(1.0)


def replay_sequences(
    buffer: ReplayBuffer,
    starts: np.ndarray,
    seq_len: int,
    act_dtype: torch.dtype,
    device: torch.device,
    prioritized: bool = False,
) -> Batch:
    """The sequences of ``seq_len`` steps from ``starts`` as tensors, for a recurrent update.

    :param prioritized: the caller weights the sequences by their start rows' importance
        weights and feeds back priorities; without it a prioritized buffer is refused.

    :return: a Batch with leading shape ``(B, seq_len)``: ``obs``, ``obs_next``, ``act``, ``rew``,
        ``terminated``, ``done`` (terminated or truncated) and ``valid`` (False for padding after
        an episode's end), and ``state``, the stored ``policy.state_in`` of every first step.
        Flat observations are float tensors; structured ones (dicts, images for a
        ``preprocess_net``) are Batches of tensors that keep their dtypes. Masked observations
        give their network inputs as ``obs``/``obs_next`` and their legal-action masks as
        ``mask``/``mask_next`` (boolean).
    :raises TypeError: for a prioritized buffer unless ``prioritized`` (its weights would be
        ignored).
    :raises ValueError: if the buffer holds no stored states.
    """
    if isinstance(buffer, PrioritizedReplayBuffer) and not prioritized:
        raise TypeError(
            "this recurrent update samples sequences uniformly; use a non-prioritized buffer"
        )
    rows, valid = sequence_rows(buffer, starts, seq_len)
    # only the fields the update reads, and the stored state of the first steps only: gathering
    # whole transitions would copy every step's states and infos, which no update uses
    policy = buffer.get(rows[:, 0], "policy", Batch(), stack_num=1)
    if "state_in" not in policy:
        raise ValueError(
            "the buffer has no stored recurrent states (policy.state_in); collect with the "
            "recurrent policy (not with random actions)"
        )
    flat = rows.reshape(-1)

    def field(key: str, dtype: torch.dtype) -> torch.Tensor:
        value = buffer.get(flat, key, stack_num=1)
        value = value.reshape(*rows.shape, *value.shape[1:])
        return torch.as_tensor(value, device=device, dtype=dtype)

    def observations(key: str) -> dict[str, Any]:
        # frame-stacked as the buffer's own indexing does; a mask travels beside its input
        network_obs, mask = split_masked_obs(buffer.get(flat, key, stack_num=None))
        sequences = {key: _with_leading(obs_rows(network_obs, device), rows.shape)}
        if mask is not None:
            legal = torch.as_tensor(mask, device=device).bool()
            sequences[key.replace("obs", "mask")] = _with_leading(legal, rows.shape)
        return sequences

    terminated = field("terminated", torch.bool)
    return batch_of_parsed_values(
        {
            **observations("obs"),
            **observations("obs_next"),
            "act": field("act", act_dtype),
            "rew": field("rew", torch.float32),
            "terminated": terminated,
            "done": terminated | field("truncated", torch.bool),
            "valid": torch.as_tensor(valid, device=device),
            "state": state_rows(policy.state_in, slice(None), device),
        }
    )


def _with_leading(values: ObsRows, leading: tuple[int, ...]) -> ObsRows:
    """Values gathered for ``B * T`` rows, reshaped to the leading shape ``(B, T)``."""

    def reshape(value: torch.Tensor) -> torch.Tensor:
        return value.reshape(*leading, *value.shape[1:])

    if isinstance(values, Batch):
        return values.apply_values_transform(reshape)  # type: ignore[return-value]
    return reshape(values)


def successors_extended(obs: Any, obs_next: Any) -> Any:
    """``o_0`` followed by every step's next observation, ``(B, T + 1, ...)``: one pass of a
    network over it values every step (positions ``0..T-1``) and every successor (``1..T``),
    since within an episode ``obs_next[t] == obs[t + 1]``."""
    if isinstance(obs, Batch):
        return Batch({key: successors_extended(obs[key], obs_next[key]) for key in obs.get_keys()})
    return torch.cat([obs[:, :1], obs_next], dim=1)
