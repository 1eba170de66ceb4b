"""One way to announce deprecated API, so that deprecations look and filter alike everywhere."""

import warnings


def deprecation(msg: str) -> None:
    """Warn with a ``DeprecationWarning`` attributed to the line that calls this function.

    Call it from the deprecated code path, saying what replaces it; the warning then names that
    call site, and warning filters on ``DeprecationWarning`` apply to it.

    :param msg: what is deprecated and what to use instead.
    """
    warnings.warn(msg, category=DeprecationWarning, stacklevel=2)
