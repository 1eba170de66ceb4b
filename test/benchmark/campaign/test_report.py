"""The report from fake finished runs: statistics over seeds (mean, std, rliable IQM and its
bootstrap interval), the table, the failures, and the files written."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import stats

from benchmark.campaign.report import (
    SUMMARY_FILE,
    TABLE_FILE,
    load_results,
    write_report,
)
from benchmark.campaign.report import main as report_main
from test.benchmark.campaign.fake_results import write_fake_failure, write_fake_result

REPS = 500  # resamples per interval: enough for the checks here, fast
FINALS = {
    ("Hopper-v5", "sac"): [2100.0, 2500.0, 1800.0, 2300.0],
    ("Hopper-v5", "ppo"): [900.0, 1400.0, 1100.0],
    ("Walker2d-v5", "sac"): [1200.0, 800.0, 1500.0],
    ("Walker2d-v5", "ppo"): [700.0, 650.0, 1000.0],
}


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    for (task, algorithm), finals in FINALS.items():
        for seed, final in enumerate(finals):
            write_fake_result(tmp_path, task, algorithm, seed, [0.0, final * 1.1, final])
    return tmp_path


def test_summary_has_the_statistics_of_every_task_and_algorithm(campaign: Path) -> None:
    summary = write_report(campaign, REPS)
    assert json.loads((campaign / SUMMARY_FILE).read_text()) == summary
    cells = {(cell["task"], cell["algorithm"]): cell for cell in summary["cells"]}
    assert cells.keys() == FINALS.keys()
    for key, finals in FINALS.items():
        final, best = cells[key]["final_return"], cells[key]["best_return"]
        assert final["values"] == finals
        assert final["mean"] == pytest.approx(np.mean(finals))
        assert final["std"] == pytest.approx(np.std(finals, ddof=1))
        assert final["iqm"] == pytest.approx(stats.trim_mean(finals, 0.25))
        low, high = final["iqm_ci95"]
        assert min(finals) <= low <= final["iqm"] <= high <= max(finals)
        assert best["mean"] == pytest.approx(1.1 * np.mean(finals))
        assert cells[key]["seeds"] == list(range(len(finals)))
        assert cells[key]["env_steps"] == [3000]
    assert summary["failures"] == []


def test_table_has_a_row_per_task_and_algorithm(campaign: Path) -> None:
    write_report(campaign, REPS)
    rows = [line for line in (campaign / TABLE_FILE).read_text().splitlines() if "-v5 |" in line]
    assert len(rows) == len(FINALS)
    sac_hopper = next(row for row in rows if "Hopper-v5 | sac" in row)
    finals = FINALS["Hopper-v5", "sac"]
    assert f"{np.mean(finals):,.1f} ± {np.std(finals, ddof=1):,.1f}" in sac_hopper
    assert "| 4 | 3,000 |" in sac_hopper


def test_figures_are_written(campaign: Path) -> None:
    write_report(campaign, REPS)
    for name in ("Hopper-v5-on-policy.png", "Walker2d-v5-on-policy.png", "aggregate.png"):
        with Image.open(campaign / name) as image:
            assert image.format == "PNG"
            assert min(image.size) > 100


def test_a_single_seed_is_reported_without_an_interval(tmp_path: Path) -> None:
    write_fake_result(tmp_path, "Ant-v5", "td3", 0, [0.0, 500.0])
    summary = write_report(tmp_path, REPS)
    assert summary["cells"][0]["final_return"]["iqm_ci95"] is None
    assert summary["cells"][0]["final_return"]["std"] is None
    assert "(no CI: 1 seed)" in (tmp_path / TABLE_FILE).read_text()
    assert (tmp_path / "aggregate.png").exists()  # a figure that says why it has no data


def test_an_algorithm_with_one_seed_is_left_out_of_the_aggregate(campaign: Path) -> None:
    write_fake_result(campaign, "Hopper-v5", "td3", 0, [0.0, 500.0])
    summary = write_report(campaign, REPS)
    assert {cell["algorithm"] for cell in summary["cells"]} == {"sac", "ppo", "td3"}
    with Image.open(campaign / "aggregate.png") as image:
        assert image.size[0] > 1000  # the two-panel figure of the others, not the note alone


def test_failed_runs_are_listed_until_they_finish(campaign: Path) -> None:
    write_fake_failure(campaign, "Ant-v5", "ppo", 1, "ValueError: boom")
    write_fake_failure(campaign, "Hopper-v5", "sac", 0, "an older failure")  # finished since
    summary = write_report(campaign, REPS)
    assert summary["failures"] == [
        {"task": "Ant-v5", "algorithm": "ppo", "seed": 1, "error": "ValueError: boom"}
    ]
    assert "Ant-v5 ppo seed1: ValueError: boom" in (campaign / TABLE_FILE).read_text()


def test_incomplete_results_are_left_out(campaign: Path) -> None:
    broken = campaign / "runs" / "Ant-v5" / "sac" / "seed0"
    broken.mkdir(parents=True)
    (broken / "result.json").write_text(json.dumps({"task": "Ant-v5"}))
    assert len(load_results(campaign)) == sum(len(finals) for finals in FINALS.values())


def test_report_command_rebuilds_the_report_of_finished_runs(
    campaign: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_main([str(campaign)])
    assert "report of 13 finished runs" in capsys.readouterr().out
    assert json.loads((campaign / SUMMARY_FILE).read_text())
    assert "| Walker2d-v5 | ppo | 3 |" in (campaign / TABLE_FILE).read_text()


def test_report_command_refuses_a_directory_without_runs(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        report_main([str(tmp_path)])
    assert not (tmp_path / TABLE_FILE).exists()


def test_rebuilding_the_report_gives_the_same_intervals(campaign: Path) -> None:
    first = write_report(campaign, REPS)
    second = write_report(campaign, REPS)
    assert [c["final_return"]["iqm_ci95"] for c in first["cells"]] == [
        c["final_return"]["iqm_ci95"] for c in second["cells"]
    ]
    assert (campaign / "aggregate.png").read_bytes() == _aggregate_bytes(campaign)


def _aggregate_bytes(campaign: Path) -> bytes:
    write_report(campaign, REPS)
    return (campaign / "aggregate.png").read_bytes()


def test_resumed_and_modified_tree_runs_are_named_and_wall_time_covers_whole_runs(
    tmp_path: Path,
) -> None:
    for seed in range(3):
        result = write_fake_result(tmp_path, "Hopper-v5", "sac", seed, [0.0, 100.0 + seed])
        path = next(tmp_path.glob(f"runs/Hopper-v5/sac/seed{seed}/result.json"))
        if seed == 1:  # resumed by an older runner: its wall time is of the last session only
            result |= {"resumed_from_env_step": 1500, "wall_s": 5.0}
        if seed == 2:  # resumed by this runner: the sessions are added up
            result |= {"resumed_from_env_step": 1500, "wall_s_sessions": [40.0, 22.0],
                       "wall_s": 62.0, "commit": "0123abc+dirty"}  # fmt: skip
        path.write_text(json.dumps(result))
    summary = write_report(tmp_path, REPS)
    (cell,) = summary["cells"]
    assert cell["resumed_seeds"] == [1, 2] and cell["dirty_seeds"] == [2]
    assert cell["wall_s_runs"] == 2 and cell["wall_s_mean"] == pytest.approx((60.0 + 62.0) / 2)
    table = (tmp_path / TABLE_FILE).read_text()
    assert "| 61 s* |" in table
    assert "Runs resumed from a checkpoint: Hopper-v5 sac seeds 1, 2." in table
    assert "uncommitted changes (+dirty): Hopper-v5 sac seed 2." in table
