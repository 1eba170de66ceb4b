"""Legal-action masks: the one convention every discrete-action policy honours.

An observation that carries a mask is a Batch (a dict, once collected) with the network's input
under ``obs`` and a boolean ``mask`` with one entry per action, true where the action is legal
(the convention of the published library and of :class:`~tianshou.env.PettingZooEnv`). A policy
feeds ``obs.obs`` to its networks and never chooses an illegal action, whether greedily, by
sampling or by random exploration; its losses use the masked distribution.

The functions here are that convention, written once, for the algorithms and for random
collection alike: extracting the mask and the network input (:func:`split_masked_obs`,
:func:`network_input`, :func:`policy_input`), checking the mask (:func:`check_mask`), masking
scores (:func:`mask_q_values` gives Q-values ``-inf``, :func:`mask_logits` gives logits a finite
floor so that entropies and KL divergences stay exact instead of ``0 * inf = nan``), and drawing
uniformly random legal actions (:func:`random_legal_actions`, :func:`sample_legal_actions`).

Masks of branching actions (BDQN) have one row per branch: shape ``(B, num_branches,
action_per_branch)``; every function here treats the last axis as the actions and all others as
independent choices.
"""

from collections.abc import Sequence
from typing import Any, TypeAlias

import gymnasium as gym
import numpy as np
import torch
from torch.distributions import Categorical, Distribution

from tianshou.data.batch import Batch, batch_of_parsed_values

Mask: TypeAlias = np.ndarray | torch.Tensor
"""A legal-action mask ``(B, ..., n_actions)``: true (or non-zero) where the action is legal."""


def action_mask(obs: Any) -> Mask | None:
    """The legal-action mask an observation batch carries (key ``mask``), or None."""
    if isinstance(obs, Batch):
        return obs.__dict__.get("mask")
    return None


def split_masked_obs(obs: Any) -> tuple[Any, Mask | None]:
    """``(network input, mask)`` of an observation batch.

    A Batch with a ``mask`` gives its ``obs`` entry (the whole Batch when it has none) and the
    mask; any other observation is the network input itself, with no mask.
    """
    mask = action_mask(obs)
    if mask is None:
        return obs, None
    return obs.__dict__.get("obs", obs), mask


def network_input(obs: Any) -> Any:
    """What a network sees of ``obs``: ``obs.obs`` when it carries a mask, else ``obs`` itself
    (critics of masked environments read the same input as their actors)."""
    return split_masked_obs(obs)[0]


def check_mask(mask: Mask, info: Any = None) -> None:
    """Reject a mask that leaves some observation without a legal action.

    :param mask: the legal-action mask ``(B, ..., n_actions)``.
    :param info: the batch's info; when it has an ``env_id`` the error names the env of the row.
    :raises ValueError: if the mask has no action axis, or names the first row (and branch)
        whose actions are all illegal.
    """
    if mask.ndim < 2:
        raise ValueError(
            "the legal-action mask must have shape (batch_size, n_actions), got "
            f"{tuple(mask.shape)}"
        )
    if isinstance(mask, torch.Tensor):
        empty = (~mask.bool().any(dim=-1)).cpu().numpy()
    else:
        empty = np.logical_not(np.asarray(mask, dtype=bool).any(axis=-1))
    if not empty.any():
        return
    position = tuple(int(i) for i in np.argwhere(empty)[0])
    row = position[0]
    where = f"row {row}" + (f", branch {position[1]}" if len(position) > 1 else "")
    env_id = _env_id_of_row(info, row)
    if env_id is not None:
        where += f" (env_id {env_id})"
    raise ValueError(
        f"the legal-action mask of {where} allows no action; every observation a policy acts on "
        "must allow at least one action, so check the environment's mask"
    )


def _env_id_of_row(info: Any, row: int) -> Any:
    """The ``env_id`` an info batch records for ``row``, or None."""
    env_ids = info.get("env_id") if isinstance(info, Batch | dict) else None
    if env_ids is None or np.ndim(env_ids) == 0 or row >= len(env_ids):
        return None
    return env_ids[row].item() if hasattr(env_ids[row], "item") else env_ids[row]


def legal_tensor(mask: Mask, scores: torch.Tensor) -> torch.Tensor:
    """``mask`` as a boolean tensor on the device of ``scores``, checked to match their shape.

    :raises ValueError: if the mask's shape differs from the scores'.
    """
    legal = torch.as_tensor(mask, device=scores.device).bool()
    if legal.shape != scores.shape:
        raise ValueError(
            f"the legal-action mask has shape {tuple(legal.shape)}, but the policy scores "
            f"{tuple(scores.shape)} actions; the mask needs one entry per action"
        )
    return legal


def mask_q_values(q_values: torch.Tensor, mask: Mask | None) -> torch.Tensor:
    """Q-values with ``-inf`` for illegal actions, so that no arg-max or max picks them."""
    if mask is None:
        return q_values
    return q_values.masked_fill(~legal_tensor(mask, q_values), -torch.inf)


def mask_logits(logits: torch.Tensor, mask: Mask | None) -> torch.Tensor:
    """Logits with the lowest finite value of their dtype for illegal actions.

    Their softmax probability underflows to exactly 0 and the legal actions' log-probabilities
    are exactly those of the distribution over the legal actions; unlike ``-inf``, the floor
    keeps ``0 * log 0`` terms (entropy, KL divergence) and their gradients finite.
    """
    if mask is None:
        return logits
    return logits.masked_fill(~legal_tensor(mask, logits), torch.finfo(logits.dtype).min)


def masked_categorical(dist: Distribution, mask: Mask | None) -> Distribution:
    """The categorical distribution ``dist`` restricted to the legal actions and renormalised.

    Works alike for a distribution built from logits or from probabilities (the latter's
    logits are the log-probabilities), so the actor may output either.

    :raises TypeError: if ``dist`` is not a ``Categorical`` (masks need one probability per
        action).
    """
    if mask is None:
        return dist
    if not isinstance(dist, Categorical):
        raise TypeError(
            "legal-action masks need a Categorical action distribution (one probability per "
            f"action), but dist_fn built a {type(dist).__name__}"
        )
    return Categorical(logits=mask_logits(dist.logits, mask), validate_args=False)


def random_legal_actions(legal: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
    """One uniformly random legal action per row of ``legal`` ``(B, ..., n_actions)``.

    :param legal: a boolean mask whose rows each allow at least one action.
    :param rng: the generator to draw from (None: numpy's global one).
    """
    shape = legal.shape
    scores = rng.random(shape) if rng is not None else np.random.random_sample(shape)
    # scores in [0, 1) plus 1 for legal actions: the arg-max is a uniform legal action
    return (scores + legal).argmax(axis=-1)


def unmask_dead_ends(obs: Any) -> Any:
    """``obs`` with every all-illegal mask row opened to all actions.

    A next observation without any legal action ends the game (a full board), so its bootstrap
    value is discarded; opening its mask keeps the targets computable (no max over nothing)
    instead of raising the error an acting policy raises for such a row.
    """
    mask = action_mask(obs)
    if mask is None:
        return obs
    if isinstance(mask, torch.Tensor):
        legal_t = mask.bool()
        dead = ~legal_t.any(dim=-1, keepdim=True)
        opened: Mask = legal_t | dead
    else:
        legal = np.asarray(mask, dtype=bool)
        dead_np = ~legal.any(axis=-1, keepdims=True)
        if not dead_np.any():
            return obs
        opened = legal | dead_np
    return batch_of_parsed_values({**obs.__dict__, "mask": opened})


def sample_legal_actions(spaces: Sequence[gym.Space], mask: Mask, info: Any = None) -> np.ndarray:
    """One uniformly random legal action for each row, drawn by the row's action space.

    Each space draws with its own generator (``space.seed`` makes the draws reproducible), as
    unmasked random collection does.

    :param spaces: the action space of each row's env (``Discrete``, or ``MultiDiscrete`` for
        branching actions).
    :param mask: the rows' legal-action masks ``(B, n_actions)`` (``(B, branches, n)`` for a
        ``MultiDiscrete`` space).
    :param info: the rows' info; its ``env_id`` names the env of an all-illegal row.
    :raises ValueError: if a row's mask allows no action.
    """
    legal = np.asarray(mask, dtype=bool)
    check_mask(legal, info)
    return np.array(
        [
            getattr(space, "start", 0) + random_legal_actions(row, space.np_random)
            for space, row in zip(spaces, legal, strict=True)
        ]
    )


def policy_input(batch: Batch) -> tuple[Any, Mask | None]:
    """``(network input, mask)`` of ``batch.obs``, the mask checked (see :func:`check_mask`).

    :raises ValueError: if an observation's mask allows no action (naming its row and, when
        ``batch.info`` records it, its env).
    """
    obs, mask = split_masked_obs(batch.obs)
    if mask is not None:
        check_mask(mask, batch.get("info"))
    return obs, mask
