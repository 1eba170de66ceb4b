"""Reading a run back: its finished result (or none, or a conflicting one), the test returns in
its TensorBoard log across resumed sessions, and the failure notes."""

import json
import time
from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

from benchmark.campaign.execute import (
    FAILURE_FILE,
    RESULT_FILE,
    SESSION_TIME_TAG,
    SpecMismatchError,
    checkpoint_path,
    clear_failure,
    earlier_sessions_wall_s,
    read_result,
    read_scalar,
    record_failure,
)
from benchmark.campaign.plan import RunSpec, script_log_path
from test.benchmark.campaign.fake_results import write_fake_result


def test_a_complete_result_is_read_back(tmp_path: Path) -> None:
    written = write_fake_result(tmp_path, "Hopper-v5", "sac", 1, [1.0, 2.0])
    spec = RunSpec("Hopper-v5", "sac", 1, written["env_steps"])
    assert read_result(spec.run_dir(tmp_path), spec) == written


@pytest.mark.parametrize("content", [None, "{not json", json.dumps({"task": "Hopper-v5"})])
def test_a_missing_partial_or_broken_result_is_no_result(tmp_path: Path, content: str) -> None:
    spec = RunSpec("Hopper-v5", "sac", 0, 3000)
    run_dir = spec.run_dir(tmp_path)
    run_dir.mkdir(parents=True)
    if content is not None:
        (run_dir / RESULT_FILE).write_text(content)
    assert read_result(run_dir, spec) is None


def test_a_result_of_other_settings_is_refused(tmp_path: Path) -> None:
    write_fake_result(tmp_path, "Hopper-v5", "sac", 0, [1.0, 2.0], env_steps=3000)
    other_budget = RunSpec("Hopper-v5", "sac", 0, 6000)
    with pytest.raises(SpecMismatchError, match="another --out"):
        read_result(other_budget.run_dir(tmp_path), other_budget)


def test_scalars_of_a_resumed_log_are_merged_by_step_the_later_session_winning(
    tmp_path: Path,
) -> None:
    for session in ({0: 1.0, 100: 2.0, 200: 3.0}, {200: 30.0, 300: 40.0}):
        writer = SummaryWriter(str(tmp_path))
        for step, value in session.items():
            writer.add_scalar("test/returns_stat/mean", value, global_step=step)
            writer.add_scalar("other", -value, global_step=step)
        writer.close()
        time.sleep(1.1)  # event file names start with the second they were opened
    steps, values = read_scalar(tmp_path, "test/returns_stat/mean")
    assert steps == [0, 100, 200, 300]
    assert values == [1.0, 2.0, 30.0, 40.0]
    assert read_scalar(tmp_path, "absent") == ([], [])
    assert read_scalar(tmp_path / "no-log", "other") == ([], [])


def test_the_checkpoint_is_in_the_script_log(tmp_path: Path) -> None:
    spec = RunSpec("Hopper-v5", "ppo", 3, 1000)
    path = checkpoint_path(spec, tmp_path)
    assert path.parent.parent == script_log_path(spec, tmp_path)
    assert path.suffix == ".pth"


def test_failures_are_noted_and_forgotten(tmp_path: Path) -> None:
    record_failure(tmp_path / "run", "boom")
    assert json.loads((tmp_path / "run" / FAILURE_FILE).read_text()) == {"error": "boom"}
    clear_failure(tmp_path / "run")
    assert not (tmp_path / "run" / FAILURE_FILE).exists()
    clear_failure(tmp_path / "run")  # nothing to forget is fine


def test_earlier_sessions_count_up_to_the_epoch_the_next_one_resumed_from(
    tmp_path: Path,
) -> None:
    # session 1 ran epochs 1-4 (its checkpoint was of epoch 3), session 2 resumed at epoch 4,
    # was stopped after it, and session 3 resumed at epoch 5
    sessions = ({1: 10.0, 2: 20.0, 3: 30.0, 4: 40.0}, {4: 12.0}, {5: 9.0, 6: 18.0})
    for session in sessions:
        writer = SummaryWriter(str(tmp_path))
        for epoch, seconds in session.items():
            writer.add_scalar(SESSION_TIME_TAG, seconds, global_step=epoch)
        writer.close()
        time.sleep(1.1)  # event file names start with the second they were opened
    assert earlier_sessions_wall_s(tmp_path) == [30.0, 12.0]  # the last one is the caller's
    assert earlier_sessions_wall_s(tmp_path / "no-log") == []
