"""Trace logging and snapshot tests that show whether a training run is reproducible.

Nondeterminism in RL code is hard to locate: two runs with the same seed drift apart somewhere
in thousands of updates, and only the final return tells. The library therefore emits *trace
messages* at the points that matter (a hash of the parameters after every update, the outcome
of every collection, the counters at each epoch boundary) through :class:`TraceLogger`. Tracing
is off by default and then costs one attribute check per trace point: the message is built
only when tracing is on.

:class:`TraceLoggerContext` turns tracing on and captures the messages as a :class:`TraceLog`;
:class:`TraceDeterminismTest` saves such a log as a reference file and compares later runs
against it, naming the first line where they part.

Example (``train`` builds and trains an algorithm from a fixed seed)::

    snapshot = TraceDeterminismTest(base_path=tmp_path)
    with TraceLoggerContext() as trace:
        train(seed=0)
    snapshot.check(trace.get_log(), "ppo_cartpole", create_reference_result=True)
    with TraceLoggerContext() as trace:
        train(seed=0)
    snapshot.check(trace.get_log(), "ppo_cartpole")  # AssertionError at the first difference
"""

import hashlib
import logging
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import torch

log = logging.getLogger(__name__)

DEFAULT_LOG_FORMAT = "%(name)s:%(funcName)s - %(message)s"
"""Logger and function name, then the message. Line numbers are left out on purpose: a
reference trace should survive edits that merely move code."""

DEFAULT_LOG_FORMATTER = logging.Formatter(DEFAULT_LOG_FORMAT)
"""Formats captured trace lines while :attr:`TraceLogger.log_formatter` is None."""

MESSAGE_SEPARATOR = " - "
"""What separates the prefix of a trace line from its message in :data:`DEFAULT_LOG_FORMAT`
(used by :meth:`TraceLog.reduce_log_to_messages`)."""


def format_log_message(
    logger: logging.Logger,
    level: int,
    msg: str,
    formatter: logging.Formatter,
    stacklevel: int = 1,
) -> str:
    """Format ``msg`` as ``logger`` would log it at ``level``, without emitting it.

    The record's location fields (``funcName``, ``filename``, ``lineno``) describe the frame
    ``stacklevel`` levels up from this function, as with :meth:`logging.Logger.log`.

    :param logger: the logger whose name the record carries.
    :param level: the record's level, e.g. ``logging.DEBUG``.
    :param msg: the message, taken literally (no ``%`` interpolation).
    :param formatter: the formatter that turns the record into text.
    :param stacklevel: 1 for the caller of this function, 2 for its caller, and so on.
    :return: the formatted line.
    """
    if stacklevel < 1:
        raise ValueError(f"stacklevel must be at least 1 (1: the caller), got {stacklevel}")
    try:
        frame = sys._getframe(stacklevel)
    except ValueError as e:
        raise ValueError(
            f"stacklevel={stacklevel} reaches beyond the call stack; pass a smaller value"
        ) from e
    code = frame.f_code
    record = logger.makeRecord(
        logger.name, level, code.co_filename, frame.f_lineno, msg, (), None, func=code.co_name
    )
    return formatter.format(record)


def torch_param_hash(module: torch.nn.Module) -> str:
    """A short digest of the values, shapes and dtypes of ``module``'s parameters.

    Two modules get the same digest exactly when their parameters are bitwise equal and come in
    the same order; parameter names do not enter, so renaming an attribute keeps the digest.

    :param module: the module (e.g. a whole :class:`~tianshou.algorithm.Algorithm`).
    :return: 16 hexadecimal characters.
    """
    digest = hashlib.sha256()
    for param in module.parameters():
        data = param.detach().cpu().contiguous()
        digest.update(f"{tuple(data.shape)}{data.dtype}".encode())
        digest.update(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()[:16]


class TraceLogger:
    """The process-wide switch and sink for trace messages.

    Library code calls :meth:`log` at its trace points. While :attr:`is_enabled` is False (the
    default) that call returns at once without building the message. While it is True, the
    message goes to the given logger at :attr:`log_level` (prefixed with :attr:`MESSAGE_TAG`, so
    ordinary logging handlers can pick traces out), and, if :attr:`log_buffer` is a list, it is
    also formatted with :attr:`log_formatter` (or :data:`DEFAULT_LOG_FORMATTER`) and appended
    there. :class:`TraceLoggerContext` sets these class attributes for the duration of a
    ``with`` block.
    """

    is_enabled: bool = False
    """Whether trace messages are produced at all."""
    log_level: int = logging.DEBUG
    """The level at which trace messages are sent to the library's loggers."""
    log_buffer: list[str] | None = None
    """Formatted trace lines collected while enabled; None: do not collect."""
    log_formatter: logging.Formatter | None = None
    """How lines in :attr:`log_buffer` are formatted; None: with :data:`DEFAULT_LOG_FORMATTER`
    (logger and function name, then the message)."""
    MESSAGE_TAG = "[TRACE]"
    """Prefix of trace messages sent to the loggers."""

    @classmethod
    def log(cls, logger: logging.Logger, message_generator: Callable[[], str]) -> None:
        """Record one trace message, if tracing is enabled.

        :param logger: the calling module's logger (its name identifies the trace point).
        :param message_generator: builds the message; called only when tracing is enabled, so
            expensive parts such as parameter hashes cost nothing otherwise.
        """
        if not cls.is_enabled:
            return
        message = message_generator()
        logger.log(cls.log_level, "%s %s", cls.MESSAGE_TAG, message, stacklevel=2)
        if cls.log_buffer is not None:
            formatter = cls.log_formatter or DEFAULT_LOG_FORMATTER
            line = format_log_message(logger, cls.log_level, message, formatter, 2)
            cls.log_buffer.append(line.replace("\n", "\\n"))


GIT_TIMEOUT_SECONDS = 10.0
"""How long :func:`git_status` waits for each git command."""


def git_status(directory: str | Path) -> str:
    """The revision of the git working tree containing ``directory``: the commit, and the
    tracked files with uncommitted changes, as ``git status --porcelain`` lists them.

    A snapshot check records it, so that a changed trace can be traced back to the code that
    produced it.

    :param directory: any directory inside the working tree.
    :return: ``"commit <hash>, clean"``, or ``"commit <hash>, uncommitted changes:"`` followed
        by the status lines; ``"unknown (<reason>)"`` where git is missing or ``directory`` is
        not in a git working tree.
    """

    def run_git(*args: str) -> str:
        completed = subprocess.run(
            ["git", "-C", str(directory), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=True,
        )
        return completed.stdout

    try:
        commit = run_git("rev-parse", "HEAD").strip()
        changes = run_git("status", "--porcelain", "--untracked-files=no").rstrip()
    except FileNotFoundError:
        return "unknown (git is not installed)"
    except subprocess.CalledProcessError as e:
        reason = (
            e.stderr.strip().splitlines()[0] if e.stderr.strip() else f"exit code {e.returncode}"
        )
        return f"unknown ({reason})"
    except subprocess.TimeoutExpired:
        return f"unknown (git took longer than {GIT_TIMEOUT_SECONDS} s)"
    return f"commit {commit}, " + (f"uncommitted changes:\n{changes}" if changes else "clean")


@dataclass(frozen=True)
class TraceLogDifference:
    """Where two trace logs part: the first line (1-based) at which they differ.

    ``expected`` or ``actual`` is None where that log ended before the line.
    """

    line_number: int
    expected: str | None
    actual: str | None

    def __str__(self) -> str:
        expected = "<end of log>" if self.expected is None else repr(self.expected)
        actual = "<end of log>" if self.actual is None else repr(self.actual)
        return f"first difference at line {self.line_number}: expected {expected}, got {actual}"


@dataclass
class TraceLog:
    """The lines of a trace, one message per line, in the order they were logged."""

    log_lines: list[str]

    @classmethod
    def load(cls, path: str | Path) -> "TraceLog":
        """Read a log written by :meth:`save_log`."""
        return cls(Path(path).read_text(encoding="utf-8").splitlines())

    def save_log(self, path: str | Path) -> None:
        """Write the lines to ``path`` (parent directories are created)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(line + "\n" for line in self.log_lines)
        path.write_text(text, encoding="utf-8")

    def get_full_log(self) -> str:
        """The whole log as one string, lines joined by newlines."""
        return "\n".join(self.log_lines)

    def print_log(self) -> None:
        """Print the log to standard output, one line per message."""
        for line in self.log_lines:
            print(line)

    def reduce_log_to_messages(self) -> "TraceLog":
        """The log with each line cut to its message: the prefix up to the first
        :data:`MESSAGE_SEPARATOR` (logger and function name in the default format) is removed.
        Lines without the separator are kept whole."""
        messages = []
        for line in self.log_lines:
            _, separator, message = line.partition(MESSAGE_SEPARATOR)
            messages.append(message if separator else line)
        return TraceLog(messages)

    def filter_messages(
        self,
        required_messages: Sequence[str] = (),
        optional_messages: Sequence[str] = (),
        ignored_messages: Sequence[str] = (),
    ) -> "TraceLog":
        """Select lines by the text fragments they contain.

        :param required_messages: fragments of lines to keep; each must occur in the log.
        :param optional_messages: fragments of further lines to keep, which may be absent.
            If neither ``required_messages`` nor ``optional_messages`` is given, all lines are
            kept (before ``ignored_messages`` applies).
        :param ignored_messages: fragments of lines to drop, even if selected above.
        :return: a new log with the selected lines in their original order.
        :raises ValueError: if a required fragment occurs in no line.
        """
        missing = [m for m in required_messages if not any(m in line for line in self.log_lines)]
        if missing:
            raise ValueError(
                f"required trace messages {missing} occur in none of the {len(self.log_lines)} "
                "log lines; check that tracing was enabled and that the fragments are spelled "
                "as logged"
            )
        selectors = [*required_messages, *optional_messages]
        return TraceLog(
            [
                line
                for line in self.log_lines
                if (not selectors or any(m in line for m in selectors))
                and not any(m in line for m in ignored_messages)
            ]
        )

    def first_difference(self, other: "TraceLog") -> TraceLogDifference | None:
        """The first line where ``other`` differs from this log (taken as the expected one);
        None if both are equal."""
        expected_lines, actual_lines = self.log_lines, other.log_lines
        for index in range(max(len(expected_lines), len(actual_lines))):
            expected = expected_lines[index] if index < len(expected_lines) else None
            actual = actual_lines[index] if index < len(actual_lines) else None
            if expected != actual:
                return TraceLogDifference(index + 1, expected, actual)
        return None


class TraceLoggerContext:
    """Enables tracing inside a ``with`` block and captures the trace.

    The previous settings of :class:`TraceLogger` are restored on exit, so contexts nest (an
    inner context captures what is logged inside it; the outer one does not see those lines).

    :param enable_log_buffer: capture the trace lines for :meth:`get_log`; if False, tracing
        only sends messages to Python's loggers (configure a handler to see them).
    :param log_format: the :class:`logging.Formatter` format of captured lines.
    """

    def __init__(
        self, enable_log_buffer: bool = True, log_format: str = DEFAULT_LOG_FORMAT
    ) -> None:
        self.enable_log_buffer = enable_log_buffer
        self.log_format = log_format
        self._lines: list[str] = []
        self._saved: tuple[bool, list[str] | None, logging.Formatter | None] | None = None

    def __enter__(self) -> Self:
        if self._saved is not None:
            raise RuntimeError("this TraceLoggerContext is already active; create a new one")
        self._saved = (TraceLogger.is_enabled, TraceLogger.log_buffer, TraceLogger.log_formatter)
        self._lines = []
        TraceLogger.is_enabled = True
        TraceLogger.log_buffer = self._lines if self.enable_log_buffer else None
        TraceLogger.log_formatter = logging.Formatter(self.log_format)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._saved is not None
        TraceLogger.is_enabled, TraceLogger.log_buffer, TraceLogger.log_formatter = self._saved
        self._saved = None

    def get_log(self) -> TraceLog:
        """The lines captured during the latest (or current) ``with`` block.

        :raises ValueError: if the context was created with ``enable_log_buffer=False``.
        """
        if not self.enable_log_buffer:
            raise ValueError(
                "this TraceLoggerContext captures nothing (enable_log_buffer=False); create it "
                "with enable_log_buffer=True to use get_log()"
            )
        return TraceLog(list(self._lines))


class TraceDeterminismTest:
    """A snapshot test: compares the trace of a run with a stored reference trace.

    References are text files ``<base_path>/<name>.txt`` holding the trace with the ignored
    messages removed. Create one by checking with ``create_reference_result=True``; later
    checks fail with an ``AssertionError`` that names the first differing line.

    :param base_path: the directory of the reference files (created when needed).
    :param core_messages: fragments of the messages that must stay the same for a run to count
        as reproduced even where other lines changed (see ``pass_if_core_messages_unchanged``
        of :meth:`check`); empty: every message is core.
    :param ignored_messages: fragments of messages left out of references and comparisons
        (e.g. timings).
    :param log_filename: if given, every check appends a line with its outcome to this file in
        ``base_path``.
    """

    @dataclass(frozen=True, kw_only=True)
    class Result:
        """The outcome of one :meth:`TraceDeterminismTest.check`."""

        git_status: str
        """The revision of the library's source tree when the check ran (see
        :func:`git_status`)."""
        log: TraceLog
        """The checked log with the ignored messages removed: what was stored as the reference,
        or compared with it."""
        name: str
        reference_path: Path
        reference_created: bool
        """True if the check wrote the reference instead of comparing with it."""
        first_difference: TraceLogDifference | None
        """Where the (filtered) log first differs from the reference; None: they are equal."""
        core_messages_unchanged: bool
        """Whether the core messages match the reference (always True if the logs do)."""
        success: bool

    def __init__(
        self,
        base_path: str | Path,
        core_messages: Sequence[str] = (),
        ignored_messages: Sequence[str] = (),
        log_filename: str | None = None,
    ) -> None:
        self.base_path = Path(base_path)
        self.core_messages = list(core_messages)
        self.ignored_messages = list(ignored_messages)
        self.log_filename = log_filename

    def reference_path(self, name: str) -> Path:
        """Where the reference trace called ``name`` is stored."""
        return self.base_path / f"{name}.txt"

    def check(
        self,
        current_log: TraceLog,
        name: str,
        create_reference_result: bool = False,
        pass_if_core_messages_unchanged: bool = False,
    ) -> "TraceDeterminismTest.Result":
        """Compare ``current_log`` with the reference ``name`` (or store it as that reference).

        :param current_log: the trace of the run under test.
        :param name: the reference's name, unique among the references in ``base_path``.
        :param create_reference_result: store ``current_log`` as the reference (replacing any
            existing one) instead of comparing.
        :param pass_if_core_messages_unchanged: succeed if the core messages (with their
            logger prefixes removed) match even though other lines differ.
        :return: the result; it is always successful, since a failure raises.
        :raises FileNotFoundError: if there is no reference and none is to be created.
        :raises AssertionError: if the logs differ (beyond what the options allow).
        """
        path = self.reference_path(name)
        current = current_log.filter_messages(ignored_messages=self.ignored_messages)
        source_status = git_status(Path(__file__).parent)
        if create_reference_result:
            current.save_log(path)
            result = self.Result(
                git_status=source_status,
                log=current,
                name=name,
                reference_path=path,
                reference_created=True,
                first_difference=None,
                core_messages_unchanged=True,
                success=True,
            )
            self._record(result)
            return result
        if not path.exists():
            raise FileNotFoundError(
                f"no reference trace {name!r} at {path}; run the check once with "
                "create_reference_result=True to create it"
            )
        reference = TraceLog.load(path)
        difference = reference.first_difference(current)
        core_unchanged = difference is None or self._core(reference) == self._core(current)
        result = self.Result(
            git_status=source_status,
            log=current,
            name=name,
            reference_path=path,
            reference_created=False,
            first_difference=difference,
            core_messages_unchanged=core_unchanged,
            success=difference is None or (pass_if_core_messages_unchanged and core_unchanged),
        )
        self._record(result)
        if not result.success:
            raise AssertionError(
                f"trace {name!r} differs from its reference {path}: {difference} "
                f"(core messages {'unchanged' if core_unchanged else 'changed as well'})"
            )
        if difference is not None:
            log.warning("trace %r: core messages unchanged, but %s", name, difference)
        return result

    def _core(self, trace: TraceLog) -> TraceLog:
        return trace.filter_messages(optional_messages=self.core_messages).reduce_log_to_messages()

    def _record(self, result: "TraceDeterminismTest.Result") -> None:
        if self.log_filename is None:
            return
        if result.reference_created:
            outcome = "reference created"
        elif result.first_difference is None:
            outcome = "unchanged"
        else:
            status = "passed" if result.success else "FAILED"
            outcome = f"{status}, {result.first_difference}"
        self.base_path.mkdir(parents=True, exist_ok=True)
        with open(self.base_path / self.log_filename, "a", encoding="utf-8") as file:
            file.write(f"{result.name}: {outcome}\n")
