"""Tests of the optimizer factory factories: the optimizers they finally create carry the given
learning rate and hyper-parameters."""

import pytest
import torch
from torch import nn

from tianshou.algorithm.optim import (
    AdamOptimizerFactory,
    RMSpropOptimizerFactory,
    TorchOptimizerFactory,
)
from tianshou.highlevel.params.optim import (
    OptimizerFactoryFactory,
    OptimizerFactoryFactoryAdam,
    OptimizerFactoryFactoryRMSprop,
    OptimizerFactoryFactoryTorch,
)


def optimizer_of(factory_factory: OptimizerFactoryFactory, lr: float) -> torch.optim.Optimizer:
    optimizer, scheduler = factory_factory.create_optimizer_factory(lr).create_instances(
        nn.Linear(3, 2)
    )
    assert scheduler is None
    return optimizer


def test_adam_carries_lr_and_hyper_parameters() -> None:
    factory_factory = OptimizerFactoryFactoryAdam(betas=(0.5, 0.9), eps=1e-5, weight_decay=0.1)
    assert isinstance(factory_factory.create_optimizer_factory(0.01), AdamOptimizerFactory)
    optimizer = optimizer_of(factory_factory, 0.01)
    assert isinstance(optimizer, torch.optim.Adam)
    group = optimizer.param_groups[0]
    assert (group["lr"], group["betas"], group["eps"], group["weight_decay"]) == (
        0.01,
        (0.5, 0.9),
        1e-5,
        0.1,
    )


def test_rmsprop_carries_lr_and_hyper_parameters() -> None:
    factory_factory = OptimizerFactoryFactoryRMSprop(
        alpha=0.9, eps=1e-5, weight_decay=0.2, momentum=0.3, centered=True
    )
    assert isinstance(factory_factory.create_optimizer_factory(7e-4), RMSpropOptimizerFactory)
    optimizer = optimizer_of(factory_factory, 7e-4)
    assert isinstance(optimizer, torch.optim.RMSprop)
    group = optimizer.param_groups[0]
    assert (group["lr"], group["alpha"], group["eps"]) == (7e-4, 0.9, 1e-5)
    assert (group["weight_decay"], group["momentum"], group["centered"]) == (0.2, 0.3, True)


def test_torch_passes_lr_and_keyword_arguments() -> None:
    factory_factory = OptimizerFactoryFactoryTorch(torch.optim.SGD, momentum=0.9)
    assert isinstance(factory_factory.create_optimizer_factory(0.1), TorchOptimizerFactory)
    optimizer = optimizer_of(factory_factory, 0.1)
    assert isinstance(optimizer, torch.optim.SGD)
    assert (optimizer.param_groups[0]["lr"], optimizer.param_groups[0]["momentum"]) == (0.1, 0.9)


def test_torch_rejects_a_learning_rate_keyword() -> None:
    with pytest.raises(ValueError, match="learning rate"):
        OptimizerFactoryFactoryTorch(torch.optim.SGD, lr=0.1)


def test_default_is_adam_with_torch_defaults() -> None:
    default = OptimizerFactoryFactory.default()
    assert isinstance(default, OptimizerFactoryFactoryAdam)
    group = optimizer_of(default, 3e-4).param_groups[0]
    assert (group["lr"], group["betas"], group["eps"]) == (3e-4, (0.9, 0.999), 1e-8)


def test_str_shows_hyper_parameters() -> None:
    assert str(OptimizerFactoryFactoryRMSprop(eps=1e-5)).startswith(
        "OptimizerFactoryFactoryRMSprop[alpha=0.99, eps=1e-05"
    )
