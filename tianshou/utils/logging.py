"""Helpers for writing statistics to text logs in a readable form."""

from numbers import Real
from typing import Any


def set_numerical_fields_to_precision(data: dict[str, Any], precision: int = 3) -> dict[str, Any]:
    """Return a copy of ``data`` whose real-number values are rounded to ``precision`` decimals.

    Meant for log lines and progress-bar text, where ``0.30000000000000004`` hides what matters.
    Other values (strings, arrays, nested dicts, booleans) are copied unchanged.

    >>> set_numerical_fields_to_precision({"loss": 0.123456, "name": "dqn", "step": 7}, 2)
    {'loss': 0.12, 'name': 'dqn', 'step': 7}

    :param data: the mapping to round; it is not modified.
    :param precision: number of decimals to keep.
    """
    return {
        key: round(value, precision) if _is_rounded(value) else value for key, value in data.items()
    }


def _is_rounded(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)
