"""``retain_freed_host_memory`` stops the allocator from faulting freed memory in again.

The page-fault test runs in fresh subprocesses, because the settings are process-wide and the
test process may already have them (any trainer test applies them).
"""

import os
import platform
import subprocess
import sys

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
