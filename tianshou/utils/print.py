"""Readable printing of the statistics dataclasses (collect, epoch and training stats).

A stats record nests other records and numpy arrays; ``print(stats)`` shows them on one long
line. The mixin prints the record as an indented dict under a header naming its class, the way
one reads it in a notebook or a log.
"""

from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from pprint import pformat
from typing import Any


class DataclassPPrintMixin:
    """Adds ``pprint_asdict``/``pprints_asdict`` to a dataclass."""

    def pprints_asdict(self, exclude_fields: Sequence[str] | None = None, indent: int = 4) -> str:
        """The record as ``"<ClassName>"``, a rule, then its fields as a pretty-printed dict.

        :param exclude_fields: top-level field names to leave out (e.g. bulky arrays).
        :param indent: indentation of the nested levels of the dict.
        """
        if not is_dataclass(self) or isinstance(self, type):
            raise TypeError(f"{type(self).__name__} is not a dataclass instance")
        fields: dict[str, Any] = asdict(self)
        for name in exclude_fields or ():
            fields.pop(name, None)
        header = type(self).__name__
        body = pformat(fields, indent=indent, sort_dicts=False)
        return f"{header}\n{'-' * max(len(header), 40)}\n{body}"

    def pprint_asdict(self, exclude_fields: Sequence[str] | None = None, indent: int = 4) -> None:
        """Print :meth:`pprints_asdict` (same arguments)."""
        print(self.pprints_asdict(exclude_fields=exclude_fields, indent=indent))
