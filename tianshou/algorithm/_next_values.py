"""The values of next observations, reusing the values of the observations they equal.

In a rollout most next observations are the observations of the following rows: only where an
episode ends, or where an env's part of the rollout stops, does ``obs_next`` hold something the
batch's ``obs`` lacks. An on-policy update values both columns (GAE needs ``V(s)`` and
``V(s')``), with ``recompute_advantage`` once per pass, so evaluating the critic on every next
observation does most of that work twice. :func:`next_values` evaluates it only where the next
observation is new, takes the other values from the rows it equals (compared exactly, so
nothing is assumed about how the batch was filled) and leaves terminated rows at zero, since
their next value is never used.
"""

from collections.abc import Callable

import numpy as np
import torch

from tianshou.data.buffer.buffer_base import ReplayBuffer


def successor_rows(
    obs: object, obs_next: object, buffer: ReplayBuffer, indices: np.ndarray
) -> np.ndarray | None:
    """For each row, the row of the batch whose ``obs`` equals this row's ``obs_next``.

    Candidates are the buffer's successors (``buffer.next``) that are rows of the batch; a
    candidate counts only if the two observations are equal element by element.

    :param obs: the batch's observations (rows in the order of ``indices``).
    :param obs_next: the batch's next observations.
    :param indices: the batch's buffer indices.
    :return: ``(B,)`` row numbers, -1 where no row holds the next observation; None if the
        observations are not arrays of one shape and dtype (then nothing can be reused).
    """
    if not (
        isinstance(obs, np.ndarray)
        and isinstance(obs_next, np.ndarray)
        and obs.shape == obs_next.shape
        and obs.dtype == obs_next.dtype
        and len(obs) == len(indices) > 0
    ):
        return None
    num_rows = len(indices)
    successors = buffer.next(indices)
    row_of_index = np.full(int(max(indices.max(), successors.max())) + 1, -1, dtype=np.int64)
    row_of_index[indices] = np.arange(num_rows)
    rows = row_of_index[successors]
    rows[rows == np.arange(num_rows)] = -1  # an episode's end: next() stays put
    candidates = np.flatnonzero(rows >= 0)
    if len(candidates):
        same = obs_next[candidates] == obs[rows[candidates]]
        rows[candidates[~same.reshape(len(candidates), -1).all(axis=1)]] = -1
    return rows


def next_values(
    values: torch.Tensor,
    obs_next: np.ndarray,
    rows: np.ndarray,
    terminated: np.ndarray,
    evaluate: Callable[[np.ndarray], torch.Tensor],
) -> torch.Tensor:
    """``V(obs_next)`` from ``values`` (``V(obs)``) where :func:`successor_rows` found a row,
    from ``evaluate`` on the remaining next observations, and 0 where the episode terminated.

    :param values: ``(B,)`` values of the batch's observations.
    :param rows: :func:`successor_rows` of the batch.
    :param terminated: ``(B,)`` whether each row ended its episode by termination.
    :param evaluate: the critic's flat values of some next observations.
    """
    result = torch.zeros_like(values)
    reused = np.flatnonzero(rows >= 0)
    if len(reused):
        source = torch.as_tensor(rows[reused], device=values.device)
        result[torch.as_tensor(reused, device=values.device)] = values[source]
    fresh = np.flatnonzero((rows < 0) & ~np.asarray(terminated, dtype=bool))
    if len(fresh):
        result[torch.as_tensor(fresh, device=values.device)] = evaluate(obs_next[fresh])
    return result
