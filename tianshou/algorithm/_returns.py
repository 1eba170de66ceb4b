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

_compiled: dict[str, Callable[..., Any]] = {}


def _jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The numba-compiled version of the loop function ``fn``, compiled once and cached on disk."""
    compiled = _compiled.get(fn.__name__)
    if compiled is None:
        import numba

        compiled = _compiled[fn.__name__] = numba.njit(cache=True, nogil=True)(fn)
    return compiled


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
        _jit(_gae_kernel)(
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
        _jit(_return_to_go_kernel)(rew64, float(gamma), out)
    return out


def nstep_coefficients(
    rew: np.ndarray, end_flag: np.ndarray, gamma: float
) -> tuple[np.ndarray, np.ndarray]:
    """Discounted reward sums and bootstrap discounts of n-step returns.

    The n-step return of sample ``b`` is ``reward_sum[b] + discount[b] * Q(bootstrap state)``:
    rewards are summed along the sample's episode up to and including the first step with an
    end flag, and ``discount = gamma ** k`` for the ``k`` rewards summed.

    :param rew: rewards along each sample's next ``n`` rows, shape ``(n, B)``.
    :param end_flag: end flags of the first ``n - 1`` of those rows, shape ``(n - 1, B)`` (the
        sum stops after ``n`` rewards anyway).
    :param gamma: discount factor.
    :return: ``(reward_sum, discount)``, both float64 of shape ``(B,)``.
    """
    n_step = rew.shape[0]
    powers = np.cumprod(np.full(n_step + 1, float(gamma)))
    powers = np.concatenate(([1.0], powers[:-1]))
    ended = np.asarray(end_flag, dtype=np.bool_)
    steps = np.where(ended.any(axis=0), ended.argmax(axis=0) + 1, n_step)
    summed = np.arange(n_step)[:, None] < steps
    reward_sum = (powers[:n_step, None] * np.where(summed, rew, 0.0)).sum(axis=0)
    return reward_sum, powers[steps]


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
    """``Algorithm.compute_nstep_return`` (documented there).

    The bootstrap value is combined with the rewards on the target's device, in float64, so no
    target values travel to the host and back.
    """
    if n_step < 1:
        raise ValueError(f"n_step must be a positive int, got {n_step}")
    rows = [indices]
    for _ in range(n_step - 1):
        rows.append(buffer.next(rows[-1]))
    last = rows[-1]
    with torch.no_grad():
        target_q = torch.as_tensor(target_q_fn(buffer, last))
    size = len(indices)
    rew = buffer.rew
    if np.ndim(rew) != 1:
        raise ValueError(f"n-step returns need scalar rewards, got shape {np.shape(rew)}")
    if n_step == 1:
        reward_sum = rew[indices].astype(np.float64)
        discount = np.full(size, float(gamma))
    else:
        stacked = np.stack(rows)
        # next() stays put exactly at episode ends and at the newest row of a sub-buffer
        end_flag = stacked[1:] == stacked[:-1]
        reward_sum, discount = nstep_coefficients(rew[stacked], end_flag, gamma)
    discount = discount * value_mask(buffer, last)
    coef = torch.as_tensor(
        np.stack([discount, reward_sum], axis=1), dtype=torch.float64, device=target_q.device
    )
    returns = coef[:, :1] * target_q.reshape(size, -1) + coef[:, 1:]
    batch.returns = returns.to(target_q.dtype)
    if "weight" in batch.__dict__:
        batch.weight = to_torch_as(batch.weight, target_q)
    return batch
