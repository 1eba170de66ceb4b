"""``retain_freed_host_memory`` stops the allocator from faulting freed memory in again; the
trainers apply it unless their params switch it off, and the first change is announced.

The page-fault test runs in fresh subprocesses, because the settings are process-wide and the
test process may already have them (any trainer test applies them). The other tests replace
glibc's ``mallopt`` by a recorder, so that they see which calls would have changed the allocator.
"""

import ctypes
import logging
import os
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from test.trainer.test_trainer import off_policy_setup
from tianshou.trainer import trainer_base
from tianshou.utils import host_memory
from tianshou.utils.host_memory import OPT_OUT_VARIABLE, retain_freed_host_memory

GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Frees 20 MiB once (which raises glibc's adaptive thresholds to that size), then repeatedly
# allocates, touches and frees three 15 MiB blocks: with glibc's defaults the 45 MiB free at the
# top of the heap exceeds twice the threshold, is trimmed, and is faulted in again next time.
CHURN = """
import resource, sys
import numpy as np
from tianshou.utils.host_memory import retain_freed_host_memory
if sys.argv[1] == "retain":
    assert retain_freed_host_memory()
def churn():
    blocks = [np.ones(15 << 18, dtype=np.float32) for _ in range(3)]
    del blocks
big = np.ones(20 << 18, dtype=np.float32)
del big
churn(); churn()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    churn()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


def faults_per_churn(mode: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.pop(OPT_OUT_VARIABLE, None)
    env.pop("GLIBC_TUNABLES", None)
    env["PYTHONPATH"] = REPO
    result = subprocess.run(
        [sys.executable, "-c", CHURN, mode],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    return float(result.stdout.strip())


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in [OPT_OUT_VARIABLE, "GLIBC_TUNABLES", *host_memory._USER_SETTINGS]:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


class _RecordingMallopt:
    """Stands in for glibc's ``mallopt``: records ``(option, value)`` and reports success."""

    def __init__(self, calls: list[tuple[int, int]]) -> None:
        self.calls = calls
        self.argtypes: list[Any] = []
        self.restype: Any = None

    def __call__(self, option: int, value: int) -> int:
        self.calls.append((option, value))
        return 1


@pytest.fixture
def mallopt_calls(clean_environment: pytest.MonkeyPatch) -> Iterator[list[tuple[int, int]]]:
    """The ``mallopt`` calls made while the test runs (none reach glibc), in a clean
    environment, with the once-per-process announcement forgotten."""
    calls: list[tuple[int, int]] = []
    real_cdll: Callable[..., Any] = ctypes.CDLL

    class _Libc:
        mallopt = _RecordingMallopt(calls)

    def load(name: str, *args: Any, **kwargs: Any) -> Any:
        return _Libc() if name == "libc.so.6" else real_cdll(name, *args, **kwargs)

    clean_environment.setattr(host_memory.ctypes, "CDLL", load)
    host_memory._announce.cache_clear()
    yield calls
    host_memory._announce.cache_clear()


def announcements(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == host_memory.__name__ and r.levelno == logging.INFO
    ]


@pytest.mark.skipif(not GLIBC, reason="the thresholds exist in glibc's malloc only")
def test_freed_blocks_are_reused_instead_of_faulted_in_again() -> None:
    assert faults_per_churn("default") > 1000  # 45 MiB = 11,520 pages, most faulted again
    assert faults_per_churn("retain") < 20


@pytest.mark.skipif(not GLIBC, reason="the thresholds exist in glibc's malloc only")
def test_applies_on_glibc(clean_environment: pytest.MonkeyPatch) -> None:
    assert retain_freed_host_memory() is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (OPT_OUT_VARIABLE, "1"),
        ("MALLOC_TRIM_THRESHOLD_", "1048576"),
        ("MALLOC_MMAP_THRESHOLD_", "1048576"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"),
    ],
)
def test_leaves_the_settings_alone_when_told_or_already_chosen(
    clean_environment: pytest.MonkeyPatch, name: str, value: str
) -> None:
    clean_environment.setenv(name, value)
    assert retain_freed_host_memory() is False


@pytest.mark.skipif(not GLIBC, reason="the thresholds exist in glibc's malloc only")
def test_announces_the_first_change_once(
    mallopt_calls: list[tuple[int, int]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=host_memory.__name__)
    assert retain_freed_host_memory() is True
    assert retain_freed_host_memory() is True
    expected = [
        (host_memory._M_MMAP_THRESHOLD, host_memory.MMAP_THRESHOLD_BYTES),
        (host_memory._M_TRIM_THRESHOLD, host_memory.TRIM_THRESHOLD_BYTES),
    ]
    assert mallopt_calls == expected * 2
    [message] = announcements(caplog)
    assert "256 MiB" in message and "32 MiB" in message
    assert "retain_freed_host_memory=False" in message and f"{OPT_OUT_VARIABLE}=1" in message


def test_opt_out_variable_makes_no_mallopt_call(
    mallopt_calls: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=host_memory.__name__)
    monkeypatch.setenv(OPT_OUT_VARIABLE, "1")
    assert retain_freed_host_memory() is False
    assert mallopt_calls == []
    assert announcements(caplog) == []


def test_opt_out_variable_zero_does_not_opt_out(clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv(OPT_OUT_VARIABLE, "0")
    assert retain_freed_host_memory() is GLIBC


@pytest.mark.parametrize(
    "kwargs", [{"trim_threshold": 0}, {"mmap_threshold": -1}, {"trim_threshold": 2**31}]
)
def test_rejects_thresholds_that_are_not_positive_c_ints(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="positive C ints"):
        retain_freed_host_memory(**kwargs)


def test_trainers_apply_it_when_they_start(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[bool] = []
    monkeypatch.setattr(trainer_base, "retain_freed_host_memory", lambda: calls.append(True))
    trainer, _ = off_policy_setup()
    assert calls == []
    trainer.reset()
    assert calls == [True]


@pytest.mark.skipif(not GLIBC, reason="the thresholds exist in glibc's malloc only")
def test_trainer_runs_change_the_allocator_and_say_so_once(
    mallopt_calls: list[tuple[int, int]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=host_memory.__name__)
    for _ in range(2):
        trainer, _ = off_policy_setup(max_epochs=1)
        trainer.run()
    assert len(mallopt_calls) == 4  # both thresholds, in each run
    assert len(announcements(caplog)) == 1


def test_trainer_params_switch_it_off(
    mallopt_calls: list[tuple[int, int]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=host_memory.__name__)
    trainer, _ = off_policy_setup(max_epochs=1, retain_freed_host_memory=False)
    trainer.run()
    assert mallopt_calls == []
    assert announcements(caplog) == []


def test_opt_out_variable_still_switches_trainers_off(
    mallopt_calls: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(OPT_OUT_VARIABLE, "1")
    trainer, _ = off_policy_setup(max_epochs=1)
    assert trainer.params.retain_freed_host_memory  # the default: on
    trainer.run()
    assert mallopt_calls == []
