"""deprecation(): a DeprecationWarning attributed to the calling line."""

import warnings

import pytest

from tianshou.utils import deprecation


def test_deprecation_warns_at_callers_line() -> None:
    with pytest.warns(DeprecationWarning, match="use new_api instead") as record:
        deprecation("old_api is deprecated; use new_api instead")
    assert len(record) == 1
    assert record[0].filename == __file__


def test_deprecation_respects_warning_filters() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", DeprecationWarning)
        deprecation("silenced")
    assert caught == []
