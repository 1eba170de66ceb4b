"""Search spaces: the hyper-parameters a search varies, each with its range or choices.

Values are named like the options of the ``*_hl.py`` example scripts (``lr``, ``gamma``,
``batch_size``, ``hidden_sizes``, ...); :class:`~tianshou.highlevel.hpo.binding.AlgorithmBinding`
says how each name configures an experiment builder. A dimension may be *conditional*: it is
sampled only when an earlier dimension took one of the given values (e.g. SAC's ``alpha_lr`` only
when ``auto_alpha`` is True), which Optuna's define-by-run sampling expresses directly.

>>> space = SearchSpace([
...     FloatDimension("lr", 1e-4, 1e-2, log=True),
...     CategoricalDimension("auto_alpha", [True, False]),
...     FloatDimension("alpha_lr", 1e-4, 1e-3, log=True, condition=("auto_alpha", (True,))),
... ])
>>> space.names
['lr', 'auto_alpha', 'alpha_lr']
"""

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import optuna

Condition = tuple[str, tuple[Any, ...]]
"""``(name, values)``: a dimension is sampled only if the dimension ``name`` (declared earlier)
was sampled and took one of ``values``."""

_OPTUNA_SCALARS = (type(None), bool, int, float, str)


@dataclass(frozen=True)
class Dimension(ABC):
    """One hyper-parameter of a search space.

    :param name: the value's name (an option name of the ``*_hl.py`` scripts).
    :param condition: sample this dimension only when another one took certain values
        (None: always); keyword-only.
    """

    name: str
    condition: Condition | None = field(default=None, kw_only=True)

    @abstractmethod
    def suggest(self, trial: "optuna.Trial") -> Any:
        """Ask ``trial`` for this dimension's value."""


@dataclass(frozen=True)
class FloatDimension(Dimension):
    """A real value in ``[low, high]``.

    :param low: the smallest value.
    :param high: the largest value.
    :param log: sample on a log scale (for learning rates and other scales; needs ``low > 0``).
    :param step: sample only ``low + i * step`` (None: any value); not with ``log``.
    """

    low: float
    high: float
    log: bool = False
    step: float | None = None

    def __post_init__(self) -> None:
        _check_range(self.name, self.low, self.high, self.log)
        if self.step is not None and (self.log or self.step <= 0):
            raise ValueError(f"{self.name}: step must be positive and cannot be combined with log")

    def suggest(self, trial: "optuna.Trial") -> float:
        return trial.suggest_float(self.name, self.low, self.high, log=self.log, step=self.step)


@dataclass(frozen=True)
class IntDimension(Dimension):
    """An integer in ``[low, high]``.

    :param low: the smallest value.
    :param high: the largest value.
    :param log: sample on a log scale (e.g. for widths; needs ``low > 0``).
    :param step: sample only ``low + i * step``; must be 1 with ``log``.
    """

    low: int
    high: int
    log: bool = False
    step: int = 1

    def __post_init__(self) -> None:
        bounds = (self.low, self.high, self.step)
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in bounds):
            raise TypeError(f"{self.name}: low, high and step must be integers, got {bounds}")
        _check_range(self.name, self.low, self.high, self.log)
        if self.step < 1 or (self.log and self.step != 1):
            raise ValueError(f"{self.name}: step must be >= 1, and 1 with log")

    def suggest(self, trial: "optuna.Trial") -> int:
        return trial.suggest_int(self.name, self.low, self.high, log=self.log, step=self.step)


@dataclass(frozen=True)
class CategoricalDimension(Dimension):
    """One of a few choices: scalars (None, bool, int, float, str) or sequences of integers
    (e.g. ``hidden_sizes`` choices ``(64, 64)``), which Optuna stores by their text
    (``"64-64"``) and which come back as tuples.

    :param choices: the choices (at least one, all different).
    """

    choices: Sequence[Any]

    def __post_init__(self) -> None:
        normalised = tuple(_normalise_choice(self.name, c) for c in self.choices)
        if not normalised:
            raise ValueError(f"{self.name}: a categorical dimension needs at least one choice")
        labels = [_label(c) for c in normalised]
        if len(set(labels)) != len(labels):
            raise ValueError(f"{self.name}: the choices {list(normalised)} are not all different")
        object.__setattr__(self, "choices", normalised)  # frozen: set once, normalised

    def suggest(self, trial: "optuna.Trial") -> Any:
        by_label = {_label(c): c for c in self.choices}
        return by_label[trial.suggest_categorical(self.name, list(by_label))]


def _check_range(name: str, low: float, high: float, log: bool) -> None:
    if not low <= high:
        raise ValueError(f"{name}: low ({low}) must not exceed high ({high})")
    if log and low <= 0:
        raise ValueError(f"{name}: a log-scale range needs low > 0, got {low}")


def _normalise_choice(name: str, choice: Any) -> Any:
    """Scalars as they are, sequences of integers as tuples; anything else is an error, since
    Optuna's storage can hold only scalars."""
    if isinstance(choice, _OPTUNA_SCALARS):
        return choice
    if isinstance(choice, Sequence) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in choice
    ):
        return tuple(choice)
    raise TypeError(
        f"{name}: choice {choice!r} is neither a scalar (None, bool, int, float, str) nor a "
        f"sequence of integers"
    )


def _label(choice: Any) -> Any:
    """What Optuna stores for a choice: scalars themselves, integer tuples as ``"64-64"``."""
    if isinstance(choice, tuple):
        return "-".join(str(v) for v in choice)
    return choice


class SearchSpace:
    """The dimensions of a search, sampled in the order given.

    :param dimensions: the dimensions; names must be unique, and a condition must name a
        dimension declared before the conditional one.
    """

    def __init__(self, dimensions: Sequence[Dimension]) -> None:
        seen: dict[str, Dimension] = {}
        for dimension in dimensions:
            if dimension.name in seen:
                raise ValueError(f"the dimension {dimension.name!r} is declared twice")
            if dimension.condition is not None and dimension.condition[0] not in seen:
                raise ValueError(
                    f"{dimension.name!r} is conditional on {dimension.condition[0]!r}, which is "
                    f"not declared before it"
                )
            seen[dimension.name] = dimension
        self.dimensions = list(dimensions)

    @property
    def names(self) -> list[str]:
        """The names of all dimensions, in sampling order."""
        return [d.name for d in self.dimensions]

    def sample(self, trial: "optuna.Trial") -> dict[str, Any]:
        """The values of one trial: every dimension whose condition holds, by name.

        :param trial: the Optuna trial to ask (a :class:`optuna.trial.FixedTrial` replays
            given values).
        """
        values: dict[str, Any] = {}
        for dimension in self.dimensions:
            if dimension.condition is not None:
                parent, allowed = dimension.condition
                if parent not in values or values[parent] not in allowed:
                    continue
            values[dimension.name] = dimension.suggest(trial)
        return values

    def __repr__(self) -> str:
        return f"SearchSpace({self.dimensions!r})"


def format_hyperparameters(values: Mapping[str, Any] | None) -> str:
    """``values`` as one line, the way every output of a search spells them: floats to four
    significant digits, sequences (``hidden_sizes``) as lists."""
    if values is None:
        return "-"
    return ", ".join(f"{name}={_format_value(value)}" for name, value in values.items())


def _format_value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_format_value(v) for v in value) + "]"
    return str(value)
