"""A fused CPU kernel for the quantile Huber loss of the quantile family (QRDQN, IQN, FQF).

Written with torch operations, the loss materialises several ``(B, N, M)`` tensors (pairwise
errors, Huber values, asymmetric weights, their product) and walks them again in the backward
pass; at QRDQN's 64 x 50 x 50 they are 640 KB each, so the loss is bound by memory traffic and
costs more than the networks' forward and backward passes together. This kernel makes one pass
over the pairs, keeping nothing of size ``B x N x M``: it returns the per-sample loss, the
per-sample priority and the gradient of the loss with respect to the predicted quantiles, which
the backward pass only rescales.

The kernel is compiled by numba on first use (``import tianshou`` never imports numba). It is
used for host tensors of float32/float64 when neither the targets nor the fractions need a
gradient; :func:`~tianshou.algorithm.modelfree.qrdqn.quantile_huber_loss` falls back to torch
operations otherwise (e.g. on a GPU).
"""

from typing import Any

import numpy as np
import torch
from torch.autograd.function import FunctionCtx, once_differentiable

from tianshou.utils.lazy_jit import compiled

_HOST_FLOATS = (torch.float32, torch.float64)


def _pairwise_quantile_huber(
    quantiles: np.ndarray,
    targets: np.ndarray,
    taus: np.ndarray,
    loss_out: np.ndarray,
    priority_out: np.ndarray,
    grad_out: np.ndarray,
) -> None:
    """Fill the per-sample loss, priority and quantile gradient of the quantile Huber loss.

    With ``u = targets[b, j] - quantiles[b, i]``, the Huber value (threshold 1) is ``h(u)``,
    the asymmetric weight ``w = 1 - tau_i`` where ``u < 0`` and ``tau_i`` otherwise, and

    * ``loss_out[b] = sum_i sum_j w * h(u) / N``,
    * ``priority_out[b] = sum_i sum_j h(u) / N``,
    * ``grad_out[b, i] = -sum_j w * clamp(u, -1, 1) / N`` (``d loss_out[b] / d quantiles[b, i]``).

    ``taus`` has one row shared by all samples or one row per sample. Sums accumulate in float64.
    A NaN error makes the loss and priority NaN, as with torch's operations.
    """
    num_samples, num_quantiles = quantiles.shape
    num_targets = targets.shape[1]
    shared_taus = taus.shape[0] == 1
    for b in range(num_samples):
        tau_row = 0 if shared_taus else b
        loss_sum = 0.0
        priority_sum = 0.0
        for i in range(num_quantiles):
            quantile = np.float64(quantiles[b, i])
            tau = np.float64(taus[tau_row, i])
            weighted = 0.0
            plain = 0.0
            slope = 0.0
            for j in range(num_targets):
                error = np.float64(targets[b, j]) - quantile
                size = abs(error)
                small = size < 1.0
                huber = 0.5 * error * error if small else size - 0.5
                clipped = error if small else (1.0 if error > 0.0 else -1.0)
                weight = 1.0 - tau if error < 0.0 else tau
                weighted += weight * huber
                plain += huber
                slope += weight * clipped
            loss_sum += weighted
            priority_sum += plain
            grad_out[b, i] = -slope / num_quantiles
        loss_out[b] = loss_sum / num_quantiles
        priority_out[b] = priority_sum / num_quantiles


# Only the inner sums may be reassociated (so they vectorise); NaN and infinity keep their IEEE
# meaning, so a broken target still gives a NaN loss.
_FASTMATH = {"reassoc", "contract", "nsz", "arcp"}


def can_fuse(quantiles_BN: torch.Tensor, target_BM: torch.Tensor, taus_TN: torch.Tensor) -> bool:
    """Whether the fused kernel computes this loss: host float tensors of one dtype, and no
    gradient wanted for the targets or fractions (only the quantiles are differentiated)."""
    dtype = quantiles_BN.dtype
    return (
        dtype in _HOST_FLOATS
        and all(t.device.type == "cpu" and t.dtype == dtype for t in (target_BM, taus_TN))
        and quantiles_BN.device.type == "cpu"
        and not target_BM.requires_grad
        and not taus_TN.requires_grad
    )


class FusedQuantileHuberLoss(torch.autograd.Function):
    """``(loss (B,), priority (B,))`` of the quantile Huber loss, differentiable in the quantiles.

    Call through :func:`fused_quantile_huber_loss`; the priority carries no gradient.
    """

    @staticmethod
    def forward(
        ctx: FunctionCtx, quantiles_BN: torch.Tensor, target_BM: torch.Tensor, taus_TN: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        num_samples = quantiles_BN.shape[0]
        loss_B = quantiles_BN.new_empty(num_samples)
        priority_B = quantiles_BN.new_empty(num_samples)
        grad_BN = torch.empty_like(quantiles_BN, memory_format=torch.contiguous_format)
        # contiguous inputs: one compiled specialisation per dtype, not one per stride layout
        compiled(_pairwise_quantile_huber, fastmath=_FASTMATH)(
            quantiles_BN.detach().contiguous().numpy(),
            target_BM.contiguous().numpy(),
            taus_TN.contiguous().numpy(),
            loss_B.numpy(),
            priority_B.numpy(),
            grad_BN.numpy(),
        )
        ctx.save_for_backward(grad_BN)
        ctx.mark_non_differentiable(priority_B)
        return loss_B, priority_B

    @staticmethod
    @once_differentiable
    def backward(
        ctx: Any, grad_loss_B: torch.Tensor, _grad_priority_B: torch.Tensor
    ) -> tuple[torch.Tensor, None, None]:
        (grad_BN,) = ctx.saved_tensors
        return grad_BN * grad_loss_B.unsqueeze(1), None, None


def fused_quantile_huber_loss(
    quantiles_BN: torch.Tensor, target_BM: torch.Tensor, taus_TN: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fused loss of ``quantiles_BN`` against ``target_BM`` at fractions ``taus_TN`` (one row,
    or one per sample); the inputs must satisfy :func:`can_fuse`."""
    loss_B, priority_B = FusedQuantileHuberLoss.apply(quantiles_BN, target_BM, taus_TN)
    return loss_B, priority_B
