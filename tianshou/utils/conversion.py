"""Small value conversions shared by configuration and statistics code."""

from typing import SupportsFloat


def to_optional_float(x: SupportsFloat | None) -> float | None:
    """Convert ``x`` to a Python float, passing None through.

    Useful for optional settings and statistics that may hold numpy or torch scalars: the result
    is a plain float that prints, compares and serialises like one.

    :param x: a number (int, float, numpy scalar, one-element tensor, ...) or None.
    """
    return None if x is None else float(x)
