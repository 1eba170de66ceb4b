"""The entropy coefficient ``alpha`` of the SAC family (SAC, discrete SAC, REDQ, recurrent SAC,
CQL): the weight of the policy's entropy in their losses, fixed (:class:`FixedAlpha`) or learned so
that the entropy tracks a target (:class:`AutoAlpha`).

The classes are published under :mod:`tianshou.algorithm.modelfree.sac` and import from there too.
"""

from abc import ABC, abstractmethod
from collections.abc import Callable

import torch
from torch import nn

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.entropy_regularised import entropy_coefficient_loss
from tianshou.algorithm.optim import OptimizerFactory


class Alpha(ABC):
    """The entropy coefficient of SAC: its current value and how it learns.

    An algorithm weights the entropy in its losses by :attr:`coefficient` and, once per actor
    step, takes the coefficient's :meth:`loss` at the policy's entropy and minimises it with
    :attr:`optim` itself::

        alpha_loss = alpha.loss(entropy)
        if alpha_loss is not None and alpha.optim is not None:
            alpha.optim.step(alpha_loss)

    :meth:`update` does both in one call, and :attr:`value` reads the coefficient as a float.
    Learned coefficients are also ``nn.Module`` s (like :class:`AutoAlpha`), so that their
    parameters are part of the algorithm's state dict.

    A subclass implements :attr:`value` and :meth:`update` (the published interface, enough on
    its own: the coefficient is then :attr:`value`, and it learns inside :meth:`update`, see
    :meth:`loss`); one that learns by gradient steps also overrides :meth:`loss` and sets
    :attr:`optim`, as :class:`AutoAlpha` does.
    """

    optim: "Algorithm.Optimizer | None" = None
    """The optimizer that minimises :meth:`loss` (None: the coefficient is fixed, or learns
    inside :meth:`update`)."""

    @staticmethod
    def from_float_or_instance(alpha: "float | Alpha") -> "Alpha":
        """``alpha`` itself if it is an :class:`Alpha`, else a :class:`FixedAlpha` of the float.

        :raises TypeError: for anything else (booleans included).
        """
        if isinstance(alpha, Alpha):
            return alpha
        if isinstance(alpha, int | float) and not isinstance(alpha, bool):
            return FixedAlpha(float(alpha))
        raise TypeError(f"alpha must be a float or an Alpha (e.g. AutoAlpha), got {alpha!r}")

    @property
    @abstractmethod
    def value(self) -> float:
        """The current coefficient, as a float (reading a learned one syncs its device)."""

    @abstractmethod
    def update(self, entropy: torch.Tensor) -> float | None:
        """Adapt the coefficient to the policy's entropy (with an :attr:`optim`: one step of it
        on :meth:`loss`).

        :param entropy: per-sample entropy estimates ``-log pi(a|s)`` (detached).
        :return: the coefficient's loss, or None if it does not learn.
        """

    @property
    def coefficient(self) -> float | torch.Tensor:
        """The coefficient by which the losses weight the entropy: a float, or for a learned
        coefficient a 0-dim tensor on its parameter's device, detached (the losses that use it
        do not train it) and read without a device sync."""
        return self.value

    def loss(self, entropy: torch.Tensor) -> torch.Tensor | None:
        """The coefficient's loss at the policy's entropy, for the caller to minimise with
        :attr:`optim`; None if the coefficient does not learn.

        This default serves subclasses of the published interface, which learn inside
        :meth:`update` and have no :attr:`optim`: it calls :meth:`update` and returns the loss
        it reports, the step already taken.

        :param entropy: per-sample entropy estimates ``-log pi(a|s)``, or exact entropies.
        """
        loss = self.update(entropy)
        return None if loss is None else torch.tensor(loss)


class FixedAlpha(Alpha):
    """A constant entropy coefficient.

    :param alpha: the coefficient, >= 0.
    """

    def __init__(self, alpha: float) -> None:
        if alpha < 0:
            raise ValueError(f"alpha must be non-negative, got {alpha}")
        self._value = float(alpha)

    @property
    def value(self) -> float:
        return self._value

    def update(self, entropy: torch.Tensor) -> None:
        """A fixed coefficient does not learn."""
        return None

    def loss(self, entropy: torch.Tensor) -> None:
        """A fixed coefficient has no loss: there is nothing to step."""
        return None


class AutoAlpha(nn.Module, Alpha):
    """An entropy coefficient learned so that the policy's entropy tracks a target.

    It minimises :func:`~tianshou.algorithm.modelfree.entropy_regularised.entropy_coefficient_loss`
    in ``log(alpha)``: alpha grows while the entropy is below the target and shrinks while it is
    above.

    :param target_entropy: the desired entropy, customarily ``-action_dim``.
    :param log_alpha: the initial ``log(alpha)``.
    :param optim: the factory of the optimizer of ``log_alpha`` (no LR scheduler). An algorithm
        given this coefficient replaces the optimizer by one it checkpoints, see
        :func:`alpha_registered_with`.
    """

    optim: "Algorithm.Optimizer"

    def __init__(
        self, target_entropy: float, log_alpha: float | torch.Tensor, optim: OptimizerFactory
    ) -> None:
        super().__init__()
        self._target_entropy = float(target_entropy)
        self._log_alpha = nn.Parameter(torch.tensor(float(log_alpha)))
        self._optim_factory = optim
        torch_optimizer, lr_scheduler = optim.create_instances(self)
        if lr_scheduler is not None:
            raise ValueError("AutoAlpha does not support learning-rate schedulers")
        self.optim = Algorithm.Optimizer(torch_optimizer, self)

    @property
    def target_entropy(self) -> float:
        return self._target_entropy

    @property
    def optim_factory(self) -> OptimizerFactory:
        """The factory the optimizer of ``log_alpha`` was (and is again, by an algorithm)
        created with."""
        return self._optim_factory

    @property
    def value(self) -> float:
        return float(self.coefficient.item())

    @property
    def coefficient(self) -> torch.Tensor:
        """``exp(log_alpha)``, detached: a 0-dim tensor on the parameter's device."""
        return self._log_alpha.detach().exp()

    def loss(self, entropy: torch.Tensor) -> torch.Tensor:
        """The loss to minimise with :attr:`optim` (its gradient flows into ``log_alpha`` only)."""
        return entropy_coefficient_loss(self._log_alpha, entropy, self._target_entropy)

    def update(self, entropy: torch.Tensor) -> float:
        """One step of :attr:`optim` on :meth:`loss`; returns the loss (before the step)."""
        (loss,) = self.optim.step_with_loss_values(self.loss(entropy))
        return loss


def alpha_registered_with(
    create_optimizer: Callable[[nn.Module, OptimizerFactory], Algorithm.Optimizer],
    alpha: float | Alpha,
) -> Alpha:
    """``alpha`` as an :class:`Alpha`; a learned coefficient's optimizer is recreated by
    ``create_optimizer``, so that its state is saved and restored with the algorithm's checkpoints.

    :param create_optimizer: the owning algorithm's ``_create_optimizer`` (SAC, discrete SAC,
        REDQ, recurrent SAC, CQL).
    :param alpha: a fixed coefficient or an :class:`Alpha` instance.
    """
    coefficient = Alpha.from_float_or_instance(alpha)
    if isinstance(coefficient, AutoAlpha):
        coefficient.optim = create_optimizer(coefficient, coefficient.optim_factory)
    return coefficient
