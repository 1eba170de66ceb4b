"""The fused CPU kernel of the quantile Huber loss gives what the torch formulation gives."""

import pytest
import torch

from tianshou.algorithm.modelfree._quantile_huber_kernel import (
    can_fuse,
    fused_quantile_huber_loss,
)
from tianshou.algorithm.modelfree.qrdqn import quantile_huber_loss


def torch_path(
    quantiles: torch.Tensor, targets: torch.Tensor, taus: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Loss, priority and quantile gradient through the torch operations (fractions that need a
    gradient keep ``quantile_huber_loss`` off the fused kernel)."""
    quantiles = quantiles.detach().requires_grad_()
    loss, priority = quantile_huber_loss(quantiles, targets, taus.detach().requires_grad_())
    (grad,) = torch.autograd.grad(loss.sum(), quantiles)
    return loss.detach(), priority, grad


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    ("batch", "num", "num_targets", "per_row"),
    [(64, 50, 50, False), (16, 8, 8, True), (3, 5, 7, True)],
)
def test_fused_kernel_matches_the_torch_operations(
    dtype: torch.dtype, batch: int, num: int, num_targets: int, per_row: bool
) -> None:
    generator = torch.Generator().manual_seed(batch + num)
    quantiles = (2 * torch.randn(batch, num, generator=generator, dtype=dtype)).requires_grad_()
    targets = 2 * torch.randn(batch, num_targets, generator=generator, dtype=dtype)
    taus = torch.rand(batch if per_row else 1, num, generator=generator, dtype=dtype)
    assert can_fuse(quantiles, targets, taus)
    loss, priority = fused_quantile_huber_loss(quantiles, targets, taus)
    (grad,) = torch.autograd.grad((loss * torch.arange(batch, dtype=dtype)).sum(), quantiles)
    want_loss, want_priority, want_grad = torch_path(quantiles, targets, taus)
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {}
    torch.testing.assert_close(loss.detach(), want_loss, **tolerance)
    torch.testing.assert_close(priority, want_priority, **tolerance)
    torch.testing.assert_close(
        grad, want_grad * torch.arange(batch, dtype=dtype)[:, None], **tolerance
    )
    assert not priority.requires_grad


def test_errors_exactly_at_the_threshold_and_zero() -> None:
    # u = 1 and u = -1 sit on the Huber threshold, u = 0 takes the weight tau
    quantiles = torch.tensor([[0.0]], requires_grad=True)
    targets = torch.tensor([[1.0, -1.0, 0.0]])
    loss, priority = fused_quantile_huber_loss(quantiles, targets, torch.tensor([[0.3]]))
    loss.sum().backward()
    assert loss.item() == pytest.approx(0.3 * 0.5 + 0.7 * 0.5)
    assert priority.item() == pytest.approx(1.0)
    assert quantiles.grad is not None
    assert quantiles.grad.item() == pytest.approx(-(0.3 * 1.0 + 0.7 * -1.0))


def test_a_nan_target_makes_its_sample_nan() -> None:
    quantiles = torch.zeros(2, 3)
    targets = torch.tensor([[0.5, float("nan")], [0.5, 0.2]])
    loss, priority = fused_quantile_huber_loss(quantiles, targets, torch.full((1, 3), 0.5))
    assert loss[0].isnan() and priority[0].isnan()
    assert loss[1].isfinite() and priority[1].isfinite()


def test_double_backward_is_refused() -> None:
    quantiles = torch.randn(2, 3, requires_grad=True)
    loss, _ = fused_quantile_huber_loss(quantiles, torch.randn(2, 3), torch.full((1, 3), 0.5))
    (grad,) = torch.autograd.grad(loss.sum(), quantiles, create_graph=True)
    with pytest.raises(RuntimeError):
        grad.sum().backward()


@pytest.mark.parametrize(
    ("targets", "taus"),
    [
        (torch.zeros(2, 3, requires_grad=True), torch.full((1, 3), 0.5)),
        (torch.zeros(2, 3), torch.full((1, 3), 0.5, requires_grad=True)),
        (torch.zeros(2, 3, dtype=torch.float64), torch.full((1, 3), 0.5)),
        (torch.zeros(2, 3, dtype=torch.float16), torch.full((1, 3), 0.5)),
    ],
)
def test_inputs_the_kernel_does_not_take(targets: torch.Tensor, taus: torch.Tensor) -> None:
    assert not can_fuse(torch.zeros(2, 3), targets, taus)


def test_fraction_gradients_still_flow_through_the_torch_operations() -> None:
    taus = torch.full((1, 3), 0.5, requires_grad=True)
    loss, _ = quantile_huber_loss(torch.zeros(2, 3), torch.tensor([[1.0], [-2.0]]), taus)
    loss.sum().backward()
    assert taus.grad is not None and taus.grad.abs().sum() > 0


def test_strided_inputs_give_the_same_loss_as_contiguous_ones() -> None:
    generator = torch.Generator().manual_seed(3)
    wide = torch.randn(4, 10, generator=generator, requires_grad=True)
    targets = torch.randn(6, 4, generator=generator).T  # a transposed (4, 6) view
    taus = torch.rand(1, 10, generator=generator)[:, ::2]
    loss, priority = fused_quantile_huber_loss(wide[:, ::2], targets, taus)
    want_loss, want_priority, _ = torch_path(wide[:, ::2].contiguous(), targets.contiguous(), taus)
    torch.testing.assert_close(loss.detach(), want_loss)
    torch.testing.assert_close(priority, want_priority)
    loss.sum().backward()
    assert wide.grad is not None and wide.grad[:, 1::2].abs().sum() == 0
