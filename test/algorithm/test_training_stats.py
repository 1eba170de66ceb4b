"""TrainingStatsWrapper: attribute fallback, write-through timing, merged losses, logging dict."""

import copy
from dataclasses import asdict, dataclass

import pytest

from tianshou.algorithm.algorithm_base import TrainingStats, TrainingStatsWrapper


@dataclass(kw_only=True)
class InnerStats(TrainingStats):
    loss: float
    shared: float
    note: str = "inner"


@dataclass(kw_only=True, init=False)
class OuterStats(TrainingStatsWrapper):
    icm_loss: float
    shared: float

    def __init__(self, wrapped_stats: TrainingStats, *, icm_loss: float, shared: float) -> None:
        self.icm_loss = icm_loss
        self.shared = shared
        super().__init__(wrapped_stats)


def make_stats() -> tuple[InnerStats, OuterStats]:
    inner = InnerStats(loss=1.5, shared=2.0)
    return inner, OuterStats(inner, icm_loss=0.25, shared=7.0)


def test_attribute_reads_fall_back_to_wrapped_stats() -> None:
    inner, outer = make_stats()
    assert outer.wrapped_stats is inner
    assert outer.loss == 1.5 and outer.note == "inner"
    assert outer.shared == 7.0
    with pytest.raises(AttributeError, match="no_such_field"):
        _ = outer.no_such_field


def test_loss_dict_merges_wrapped_losses_with_own_which_win() -> None:
    _, outer = make_stats()
    assert outer.get_loss_stats_dict() == {"loss": 1.5, "shared": 7.0, "icm_loss": 0.25}


def test_train_time_and_smoothed_loss_write_through() -> None:
    inner, outer = make_stats()
    outer.train_time = 3.0
    outer.smoothed_loss = {"loss": 1.0}
    assert inner.train_time == 3.0 and inner.smoothed_loss == {"loss": 1.0}
    inner.train_time = 4.0
    assert outer.train_time == 4.0
    assert "train_time" not in vars(outer) and "smoothed_loss" not in vars(outer)


def test_asdict_nests_wrapped_stats_and_copies_work() -> None:
    _, outer = make_stats()
    outer.train_time = 2.0
    logged = asdict(outer)
    assert logged["train_time"] == 2.0 and logged["icm_loss"] == 0.25
    assert logged["wrapped_stats"] == {
        "train_time": 2.0,
        "smoothed_loss": {},
        "loss": 1.5,
        "shared": 2.0,
        "note": "inner",
    }
    copied = copy.deepcopy(outer)
    assert copied.get_loss_stats_dict() == outer.get_loss_stats_dict()
    assert copied.wrapped_stats is not outer.wrapped_stats


def test_plain_wrapper_reports_wrapped_losses() -> None:
    wrapper = TrainingStatsWrapper(InnerStats(loss=0.5, shared=1.0))
    assert wrapper.get_loss_stats_dict() == {"loss": 0.5, "shared": 1.0}
    assert isinstance(wrapper, TrainingStats)


def test_wrapped_stats_is_a_read_only_class_attribute() -> None:
    assert isinstance(TrainingStatsWrapper.wrapped_stats, property)
    inner, outer = make_stats()
    with pytest.raises(AttributeError):
        outer.wrapped_stats = inner  # type: ignore[misc]


def test_assigning_a_new_attribute_is_refused() -> None:
    inner, outer = make_stats()
    with pytest.raises(AttributeError, match="new attribute 'new_loss'"):
        outer.new_loss = 1.0
    assert not hasattr(outer, "new_loss") and not hasattr(inner, "new_loss")


def test_assigning_an_existing_attribute_reaches_the_wrapped_stats() -> None:
    inner, outer = make_stats()
    outer.loss = 3.0  # only the wrapped stats have it
    assert inner.loss == outer.loss == 3.0
    assert "loss" not in vars(outer)
    outer.shared = 5.0  # both have it: both change
    assert inner.shared == outer.shared == 5.0
    outer.icm_loss = 0.5  # only the wrapper has it
    assert outer.icm_loss == 0.5 and not hasattr(inner, "icm_loss")
    assert outer.get_loss_stats_dict() == {"loss": 3.0, "shared": 5.0, "icm_loss": 0.5}


def test_attributes_added_to_a_plain_training_stats_are_wrapped_too() -> None:
    inner = TrainingStats(train_time=1.0)
    inner.loss_field = 12.0  # type: ignore[attr-defined]
    outer = OuterStats(inner, icm_loss=42.0, shared=1.0)
    outer.loss_field = 13.0
    assert inner.loss_field == 13.0  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        outer.other_field = 1.0
