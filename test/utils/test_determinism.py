"""Tests of the trace logger, trace logs and the determinism snapshot test."""

import logging
import subprocess
from pathlib import Path

import pytest
import torch
from torch import nn

from tianshou.utils import determinism
from tianshou.utils.determinism import (
    DEFAULT_LOG_FORMAT,
    TraceDeterminismTest,
    TraceLog,
    TraceLogDifference,
    TraceLogger,
    TraceLoggerContext,
    format_log_message,
    git_status,
    torch_param_hash,
)

logger = logging.getLogger("test.determinism")
FORMATTER = logging.Formatter(DEFAULT_LOG_FORMAT)


def emit(message: str) -> None:
    """A trace point, as library code writes one."""
    TraceLogger.log(logger, lambda: message)


def inner_formatting(stacklevel: int) -> str:
    return format_log_message(logger, logging.DEBUG, "hi", FORMATTER, stacklevel=stacklevel)


def outer_formatting(stacklevel: int) -> str:
    return inner_formatting(stacklevel)


def linear(seed: int = 0) -> nn.Linear:
    torch.manual_seed(seed)
    return nn.Linear(3, 2)


# ---------------------------------------------------------------- format_log_message
def test_format_log_message_names_the_caller_stacklevel_frames_up() -> None:
    assert inner_formatting(1) == "test.determinism:inner_formatting - hi"
    assert outer_formatting(2) == "test.determinism:outer_formatting - hi"
    assert outer_formatting(3).endswith(
        ":test_format_log_message_names_the_caller_stacklevel_frames_up - hi"
    )


def test_format_log_message_fills_level_and_location_fields_and_keeps_percent_signs() -> None:
    formatter = logging.Formatter("%(levelname)s %(filename)s:%(lineno)d %(message)s")
    line = format_log_message(logger, logging.INFO, "100% done, %s", formatter)
    level, location, message = line.split(" ", 2)
    assert level == "INFO"
    assert location.startswith("test_determinism.py:")
    assert message == "100% done, %s"


@pytest.mark.parametrize("stacklevel", [0, 10_000])
def test_format_log_message_refuses_a_stacklevel_outside_the_stack(stacklevel: int) -> None:
    with pytest.raises(ValueError, match=f"stacklevel={stacklevel}|got {stacklevel}"):
        format_log_message(logger, logging.DEBUG, "x", FORMATTER, stacklevel=stacklevel)


# ---------------------------------------------------------------- torch_param_hash
def test_param_hash_depends_on_values_only_not_on_names() -> None:
    first = torch_param_hash(linear(0))
    assert len(first) == 16 and int(first, 16) >= 0
    assert torch_param_hash(linear(0)) == first
    assert torch_param_hash(nn.Sequential(linear(0))) == first
    assert torch_param_hash(linear(1)) != first


def test_param_hash_sees_a_change_in_the_last_bit() -> None:
    module = linear()
    before = torch_param_hash(module)
    with torch.no_grad():
        module.bias[0] = torch.nextafter(module.bias[0], torch.tensor(1.0))
    assert torch_param_hash(module) != before


def test_param_hash_tells_shapes_and_dtypes_apart() -> None:
    flat, square = nn.Module(), nn.Module()
    flat.p = nn.Parameter(torch.arange(4.0))
    square.p = nn.Parameter(torch.arange(4.0).reshape(2, 2))
    assert torch_param_hash(flat) != torch_param_hash(square)
    double = nn.Module()
    double.p = nn.Parameter(torch.arange(2.0, dtype=torch.float64))
    single = nn.Module()
    single.p = nn.Parameter(torch.arange(4.0, dtype=torch.float32)[:2].clone())
    assert torch_param_hash(double) != torch_param_hash(single)


def test_param_hash_handles_scalars_half_precision_and_modules_without_parameters() -> None:
    module = nn.Module()
    module.scalar = nn.Parameter(torch.tensor(1.5))
    module.bf16 = nn.Parameter(torch.ones(3, dtype=torch.bfloat16))
    assert len(torch_param_hash(module)) == 16
    assert torch_param_hash(nn.ReLU()) == torch_param_hash(nn.Tanh())


def test_param_hash_ignores_buffers() -> None:
    module = nn.BatchNorm1d(2)
    before = torch_param_hash(module)
    module.running_mean += 1.0
    assert torch_param_hash(module) == before


# ---------------------------------------------------------------- TraceLogger
def test_tracing_is_off_by_default_and_then_builds_no_message() -> None:
    assert TraceLogger.is_enabled is False

    def must_not_run() -> str:
        raise AssertionError("message built while tracing is disabled")

    TraceLogger.log(logger, must_not_run)


def test_enabled_tracing_sends_tagged_messages_to_python_logging(caplog) -> None:
    with caplog.at_level(logging.DEBUG, logger=logger.name), TraceLoggerContext(False):
        emit("step 1")
    (record,) = caplog.records
    assert record.getMessage() == "[TRACE] step 1"
    assert record.levelno == TraceLogger.log_level == logging.DEBUG
    assert record.funcName == "emit"


def test_buffered_lines_name_the_trace_point_and_stay_one_line_each() -> None:
    with TraceLoggerContext() as trace:
        emit("two\nlines")
    assert trace.get_log().log_lines == ["test.determinism:emit - two\\nlines"]


def test_without_a_formatter_buffered_lines_get_the_default_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert TraceLogger.log_formatter is None
    buffer: list[str] = []
    monkeypatch.setattr(TraceLogger, "is_enabled", True)
    monkeypatch.setattr(TraceLogger, "log_buffer", buffer)
    emit("x")
    assert buffer == ["test.determinism:emit - x"]


# ---------------------------------------------------------------- TraceLoggerContext
def test_context_enables_tracing_and_restores_the_previous_state() -> None:
    buffer, formatter = TraceLogger.log_buffer, TraceLogger.log_formatter
    with TraceLoggerContext(log_format="%(message)s") as trace:
        assert TraceLogger.is_enabled
        emit("a")
    emit("after")
    assert trace.get_log().log_lines == ["a"]
    assert not TraceLogger.is_enabled
    assert TraceLogger.log_buffer is buffer and TraceLogger.log_formatter is formatter is None


def test_context_restores_the_state_when_the_block_raises() -> None:
    with pytest.raises(KeyError), TraceLoggerContext():
        raise KeyError("boom")
    assert not TraceLogger.is_enabled and TraceLogger.log_buffer is None


def test_nested_contexts_each_capture_their_own_block() -> None:
    with TraceLoggerContext(log_format="%(message)s") as outer:
        emit("outer 1")
        with TraceLoggerContext(log_format="%(message)s") as inner:
            emit("inner")
        emit("outer 2")
    assert outer.get_log().log_lines == ["outer 1", "outer 2"]
    assert inner.get_log().log_lines == ["inner"]


def test_reentering_a_context_starts_a_fresh_capture_but_nesting_it_is_refused() -> None:
    trace = TraceLoggerContext(log_format="%(message)s")
    with trace:
        emit("first")
        with pytest.raises(RuntimeError, match="already active"), trace:
            pass
    with trace:
        emit("second")
    assert trace.get_log().log_lines == ["second"]


def test_get_log_without_buffer_says_how_to_enable_it() -> None:
    with TraceLoggerContext(enable_log_buffer=False) as trace:
        emit("x")
    with pytest.raises(ValueError, match="enable_log_buffer=True"):
        trace.get_log()


def test_get_log_is_a_snapshot() -> None:
    with TraceLoggerContext(log_format="%(message)s") as trace:
        emit("a")
        snapshot = trace.get_log()
        emit("b")
    assert snapshot.log_lines == ["a"]
    assert trace.get_log().log_lines == ["a", "b"]


# ---------------------------------------------------------------- TraceLog
LINES = [
    "mod:collect - collected 10 steps",
    "mod:update - update: parameters abc",
    "mod:collect - collected 10 steps, took 0.1 s",
    "mod:epoch - epoch 1 done",
]


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "trace.txt"
    TraceLog(LINES).save_log(path)
    assert path.read_text() == "\n".join(LINES) + "\n"
    assert TraceLog.load(path) == TraceLog(LINES)
    TraceLog([]).save_log(path)
    assert TraceLog.load(path).log_lines == []


def test_full_log_and_print(capsys) -> None:
    log = TraceLog(LINES[:2])
    assert log.get_full_log() == f"{LINES[0]}\n{LINES[1]}"
    log.print_log()
    assert capsys.readouterr().out == log.get_full_log() + "\n"


def test_reduce_to_messages_strips_the_prefix_up_to_the_first_separator() -> None:
    log = TraceLog(["a.b:f - x - y", "no separator", "a:f - "])
    assert log.reduce_log_to_messages().log_lines == ["x - y", "no separator", ""]


def test_filter_keeps_selected_lines_in_order_and_drops_ignored_ones() -> None:
    log = TraceLog(LINES)
    assert log.filter_messages().log_lines == LINES
    assert log.filter_messages(ignored_messages=["took"]).log_lines == [
        LINES[0],
        LINES[1],
        LINES[3],
    ]
    assert log.filter_messages(
        required_messages=["epoch"], optional_messages=["parameters", "absent"]
    ).log_lines == [LINES[1], LINES[3]]
    assert log.filter_messages(
        required_messages=["collected"], ignored_messages=["took"]
    ).log_lines == [LINES[0]]


def test_filter_names_required_messages_that_never_occur() -> None:
    with pytest.raises(ValueError, match=r"\['gradient'\] occur in none of the 4"):
        TraceLog(LINES).filter_messages(required_messages=["epoch", "gradient"])


@pytest.mark.parametrize(
    ("expected", "actual", "difference"),
    [
        (["a", "b"], ["a", "b"], None),
        ([], [], None),
        (["a", "b", "c"], ["a", "x", "c"], TraceLogDifference(2, "b", "x")),
        (["a", "b"], ["a"], TraceLogDifference(2, "b", None)),
        (["a"], ["a", "b"], TraceLogDifference(2, None, "b")),
        ([], ["a"], TraceLogDifference(1, None, "a")),
    ],
)
def test_first_difference(
    expected: list[str], actual: list[str], difference: TraceLogDifference | None
) -> None:
    assert TraceLog(expected).first_difference(TraceLog(actual)) == difference


def test_difference_reads_as_line_expected_and_actual() -> None:
    assert str(TraceLogDifference(3, "a", None)) == (
        "first difference at line 3: expected 'a', got <end of log>"
    )


# ---------------------------------------------------------------- git_status
def git(repo: Path, *args: str) -> str:
    command = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def test_git_status_names_the_commit_and_the_changed_tracked_files(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "pkg" / "a.py").write_text("x = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    commit = git(repo, "rev-parse", "HEAD")
    assert git_status(repo / "pkg") == f"commit {commit}, clean"
    (repo / "pkg" / "a.py").write_text("x = 2\n")
    (repo / "untracked.py").write_text("")
    assert git_status(repo / "pkg") == f"commit {commit}, uncommitted changes:\n M pkg/a.py"


def test_git_status_outside_a_working_tree_is_unknown(tmp_path: Path) -> None:
    assert git_status(tmp_path).startswith("unknown (")


# ---------------------------------------------------------------- TraceDeterminismTest
@pytest.fixture
def fixed_git_status(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Makes every check see the revision ``commit c0ffee, clean``; lists the directories
    asked about."""
    asked: list[Path] = []

    def fake_git_status(directory: str | Path) -> str:
        asked.append(Path(directory))
        return "commit c0ffee, clean"

    monkeypatch.setattr(determinism, "git_status", fake_git_status)
    return asked


def test_snapshot_created_then_matched(tmp_path: Path, fixed_git_status: list[Path]) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path / "refs")
    created = snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    assert created.reference_created and created.success
    assert created.reference_path == tmp_path / "refs" / "run.txt"
    assert TraceLog.load(created.reference_path).log_lines == LINES
    result = snapshot.check(TraceLog(LINES), "run")
    assert result == TraceDeterminismTest.Result(
        git_status="commit c0ffee, clean",
        log=TraceLog(LINES),
        name="run",
        reference_path=created.reference_path,
        reference_created=False,
        first_difference=None,
        core_messages_unchanged=True,
        success=True,
    )


def test_snapshot_failure_names_the_first_differing_line(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    changed = [*LINES[:2], "mod:collect - collected 11 steps, took 0.1 s", LINES[3]]
    with pytest.raises(AssertionError) as failure:
        snapshot.check(TraceLog(changed), "run")
    message = str(failure.value)
    assert f"{tmp_path / 'run.txt'}" in message
    assert (
        "first difference at line 3: expected 'mod:collect - collected 10 steps, took 0.1 s', "
        "got 'mod:collect - collected 11 steps, took 0.1 s'" in message
    )
    with pytest.raises(AssertionError, match="line 5: expected <end of log>, got 'extra'"):
        snapshot.check(TraceLog([*LINES, "extra"]), "run")


def test_snapshot_without_reference_says_how_to_create_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="create_reference_result=True"):
        TraceDeterminismTest(base_path=tmp_path).check(TraceLog(LINES), "missing")


def test_result_records_the_source_revision_and_the_checked_log(
    tmp_path: Path, fixed_git_status: list[Path]
) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path, ignored_messages=["took"])
    for create in (True, False):
        result = snapshot.check(TraceLog(LINES), "run", create_reference_result=create)
        assert result.git_status == "commit c0ffee, clean"
        assert result.log == TraceLog([line for line in LINES if "took" not in line])
    library_root = Path(determinism.__file__).parents[1]
    assert len(fixed_git_status) == 2
    assert all(library_root in [d, *d.parents] for d in fixed_git_status)


def test_ignored_messages_stay_out_of_the_reference_and_the_comparison(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path, ignored_messages=["took"])
    created = snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    assert "took" not in created.reference_path.read_text()
    timing_changed = [*LINES[:2], "mod:collect - collected 10 steps, took 9 s", LINES[3]]
    assert snapshot.check(TraceLog(timing_changed), "run").first_difference is None


def test_changed_non_core_lines_pass_only_when_allowed(tmp_path: Path, caplog) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path, core_messages=["parameters"])
    snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    changed = [LINES[0], "other:update_step - update: parameters abc", LINES[3]]
    with pytest.raises(AssertionError, match="core messages unchanged"):
        snapshot.check(TraceLog(changed), "run")
    with caplog.at_level(logging.WARNING):
        result = snapshot.check(TraceLog(changed), "run", pass_if_core_messages_unchanged=True)
    assert result.success and result.core_messages_unchanged
    assert result.first_difference == TraceLogDifference(2, LINES[1], changed[1])
    assert "core messages unchanged" in caplog.text
    core_changed = [LINES[0], "mod:update - update: parameters abd", *LINES[2:]]
    with pytest.raises(AssertionError, match="core messages changed as well"):
        snapshot.check(TraceLog(core_changed), "run", pass_if_core_messages_unchanged=True)


def test_without_core_messages_every_message_is_core(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    moved = [line.replace("mod:", "renamed:") for line in LINES]
    assert snapshot.check(TraceLog(moved), "run", pass_if_core_messages_unchanged=True).success
    with pytest.raises(AssertionError):
        snapshot.check(TraceLog(LINES[:3]), "run", pass_if_core_messages_unchanged=True)


def test_log_file_records_each_outcome(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(
        base_path=tmp_path, core_messages=["parameters"], log_filename="results.log"
    )
    snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    snapshot.check(TraceLog(LINES), "run")
    changed = [*LINES[:3], "mod:epoch - epoch 2 done"]
    snapshot.check(TraceLog(changed), "run", pass_if_core_messages_unchanged=True)
    with pytest.raises(AssertionError):
        snapshot.check(TraceLog(changed), "run")
    difference = "first difference at line 4: expected 'mod:epoch - epoch 1 done', got "
    assert (tmp_path / "results.log").read_text().splitlines() == [
        "run: reference created",
        "run: unchanged",
        f"run: passed, {difference}'mod:epoch - epoch 2 done'",
        f"run: FAILED, {difference}'mod:epoch - epoch 2 done'",
    ]


def test_reference_can_be_replaced(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    snapshot.check(TraceLog(LINES), "run", create_reference_result=True)
    snapshot.check(TraceLog(LINES[:1]), "run", create_reference_result=True)
    assert snapshot.check(TraceLog(LINES[:1]), "run").success
