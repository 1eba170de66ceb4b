"""Return computations behind ``Algorithm.compute_episodic_return`` / ``compute_nstep_return``.

Episodes in a replay buffer end in one of three ways, and each needs its own treatment
(partial-episode bootstrapping, Pardo et al. 2018):

* *terminated* (the MDP reached a terminal state): the recursion stops and the value of the
  next state is zero;
* *truncated* (a time limit cut the episode): the recursion stops, but the next state still has
  a value, so it is bootstrapped from ``V(s')`` / ``Q(s')``;
* *still running* (the newest transition of a sub-buffer whose episode has not ended yet): like
  truncated, since the data simply stops there.

The backward GAE recursion is a loop over the whole rollout, so it runs in a numba kernel that
is compiled on first use and cached on disk (importing this module never imports numba). The
n-step return only loops over the horizon, so it is vectorised over the batch in numpy. The
public entry points are the static methods of ``Algorithm``, which delegate here.
"""

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.utils.converter import to_numpy, to_torch_as
from tianshou.utils.lazy_jit import compiled


def _gae_kernel(
    v_s: np.ndarray,
    v_s_: np.ndarray,
    rew: np.ndarray,
    end_flag: np.ndarray,
    gamma: float,
    gae_lambda: float,
    out: np.ndarray,
) -> None:
    """Fill ``out`` with the GAE advantages, running backward and restarting at every end flag."""
    decay = gamma * gae_lambda
    gae = 0.0
    for i in range(rew.shape[0] - 1, -1, -1):
        delta = rew[i] + gamma * v_s_[i] - v_s[i]
        gae = delta if end_flag[i] else delta + decay * gae
        out[i] = gae


def _return_to_go_kernel(rewards: np.ndarray, gamma: float, out: np.ndarray) -> None:
    """Fill ``out`` with the discounted sum of the rewards from each step to the end."""
    acc = 0.0
    for i in range(rewards.shape[0] - 1, -1, -1):
        acc = rewards[i] + gamma * acc
        out[i] = acc


def _as_float64_vector(name: str, value: Any, length: int) -> np.ndarray:
    arr = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
    if arr.shape[0] != length:
        raise ValueError(
            f"{name} must hold one value per transition ({length}), got shape {np.shape(value)}"
        )
    return arr


def gae_return(
    v_s: np.ndarray,
    v_s_: np.ndarray,
    rew: np.ndarray,
    end_flag: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> np.ndarray:
    """Generalised advantage estimates of a rollout stored in chronological order.

    ``A_t = delta_t + gamma * lambda * A_{t+1}``, with ``delta_t = r_t + gamma * v_s_[t] - v_s[t]``,
    and the recursion restarted (``A_t = delta_t``) wherever ``end_flag[t]`` is set.

    :param v_s: value of each observation, shape ``(T,)``.
    :param v_s_: value of each next observation, already zeroed where the episode terminated.
    :param rew: the reward of each step, shape ``(T,)``.
    :param end_flag: where the recursion must not look past the step (episode end or the last
        stored step of a still-running episode).
    :param gamma: discount factor.
    :param gae_lambda: GAE's bias/variance trade-off; 1 gives Monte-Carlo advantages.
    :return: float64 advantages, shape ``(T,)``.
    """
    length = np.shape(rew)[0] if np.ndim(rew) else 0
    rew64 = _as_float64_vector("rew", rew, length)
    out = np.empty(length, dtype=np.float64)
    if length:
        compiled(_gae_kernel)(
            _as_float64_vector("v_s", v_s, length),
            _as_float64_vector("v_s_", v_s_, length),
            rew64,
            np.ascontiguousarray(end_flag, dtype=np.bool_).reshape(-1),
            float(gamma),
            float(gae_lambda),
            out,
        )
    return out


def episode_mc_return_to_go(rewards: np.ndarray, gamma: float = 0.99) -> np.ndarray:
    """Discounted return-to-go of every step of one complete episode (float64, same length).

    :param rewards: the episode's rewards in order, shape ``(T,)``.
    :param gamma: discount factor.
    """
    rew64 = np.ascontiguousarray(rewards, dtype=np.float64).reshape(-1)
    out = np.empty_like(rew64)
    if len(rew64):
        compiled(_return_to_go_kernel)(rew64, float(gamma), out)
    return out


def nstep_coefficients(
    buffer: ReplayBuffer, indices: np.ndarray, gamma: float, n_step: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Discounted reward sums, bootstrap discounts and bootstrap rows of n-step returns.

    The n-step return of sample ``b`` is ``reward_sum[b] + discount[b] * Q(obs_next[last[b]])``:
    rewards are summed along the sample's episode, following ``buffer.next``, for at most
    ``n_step`` steps and up to and including the first step where ``next`` stays put (an
    episode end or the newest row of a sub-buffer); ``discount`` is ``gamma ** k`` for the
    ``k`` rewards summed, zeroed where the last of them terminated the episode. The walk along
    the episodes is one kernel call of the buffer (``_nstep_sums``), not a ``next`` per step.

    :param buffer: the buffer holding the transitions.
    :param indices: the sampled rows.
    :param gamma: discount factor.
    :param n_step: the horizon (at least 1).
    :return: ``(reward_sum, discount, last)``: float64 sums and discounts of shape ``(B,)``, and
        the bootstrap rows.
    """
    rew = buffer.rew
    if np.ndim(rew) != 1:
        raise ValueError(f"n-step returns need scalar rewards, got shape {np.shape(rew)}")
    if n_step == 1:
        last = indices
        reward_sum, discount = rew[indices].astype(np.float64), np.full(len(indices), float(gamma))
    else:
        reward_sum, discount, last = buffer._nstep_sums(indices, rew, gamma, n_step)
    return reward_sum, discount * value_mask(buffer, last), last


def value_mask(buffer: ReplayBuffer, indices: np.ndarray) -> np.ndarray:
    """True where the next state of the transition has a value, i.e. it did not terminate."""
    return np.logical_not(buffer.terminated[indices])


def episodic_return(
    batch: Batch,
    buffer: ReplayBuffer,
    indices: np.ndarray,
    v_s_: np.ndarray | torch.Tensor | None,
    v_s: np.ndarray | torch.Tensor | None,
    gamma: float,
    gae_lambda: float,
) -> tuple[np.ndarray, np.ndarray]:
    """``Algorithm.compute_episodic_return`` (documented there)."""
    rew = np.asarray(batch.rew)
    if v_s_ is None:
        if not np.isclose(gae_lambda, 1.0):
            raise ValueError(
                "without value estimates (v_s_=None) only Monte-Carlo returns can be "
                f"computed, which needs gae_lambda=1.0, got {gae_lambda}"
            )
        next_values = np.zeros(len(rew))
    else:
        next_values = np.asarray(to_numpy(v_s_)).reshape(-1)
        if next_values.shape != (len(rew),):
            raise ValueError(f"v_s_ has {next_values.size} values for {len(rew)} transitions")
        next_values = next_values * value_mask(buffer, indices)
    values = np.roll(next_values, 1) if v_s is None else np.asarray(to_numpy(v_s)).reshape(-1)
    end_flag = np.logical_or(batch.terminated, batch.truncated)
    end_flag[np.isin(indices, buffer.unfinished_index())] = True
    advantages = gae_return(values, next_values, rew, end_flag, gamma, gae_lambda)
    return advantages + values, advantages


def nstep_return(
    batch: Batch,
    buffer: ReplayBuffer,
    indices: np.ndarray,
    target_q_fn: Callable[[ReplayBuffer, np.ndarray], torch.Tensor],
    gamma: float,
    n_step: int,
) -> Batch:
    """``Algorithm.compute_nstep_return`` (documented there)."""
    if n_step < 1:
        raise ValueError(f"n_step must be a positive int, got {n_step}")
    reward_sum, discount, last = nstep_coefficients(buffer, indices, gamma, n_step)
    with torch.no_grad():
        target_q = torch.as_tensor(target_q_fn(buffer, last))
    batch.returns = _combine(reward_sum, discount, target_q.reshape(len(indices), -1))
    if "weight" in batch.__dict__:
        batch.weight = to_torch_as(batch.weight, target_q)
    return batch


_HOST_FLOATS = (torch.float32, torch.float64)


def _combine(reward_sum: np.ndarray, discount: np.ndarray, target_q: torch.Tensor) -> torch.Tensor:
    """``reward_sum + discount * target_q`` per row, computed in float64 and returned in the
    dtype of ``target_q`` ``(B, M)``, on its device, so no target values travel to the host.

    Host float targets outside autograd take numpy's route, which gives the same numbers with
    a fraction of the per-operation overhead of torch on tensors this small.
    """
    on_host = target_q.device.type == "cpu" and target_q.dtype in _HOST_FLOATS
    if on_host and not target_q.requires_grad:
        q = target_q.numpy()
        return torch.from_numpy((discount[:, None] * q + reward_sum[:, None]).astype(q.dtype))
    coef = torch.as_tensor(
        np.stack([discount, reward_sum], axis=1), dtype=torch.float64, device=target_q.device
    )
    return (coef[:, :1] * target_q + coef[:, 1:]).to(target_q.dtype)
