import numpy as np

from tianshou.utils.logging import set_numerical_fields_to_precision


def test_rounds_numbers_and_keeps_everything_else() -> None:
    arr = np.ones(2)
    nested = {"x": 0.123456}
    data = {
        "loss": 0.123456,
        "np_loss": np.float64(2.718281),
        "steps": 7,
        "flag": True,
        "name": "dqn",
        "arr": arr,
        "nested": nested,
    }
    rounded = set_numerical_fields_to_precision(data, precision=2)
    assert rounded == {
        "loss": 0.12,
        "np_loss": 2.72,
        "steps": 7,
        "flag": True,
        "name": "dqn",
        "arr": arr,
        "nested": nested,
    }
    assert rounded["flag"] is True and rounded["arr"] is arr
    assert data["loss"] == 0.123456  # the input is left alone


def test_default_precision_is_three_decimals() -> None:
    assert set_numerical_fields_to_precision({"v": 1.23456}) == {"v": 1.235}
