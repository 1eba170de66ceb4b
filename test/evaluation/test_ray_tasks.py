"""The Ray core of the launchers: directories packed and unpacked, joining or starting Ray, and
tasks run at most so many at once, each outcome handed over as it ends, the rest cancelled when
the caller stops."""

import io
import os
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from test.local_ray import fresh_local_ray
from tianshou.evaluation.ray_tasks import pack_dir, ray_connection, run_tasks, unpack_dir


def test_pack_and_unpack_directory(tmp_path: Path) -> None:
    source = tmp_path / "run"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "a.txt").write_text("alpha")
    (source / "b.bin").write_bytes(b"\x00\x01")
    archive = pack_dir(source)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        assert {"./sub/a.txt", "./b.bin"} <= set(tar.getnames())
    target = tmp_path / "copy" / "run"
    unpack_dir(archive, target)
    assert (target / "sub" / "a.txt").read_text() == "alpha"
    assert (target / "b.bin").read_bytes() == b"\x00\x01"


def test_unpacking_refuses_files_outside_the_directory(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        entry = tarfile.TarInfo("../escaped.txt")
        entry.size = 2
        tar.addfile(entry, io.BytesIO(b"hi"))
    with pytest.raises(tarfile.OutsideDestinationError):
        unpack_dir(buffer.getvalue(), tmp_path / "target")
    assert not (tmp_path / "escaped.txt").exists()


def test_ray_is_joined_or_started_and_left_only_if_this_block_did(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ray

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", lambda **kwargs: calls.append(kwargs))
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append({"shutdown": True}))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with ray_connection():
        pass
    with ray_connection(local_num_cpus=2, log_to_driver=False):
        pass
    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    with ray_connection(local_num_cpus=2, runtime_env={"working_dir": "."}):
        pass
    with ray_connection(address="auto"):
        pass
    shutdown = {"shutdown": True}
    assert calls == [
        {"num_cpus": os.cpu_count(), "include_dashboard": False},
        shutdown,
        {"num_cpus": 2, "include_dashboard": False, "log_to_driver": False},
        shutdown,
        {"address": "ray://head:10001", "runtime_env": {"working_dir": "."}},
        shutdown,
        {"address": "auto"},
        shutdown,
    ]
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    with ray_connection(address="auto"):
        pass
    assert len(calls) == 8, "an existing connection is used as it is, not replaced or left"


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    with fresh_local_ray(num_cpus=1) as ray:
        yield ray


def square_or_fail(x: int) -> int:
    if x < 0:
        raise ValueError(f"deliberate failure on {x}")
    return x * x


def sleep_then_return(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_each_outcome_arrives_with_its_index(local_ray: Any) -> None:
    outcomes: dict[int, Any] = {}
    run_tasks(square_or_fail, [(3,), (-1,), (4,)], outcomes.__setitem__)
    assert outcomes[0] == 9 and outcomes[2] == 16
    assert isinstance(outcomes[1], local_ray.exceptions.RayTaskError)
    assert "deliberate failure on -1" in str(outcomes[1])


def test_arguments_are_read_only_when_a_task_can_start(local_ray: Any) -> None:
    read: list[int] = []
    done: list[int] = []

    def arguments() -> Iterator[tuple[int]]:
        for x in range(4):
            read.append(x)
            yield (x,)

    def on_done(index: int, outcome: Any) -> None:
        assert len(read) == len(done) + 1, "one task in flight at a time"
        done.append(outcome)

    run_tasks(square_or_fail, arguments(), on_done, num_cpus=0.25, max_concurrent=1)
    assert done == [0, 1, 4, 9]
    with pytest.raises(ValueError, match="max_concurrent"):
        run_tasks(square_or_fail, [(1,)], on_done, max_concurrent=0)


def test_tasks_still_running_are_cancelled_when_the_caller_stops(
    local_ray: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cancelled: list[tuple[Any, bool]] = []
    cancel = local_ray.cancel

    def record_and_cancel(ref: Any, force: bool) -> None:
        cancelled.append((ref, force))
        cancel(ref, force=force)

    monkeypatch.setattr(local_ray, "cancel", record_and_cancel)

    def stop(index: int, outcome: Any) -> None:
        assert index == 0
        raise KeyboardInterrupt

    start = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        run_tasks(sleep_then_return, [(0.0,), (30.0,)], stop, num_cpus=0.5)
    assert time.perf_counter() - start < 25, "the long task was not waited for"
    assert [force for _, force in cancelled] == [True], "the long task alone was cancelled"
