"""Progress-bar settings shared by the trainers, and a stand-in used when no bar is wanted."""

from typing import Any, Self

tqdm_config: dict[str, Any] = {"dynamic_ncols": True, "ascii": True}
"""Keyword arguments every trainer progress bar is created with: width follows the terminal,
and plain ASCII keeps logs readable where the terminal has no Unicode block characters."""


class DummyTqdm:
    """Counts progress like a ``tqdm`` bar but draws nothing.

    Trainers use it when ``show_progress`` is False, so the epoch loop needs no branches.

    :param total: the number of units the (invisible) bar would count to.
    """

    def __init__(self, total: int | float | None = None, **kwargs: Any) -> None:
        self.total = total
        self.n: int | float = 0

    def set_postfix(self, *args: Any, **kwargs: Any) -> None:
        """Ignore the postfix a real bar would show."""

    def set_description(self, *args: Any, **kwargs: Any) -> None:
        """Ignore the description a real bar would show."""

    def update(self, n: int | float = 1) -> None:
        """Advance the count by ``n``."""
        self.n += n

    def close(self) -> None:
        """Nothing to release."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *args: object) -> None:
        self.close()


def progress_bar(enabled: bool, total: int | float | None, **kwargs: Any) -> Any:
    """A ``tqdm`` bar with :data:`tqdm_config` when ``enabled``, else a :class:`DummyTqdm`
    that counts the same and draws nothing (tqdm is imported only when a bar is drawn).

    :param enabled: whether to draw the bar.
    :param total: the number of units the bar counts to.
    :param kwargs: further ``tqdm`` arguments (``desc``, ``unit``, ...).
    """
    if not enabled:
        return DummyTqdm(total=total)
    import tqdm

    return tqdm.tqdm(total=total, **tqdm_config, **kwargs)
