"""Local Ray for the tests: a fresh Ray instance in the test's process, or a cluster of two
nodes started with the ``ray`` command."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RAY = Path(sys.executable).parent / "ray"


@contextmanager
def fresh_local_ray(num_cpus: int) -> Iterator[Any]:
    """A local Ray of ``num_cpus`` CPUs, without dashboard or worker logs, for the block; a Ray
    left running by an earlier test (e.g. a ``RayVectorEnv`` test in this worker) is shut down
    first. Yields the ``ray`` module."""
    import ray

    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    ports = [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()
    return ports


def _node_ports() -> list[str]:
    """Options giving a node's servers free ports (two nodes share this machine)."""
    names = ["dashboard-agent-listen-port", "dashboard-agent-grpc-port", "runtime-env-agent-port"]
    names += ["metrics-export-port", "node-manager-port", "object-manager-port"]
    return [f"--{name}={port}" for name, port in zip(names, _free_ports(len(names)), strict=True)]


@contextmanager
def two_node_ray_cluster() -> Iterator[tuple[str, dict[str, str]]]:
    """A 2-node Ray cluster on this machine (``ray start --head`` and ``ray start --address``),
    one CPU each, for the block: its address and the environment to reach it with. Each node
    runs in its own process group, which is killed on leaving, also after a failure."""
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    temp_dir = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # unix socket paths must be short
    port, client_port = _free_ports(2)
    address = f"127.0.0.1:{port}"
    common = ["--num-cpus=1", "--disable-usage-stats", "--block"]
    head = [str(RAY), "start", "--head", f"--port={port}", f"--temp-dir={temp_dir}"]
    head += ["--include-dashboard=false", f"--ray-client-server-port={client_port}"]
    worker = [str(RAY), "start", f"--address={address}", *common, *_node_ports()]
    nodes = [  # the worker node retries until the head is up
        subprocess.Popen(command, env=env, start_new_session=True)
        for command in ([*head, *common, *_node_ports()], worker)
    ]
    try:
        _wait_for_nodes(address, env, 2)
        yield address, env
    finally:
        _stop_groups(nodes)
        shutil.rmtree(temp_dir, ignore_errors=True)


def _wait_for_nodes(address: str, env: dict[str, str], count: int) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        status = subprocess.run(
            [str(RAY), "status", f"--address={address}"], env=env, capture_output=True, text=True
        ).stdout
        active = status.split("Active:")[-1].split("Pending:")[0]
        if active.count("node_") >= count:
            return
        time.sleep(1)
    raise TimeoutError(f"the Ray cluster at {address} did not reach {count} nodes")


def _stop_groups(processes: list[subprocess.Popen[bytes]]) -> None:
    """End each process's group: SIGTERM, a few seconds' grace, then SIGKILL."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signum)
        for process in processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(5)
