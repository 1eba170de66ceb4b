"""The throughput gate's logic: floors from calibration spreads, a metric below its floor
measured once more, the table naming the metric and how far below, and the exit code."""

import json
from pathlib import Path

import pytest

from benchmark import perf_guard
from benchmark.perf_guard import Metric, Row, calibrate, floor_of, format_table, run_gate


def sequence(*values: float) -> Metric:
    figures = iter(values)
    return Metric("fake", "a fake ratio", lambda: next(figures))


def test_a_floor_sits_below_the_spread_of_the_calibration_runs() -> None:
    assert floor_of([1.0, 1.0, 1.0]) == pytest.approx(0.9)  # no spread: the least margin, 10%
    noisy = [0.8, 1.0, 1.2, 1.0, 0.9]
    assert floor_of(noisy) == pytest.approx(1.0 - 3 * 1.4826 * 0.1)  # three scaled MADs
    assert floor_of(noisy) < min(noisy)


def test_a_metric_below_its_floor_is_measured_once_more() -> None:
    (passed_again,) = run_gate([sequence(0.5, 0.5, 0.5, 1.0, 1.0, 1.0)], {"fake": {"floor": 0.9}})
    assert passed_again.remeasured and passed_again.ok and passed_again.figure == 1.0
    (failed,) = run_gate([sequence(*[0.5] * 6)], {"fake": {"floor": 0.9}})
    assert failed.remeasured and not failed.ok
    (fine,) = run_gate([sequence(1.0, 1.2, 0.95)], {"fake": {"floor": 0.9}})
    assert not fine.remeasured and fine.figure == 1.0  # the median of the repeats


def test_the_table_names_the_failing_metric_and_how_far_below() -> None:
    metric = Metric("ppo_update", "PPO update / bare PyTorch update", lambda: 0.0)
    table = format_table([Row(metric, 0.72, 0.9, remeasured=True)])
    assert "ppo_update" in table and "0.720" in table and "0.900" in table
    assert "20.0%" in table and "measured twice" in table


def test_calibration_writes_each_metrics_floor_and_spread(tmp_path: Path) -> None:
    path = tmp_path / "floors.json"
    path.write_text(json.dumps({"other": {"floor": 0.5}}))
    calibrate([sequence(*[1.0] * 9)], runs=3, path=path)
    floors = json.loads(path.read_text())
    assert floors["other"] == {"floor": 0.5}  # other metrics' floors are kept
    assert floors["fake"]["floor"] == 0.9
    assert floors["fake"]["calibration"]["runs"] == 3


def test_the_gate_exits_with_1_when_a_metric_stays_below(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"fake": {"floor": 0.9}}))
    monkeypatch.setattr(perf_guard, "FLOORS_FILE", floors)
    monkeypatch.setattr(perf_guard, "METRICS", (sequence(*[0.5] * 6),))
    monkeypatch.setattr(perf_guard, "load_floors", lambda: json.loads(floors.read_text()))
    assert perf_guard.main([]) == 1
    assert "BELOW: fake" in capsys.readouterr().out
    monkeypatch.setattr(perf_guard, "METRICS", (sequence(*[1.0] * 3),))
    assert perf_guard.main([]) == 0


def test_every_metric_has_a_floor_in_the_committed_file() -> None:
    floors = perf_guard.load_floors()
    assert {metric.name for metric in perf_guard.METRICS} <= floors.keys()
