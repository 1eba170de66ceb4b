"""Optimizer and learning-rate-scheduler factories.

Algorithms take a *factory* rather than a torch optimizer, because they decide which parameters
an optimizer covers (an actor, a critic, both) only while they are being built. A factory turns
that module into ``(optimizer, lr_scheduler | None)``::

    optim = AdamOptimizerFactory(lr=3e-4).with_lr_scheduler_factory(
        LRSchedulerFactoryLinear(max_epochs=100, epoch_num_steps=30_000,
                                 collection_step_num_env_steps=2048))
    optimizer, scheduler = optim.create_instances(critic)
"""

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any, Self

import torch
from torch import nn
from torch.optim.lr_scheduler import LambdaLR, LRScheduler

ParamSource = nn.Module | Sequence[nn.Module | nn.Parameter]
"""What an optimizer can be created for: a module, or a list of modules and/or parameters."""

ParamsType = Iterable[torch.Tensor] | Iterable[dict[str, Any]]
"""What a torch optimizer's constructor takes: tensors, or parameter groups (dicts with a
``"params"`` entry and per-group options such as ``"lr"``)."""


def collect_parameters(source: ParamSource) -> list[nn.Parameter]:
    """The parameters of ``source`` in order, each once (modules may share sub-modules).

    :raises TypeError: for anything but a module, a parameter or a sequence of those.
    """
    if isinstance(source, nn.Module):
        return list(source.parameters())
    if not isinstance(source, Sequence):
        raise TypeError(
            f"expected an nn.Module or a list of modules/parameters, got {type(source).__name__}"
        )
    params: dict[int, nn.Parameter] = {}
    for item in source:
        if isinstance(item, nn.Module):
            params.update((id(p), p) for p in item.parameters())
        elif isinstance(item, nn.Parameter):
            params[id(item)] = item
        else:
            raise TypeError(f"expected nn.Module or nn.Parameter items, got {type(item).__name__}")
    return list(params.values())


class LRSchedulerFactory(ABC):
    """Creates the learning-rate scheduler of an optimizer (stepped once per algorithm update)."""

    @abstractmethod
    def create_scheduler(self, optim: torch.optim.Optimizer) -> LRScheduler:
        """Return a scheduler driving ``optim``'s learning rate."""


class _LinearDecay:
    """Multiplier ``max(0, 1 - step / num_steps)``; a class rather than a lambda so it pickles."""

    def __init__(self, num_steps: int) -> None:
        self.num_steps = num_steps

    def __call__(self, step: int) -> float:
        return max(0.0, 1.0 - step / self.num_steps)


class LRSchedulerFactoryLinear(LRSchedulerFactory):
    """Decays the learning rate linearly to 0 over a whole on-policy training run.

    A run has ``max_epochs * ceil(epoch_num_steps / collection_step_num_env_steps)`` update steps
    and the scheduler steps once per update, so the rate reaches 0 at the end of the last epoch
    (and stays there if training continues).

    :param max_epochs: the trainer's ``max_epochs``.
    :param epoch_num_steps: the trainer's ``epoch_num_steps`` (env steps per epoch).
    :param collection_step_num_env_steps: env steps collected before each update.
    """

    def __init__(
        self, max_epochs: int, epoch_num_steps: int, collection_step_num_env_steps: int
    ) -> None:
        for name, value in (
            ("max_epochs", max_epochs),
            ("epoch_num_steps", epoch_num_steps),
            ("collection_step_num_env_steps", collection_step_num_env_steps),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value}")
        self.max_epochs = max_epochs
        self.epoch_num_steps = epoch_num_steps
        self.collection_step_num_env_steps = collection_step_num_env_steps

    @property
    def num_scheduler_steps(self) -> int:
        """Scheduler steps until the learning rate reaches 0."""
        return self.max_epochs * math.ceil(
            self.epoch_num_steps / self.collection_step_num_env_steps
        )

    def create_scheduler(self, optim: torch.optim.Optimizer) -> LRScheduler:
        return LambdaLR(optim, lr_lambda=_LinearDecay(self.num_scheduler_steps))


class OptimizerFactory(ABC):
    """Creates an optimizer (and optionally its learning-rate scheduler) for given parameters."""

    def __init__(self) -> None:
        self.lr_scheduler_factory: LRSchedulerFactory | None = None

    def with_lr_scheduler_factory(self, lr_scheduler_factory: LRSchedulerFactory) -> Self:
        """Also create a scheduler with ``lr_scheduler_factory``; returns this factory."""
        self.lr_scheduler_factory = lr_scheduler_factory
        return self

    def create_instances(
        self, module: ParamSource
    ) -> tuple[torch.optim.Optimizer, LRScheduler | None]:
        """Create the optimizer of ``module``'s parameters and, if configured, its scheduler.

        :param module: a module, or a list of modules and/or parameters (shared ones count once).
        """
        optimizer = self._create_optimizer_for_params(collect_parameters(module))
        scheduler = None
        if self.lr_scheduler_factory is not None:
            scheduler = self.lr_scheduler_factory.create_scheduler(optimizer)
        return optimizer, scheduler

    @abstractmethod
    def _create_optimizer_for_params(self, params: ParamsType) -> torch.optim.Optimizer:
        """Create the torch optimizer of ``params``."""


class TorchOptimizerFactory(OptimizerFactory):
    """Creates any torch optimizer class with fixed keyword arguments.

    :param optim_class: e.g. ``torch.optim.SGD``.
    :param kwargs: passed to its constructor (``lr``, ``momentum``, ...).
    """

    def __init__(self, optim_class: type[torch.optim.Optimizer], **kwargs: Any) -> None:
        super().__init__()
        self.optim_class = optim_class
        self.kwargs = kwargs

    def _create_optimizer_for_params(self, params: ParamsType) -> torch.optim.Optimizer:
        return self.optim_class(params, **self.kwargs)


class AdamOptimizerFactory(OptimizerFactory):
    """Creates ``torch.optim.Adam`` with the given hyper-parameters (torch's defaults).

    The optimizer uses torch's fused Adam kernel when every parameter is a floating-point tensor
    on the CPU or a CUDA device: one kernel per step instead of a dozen small ops per parameter,
    which is 8-15% of a whole SAC update for the small networks of RL (see ``benchmark/train.py``).
    """

    def __init__(
        self,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-08,
        weight_decay: float = 0,
    ) -> None:
        super().__init__()
        self.lr = lr
        self.betas = betas
        self.eps = eps
        self.weight_decay = weight_decay

    def _create_optimizer_for_params(self, params: ParamsType) -> torch.optim.Optimizer:
        listed: list[torch.Tensor | dict[str, Any]] = list(params)
        return torch.optim.Adam(
            listed,  # type: ignore[arg-type]
            lr=self.lr,
            betas=self.betas,
            eps=self.eps,
            weight_decay=self.weight_decay,
            fused=_can_fuse(listed),
        )


def _can_fuse(params: Sequence[torch.Tensor | dict[str, Any]]) -> bool:
    """Whether torch's fused optimizer kernels support all of ``params`` (tensors, not groups)."""
    return bool(params) and all(
        isinstance(p, torch.Tensor) and p.is_floating_point() and p.device.type in ("cpu", "cuda")
        for p in params
    )


class RMSpropOptimizerFactory(OptimizerFactory):
    """Creates ``torch.optim.RMSprop`` with the given hyper-parameters (torch's defaults)."""

    def __init__(
        self,
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-08,
        weight_decay: float = 0,
        momentum: float = 0,
        centered: bool = False,
    ) -> None:
        super().__init__()
        self.lr = lr
        self.alpha = alpha
        self.eps = eps
        self.weight_decay = weight_decay
        self.momentum = momentum
        self.centered = centered

    def _create_optimizer_for_params(self, params: ParamsType) -> torch.optim.Optimizer:
        return torch.optim.RMSprop(
            params,
            lr=self.lr,
            alpha=self.alpha,
            eps=self.eps,
            weight_decay=self.weight_decay,
            momentum=self.momentum,
            centered=self.centered,
        )
