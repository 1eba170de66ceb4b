from dataclasses import dataclass, field

import numpy as np
import pytest

from tianshou.algorithm.algorithm_base import TrainingStats
from tianshou.data import CollectStats, SequenceSummaryStats
from tianshou.utils.print import DataclassPPrintMixin


@dataclass(kw_only=True)
class _Record(DataclassPPrintMixin):
    loss: float = 0.5
    inner: SequenceSummaryStats = field(
        default_factory=lambda: SequenceSummaryStats.from_sequence([1.0, 3.0])
    )
    big: np.ndarray = field(default_factory=lambda: np.zeros(3))


def test_pprints_asdict_has_header_and_nested_fields_in_declaration_order() -> None:
    text = _Record().pprints_asdict()
    lines = text.splitlines()
    assert lines[0] == "_Record"
    assert set(lines[1]) == {"-"}
    assert text.index("'loss'") < text.index("'inner'") < text.index("'big'")
    assert "'mean': 2.0" in text


def test_exclude_fields_drops_top_level_fields_and_ignores_unknown_names() -> None:
    text = _Record().pprints_asdict(exclude_fields=["big", "not_a_field"])
    assert "'big'" not in text
    assert "'loss'" in text


def test_pprint_asdict_prints_the_same_text(capsys: pytest.CaptureFixture[str]) -> None:
    record = _Record()
    record.pprint_asdict(indent=2)
    assert capsys.readouterr().out == record.pprints_asdict(indent=2) + "\n"


def test_the_library_stats_records_print() -> None:
    assert CollectStats().pprints_asdict().startswith("CollectStats\n")
    assert "train_time" in TrainingStats(train_time=1.0).pprints_asdict()


def test_non_dataclass_user_gets_a_clear_error() -> None:
    class NotADataclass(DataclassPPrintMixin):
        pass

    with pytest.raises(TypeError, match="not a dataclass"):
        NotADataclass().pprints_asdict()
