"""A readable ``str``/``repr`` for configuration-like objects (factories, callbacks, params).

The high-level API logs the objects an experiment is built from; :class:`ToStringMixin` renders
them as ``ClassName[field1=value1, field2=value2]`` from their instance attributes, so that a
log line shows the configuration without each class writing its own ``__str__``.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_rendering = threading.local()


@contextmanager
def _guard(obj: object) -> Iterator[bool]:
    """Yield whether ``obj`` is being rendered already (a reference cycle), marking it meanwhile."""
    active: set[int] = _rendering.__dict__.setdefault("ids", set())
    if id(obj) in active:
        yield True
        return
    active.add(id(obj))
    try:
        yield False
    finally:
        active.discard(id(obj))


class ToStringMixin:
    """Renders an object as ``ClassName[name=value, ...]`` from its instance attributes.

    Private attributes (leading underscore) are left out unless named by
    :meth:`_tostring_includes`; :meth:`_tostring_excludes` drops public ones (e.g. a large or
    circular reference) and :meth:`_tostring_additional_entries` adds computed entries. Values
    that are themselves ``ToStringMixin`` objects render the same way, nested; a reference
    cycle renders as ``ClassName[<cycle>]``.

    >>> class Point(ToStringMixin):
    ...     def __init__(self) -> None:
    ...         self.x, self.y, self._cache = 1, 2, None
    >>> str(Point())
    'Point[x=1, y=2]'
    """

    def _tostring_excludes(self) -> list[str]:
        """Names of public attributes to leave out."""
        return []

    def _tostring_includes(self) -> list[str]:
        """Names of private attributes to show anyway."""
        return []

    def _tostring_additional_entries(self) -> dict[str, Any]:
        """Extra ``name: value`` entries that are not attributes (e.g. derived values)."""
        return {}

    def _tostring_entries(self) -> dict[str, Any]:
        excludes = set(self._tostring_excludes())
        includes = set(self._tostring_includes())
        entries = {
            name: value
            for name, value in vars(self).items()
            if (not name.startswith("_") or name in includes) and name not in excludes
        }
        entries.update(self._tostring_additional_entries())
        return entries

    def __str__(self) -> str:
        name = type(self).__name__
        with _guard(self) as is_cycle:
            if is_cycle:
                return f"{name}[<cycle>]"
            fields = ", ".join(f"{k}={v}" for k, v in self._tostring_entries().items())
        return f"{name}[{fields}]"

    def __repr__(self) -> str:
        return str(self)
