"""Context managers that put torch modules and policies into the mode a phase of training needs
(or torch into a chosen thread count), and small torch helpers (a module's device, a uniform
distribution over an action space)."""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeAlias

import torch
from gymnasium import spaces
from torch import nn
from torch.distributions import Categorical, Uniform

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


DEFAULT_TORCH_THREADS = 1
"""The intra-op thread count the example scripts, runners and high-level experiments choose
unless told otherwise: RL networks are small, so one thread does an update about as fast as
many on an idle machine, and many times faster on a busy one (see ``docs/performance.md``)."""


@contextmanager
def torch_threads(num_threads: int | None) -> Iterator[int]:
    """Run the body with torch's intra-op thread count set to ``num_threads``, then restore the
    count it had; yields the count in force.

    The library itself never changes the thread count; runners that own the process (scripts,
    experiments) use this to make their choice deliberate and scoped, and log it.

    :param num_threads: the count for the body (at least 1), or None to leave torch's own
        setting (one thread per core by default) as it is.
    :raises ValueError: for a count below 1.
    """
    previous = torch.get_num_threads()
    if num_threads is None:
        yield previous
        return
    if num_threads < 1:
        raise ValueError(f"torch_threads needs at least 1 thread, got {num_threads}")
    torch.set_num_threads(num_threads)
    try:
        yield num_threads
    finally:
        torch.set_num_threads(previous)


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


TDevice: TypeAlias = str | torch.device
"""A torch device, or its name (e.g. ``"cpu"``, ``"cuda:0"``)."""


def torch_device(module: nn.Module) -> torch.device:
    """The device of ``module``'s first parameter (CPU for a module without parameters)."""
    for parameter in module.parameters():
        return parameter.device
    return torch.device("cpu")


def create_uniform_action_dist(
    action_space: spaces.Box | spaces.Discrete, batch_size: int = 1
) -> Uniform | Categorical:
    """A distribution drawing ``batch_size`` uniformly random actions at once.

    A reference for the behaviour of an untrained policy, e.g. for maximum-entropy baselines or
    for sampling random actions as torch tensors.

    :param action_space: a bounded ``Box`` (giving a ``Uniform`` over ``[low, high]`` with batch
        shape ``(batch_size, *action_space.shape)``) or a ``Discrete`` space (giving a
        ``Categorical`` with equal probabilities over its ``n`` actions, batch shape
        ``(batch_size,)``).
    :param batch_size: the number of actions drawn by one ``sample()``.
    """
    if isinstance(action_space, spaces.Box):
        if not action_space.is_bounded():
            raise ValueError(
                "create_uniform_action_dist needs a bounded Box action space, got "
                f"low={action_space.low}, high={action_space.high}"
            )
        shape = (batch_size, *action_space.shape)
        low = torch.as_tensor(action_space.low, dtype=torch.float32).expand(shape)
        high = torch.as_tensor(action_space.high, dtype=torch.float32).expand(shape)
        return Uniform(low, high)
    if isinstance(action_space, spaces.Discrete):
        return Categorical(logits=torch.zeros(batch_size, int(action_space.n)))
    raise ValueError(
        "create_uniform_action_dist supports Box and Discrete action spaces, got "
        f"{type(action_space).__name__}"
    )
