import pytest

from benchmark.update_rate_recurrent import (
    CASES,
    HIDDEN,
    equal_parameter_width,
    parameter_count,
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_equal_parameter_width_is_the_smallest_that_matches(name: str) -> None:
    build = CASES[name][0]
    recurrent = parameter_count(build(True, HIDDEN))
    width = equal_parameter_width(build, recurrent)
    assert width > HIDDEN  # an LSTM of width 64 holds far more than two dense layers of 64
    assert parameter_count(build(False, width)) >= recurrent
    assert parameter_count(build(False, width - 1)) < recurrent


def test_equal_parameter_width_keeps_the_width_already_large_enough() -> None:
    build = CASES["ppo"][0]
    assert equal_parameter_width(build, 1) == HIDDEN
