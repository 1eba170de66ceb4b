"""Context managers that put torch modules and policies into the mode a phase of training needs."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Policy


@contextmanager
def torch_train_mode(module: nn.Module, enabled: bool = True) -> Iterator[None]:
    """Run the body with ``module`` in train mode (``enabled``) or eval mode, then restore its mode.

    Collectors run the policy in eval mode (dropout off, batch-norm statistics frozen) and updates
    run it in train mode; restoring the previous mode lets the two nest safely.
    """
    was_training = module.training
    module.train(enabled)
    try:
        yield
    finally:
        module.train(was_training)


@contextmanager
def policy_within_training_step(policy: "Policy", enabled: bool = True) -> Iterator[None]:
    """Mark the body as part of a training step, so the policy uses its training-time behaviour.

    Inside, ``policy.is_within_training_step`` is ``enabled``: exploration settings such as
    ``eps_training`` apply and ``Algorithm.update`` is allowed to run. The previous value is
    restored on exit.
    """
    previous = policy.is_within_training_step
    policy.is_within_training_step = enabled
    try:
        yield
    finally:
        policy.is_within_training_step = previous


def torch_device(module: nn.Module) -> torch.device:
    """The device of ``module``'s first parameter (CPU for a module without parameters)."""
    for parameter in module.parameters():
        return parameter.device
    return torch.device("cpu")
