"""What the algorithms' update steps share: the finite-loss guard, clearing and clipping
gradients, minibatch iteration, action and log-probability shaping, and freezing parameters an
actor's loss passes through.

The finite-loss guard, :func:`finite_loss_values`, is the only NaN/inf check of the package:
``Algorithm.Optimizer`` runs it before every step (so a non-finite loss never reaches the
parameters), and algorithms read their losses for the training stats through it, with one device
sync for all of them.
"""

import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

from tianshou.data.batch import Batch, batch_of_parsed_values

# Keys an on-policy update reads from a sample; everything else (obs_next, rew, flags, ...) is
# dropped before minibatching so that indexing a minibatch touches as little data as possible.
_UPDATE_KEYS = ("obs", "info", "policy", "act", "returns", "adv", "v_s", "logp_old")


def finite_loss_values(context: str, **losses: torch.Tensor) -> list[float]:
    """The scalar ``losses`` as floats, read with one device sync, or an error if any is NaN/inf.

    :param context: who computed the losses (e.g. ``"the optimizer of Critic"``), for the error.
    :param losses: one-element loss tensors, by name; the names appear in the error.
    :raises FloatingPointError: naming every non-finite loss and its value.
    """
    for name, loss in losses.items():
        if loss.numel() != 1:
            raise ValueError(
                f"{name} must be a scalar loss, got a tensor of shape {tuple(loss.shape)}; "
                "reduce it (e.g. .mean()) before stepping"
            )
    values = _as_floats(list(losses.values()))
    if not all(math.isfinite(value) for value in values):
        named = zip(losses, values, strict=True)
        report = ", ".join(f"{name}={value:.6g}" for name, value in named)
        raise FloatingPointError(
            f"{context}: the loss is not finite ({report}); refusing to step so the parameters "
            "stay intact. Check the rewards and observations for NaN or huge values, and the "
            "learning rate."
        )
    return values


def clear_grads(optimizer: torch.optim.Optimizer) -> None:
    """``optimizer.zero_grad(set_to_none=True)``: every parameter's gradient set to None.

    That is all torch's own ``zero_grad`` does besides opening a profiler range and allocating
    a few containers, which at the sizes of RL networks cost a measurable share of a gradient
    step (3% of a PPO update at the MuJoCo configuration); so for optimizers that keep torch's
    ``zero_grad`` the gradients are cleared here directly (a profiler trace then shows no
    ``Optimizer.zero_grad`` range for them). An optimizer class that overrides ``zero_grad``
    gets its own.
    """
    if type(optimizer).zero_grad is not torch.optim.Optimizer.zero_grad:
        optimizer.zero_grad(set_to_none=True)
        return
    for group in optimizer.param_groups:
        for param in group["params"]:
            param.grad = None


_LEAN_CLIP_DEVICES = ("cpu", "cuda")


def clip_grad_norm(params: list[nn.Parameter], max_norm: float) -> None:
    """Scale the gradients of ``params`` so that their global 2-norm is at most ``max_norm``.

    The result is exactly ``torch.nn.utils.clip_grad_norm_(params, max_norm)``'s: the same
    foreach norms, their norm, ``min(max_norm / (norm + 1e-6), 1)`` and one foreach multiply.
    When every gradient is a plain tensor of one device and dtype (the usual case) these few
    operations are all it runs; torch's function also groups the gradients by device and dtype
    twice and converts every per-tensor norm, which at the sizes of RL networks costs about as
    much as the clipping (measured: 3.7% of a PPO update at the MuJoCo configuration). Other
    cases go to torch's function.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    device, dtype = grads[0].device, grads[0].dtype
    if device.type not in _LEAN_CLIP_DEVICES or not all(
        type(g) is torch.Tensor and g.device == device and g.dtype == dtype for g in grads
    ):
        nn.utils.clip_grad_norm_(params, max_norm=max_norm)
        return
    with torch.no_grad():
        total_norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
        scale = torch.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
        torch._foreach_mul_(grads, scale)


def _as_floats(losses: list[torch.Tensor]) -> list[float]:
    """The one-element ``losses`` as Python floats, read with a single device sync."""
    device = losses[0].device
    if len(losses) == 1 or device.type == "cpu":
        # host tensors need no sync: one ``item`` each is cheaper than stacking them
        return [float(loss.item()) for loss in losses]
    detached = [loss.detach().reshape(()).to(device=device, dtype=torch.float64) for loss in losses]
    values: list[float] = torch.stack(detached).tolist()
    return values


def training_view(batch: Batch, device: torch.device | None = None) -> Batch:
    """The part of a preprocessed on-policy batch that an update reads, as a lean Batch.

    Only observations, infos, actions and the precomputed training targets are kept, so the
    per-minibatch indexing copies no unused columns (``obs_next``, rewards, flags).

    :param device: where the networks run; observations stored as one array move there once
        (keeping their dtype) instead of once per minibatch and network.
    :raises ValueError: for an empty batch, which has nothing to learn from.
    """
    if len(batch) == 0:
        raise ValueError("cannot update on an empty batch; collect some transitions first")
    data = batch.__dict__
    view = {key: data[key] for key in _UPDATE_KEYS if key in data}
    obs = view.get("obs")
    if device is not None and isinstance(obs, np.ndarray) and obs.dtype.kind in "biuf":
        view["obs"] = torch.as_tensor(obs, device=device)
    return batch_of_parsed_values(view)


def iterate_minibatches(view: Batch, batch_size: int | None, repeat: int) -> Iterable[Batch]:
    """Yield shuffled minibatches of ``view`` for ``repeat`` passes over it.

    Each pass gathers ``view`` in the order of one ``np.random.permutation`` and yields
    consecutive slices of it (views, not copies): one gather per pass rather than one per
    minibatch, with the same rows in the same order as ``view.split(batch_size)``.

    :param batch_size: rows per minibatch; None or 0 means the whole batch at once. A shorter
        last minibatch is merged into the previous one.
    :param repeat: number of passes (epochs) over the data.
    """
    if batch_size is not None and batch_size < 0:
        raise ValueError(f"batch_size must be a positive int, 0 or None, got {batch_size}")
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    length = len(view)
    size = batch_size or max(length, 1)
    for _ in range(repeat):
        shuffled = view[np.random.permutation(length)]
        for start, stop in _minibatch_bounds(length, size):
            yield shuffled[start:stop]


def _minibatch_bounds(length: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of consecutive minibatches of ``size`` rows, a shorter last one merged
    into the one before."""
    starts = list(range(0, length, size))
    if len(starts) > 1 and length % size:
        starts.pop()
    return list(zip(starts, [*starts[1:], length], strict=True))


def action_tensor(act: ArrayLike | torch.Tensor, device: torch.device) -> torch.Tensor:
    """Stored actions as a tensor for ``log_prob``: float32 if continuous, integer otherwise."""
    tensor = torch.as_tensor(act, device=device)
    return tensor.float() if tensor.is_floating_point() else tensor


def per_sample(values: torch.Tensor, num_samples: int) -> torch.Tensor:
    """Per-sample values shaped so that a ``(B,)`` weight broadcasts over them.

    Distributions without ``Independent`` give one log-probability per action dimension; they
    become ``(D, B)``, so each dimension is weighted separately, as in the published
    algorithms. Values that are already one per sample, ``(B,)``, are returned as they are:
    the same numbers without two more autograd nodes per gradient step.
    """
    if values.ndim == 1 and len(values) == num_samples:
        return values
    return values.reshape(num_samples, -1).transpose(0, 1)


def exclusive_parameters(modules: Iterable[nn.Module], exclude: nn.Module) -> list[nn.Parameter]:
    """The parameters of ``modules`` that ``exclude`` does not also hold (each listed once)."""
    seen = {id(p) for p in exclude.parameters()}
    result = []
    for module in modules:
        for param in module.parameters():
            if id(param) not in seen:
                seen.add(id(param))
                result.append(param)
    return result


@contextmanager
def frozen(params: list[nn.Parameter]) -> Iterator[None]:
    """Exclude ``params`` from autograd inside the body, then restore them.

    An actor's loss goes through the critic, but only needs the gradient with respect to the
    action: freezing the critic's own parameters skips computing their (discarded) gradients.
    """
    active = [p for p in params if p.requires_grad]
    for param in active:
        param.requires_grad_(False)
    try:
        yield
    finally:
        for param in active:
            param.requires_grad_(True)


__all__ = [
    "action_tensor",
    "exclusive_parameters",
    "finite_loss_values",
    "frozen",
    "iterate_minibatches",
    "per_sample",
    "training_view",
]
