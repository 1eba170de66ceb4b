"""Tests of init_linear_orthogonal."""

import torch
from torch import nn

from tianshou.highlevel.module.core import init_linear_orthogonal


def test_linear_layers_at_any_depth_become_orthogonal_with_gain_sqrt2_and_zero_bias() -> None:
    module = nn.Sequential(nn.Linear(6, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 3)))
    init_linear_orthogonal(module)
    for layer in (module[0], module[2][0]):
        weight = layer.weight.detach()
        rows = weight.shape[0]
        torch.testing.assert_close(weight @ weight.T, 2.0 * torch.eye(rows), atol=1e-5, rtol=0)
        assert torch.count_nonzero(layer.bias) == 0


def test_layers_without_bias_and_other_modules_are_left_alone() -> None:
    conv = nn.Conv2d(1, 1, 2)
    before = conv.weight.detach().clone()
    module = nn.Sequential(conv, nn.Linear(3, 3, bias=False))
    init_linear_orthogonal(module)
    torch.testing.assert_close(conv.weight.detach(), before)
    weight = module[1].weight.detach()
    torch.testing.assert_close(weight @ weight.T, 2.0 * torch.eye(3), atol=1e-5, rtol=0)
