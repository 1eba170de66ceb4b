"""Joining a job as a rank: through torchrun (the documented launch), and the device of a rank."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as dist

from test.distributed.ranks import free_port
from tianshou.distributed import SINGLE_PROCESS, current_rank_group, data_parallel, rank_device

REPO_ROOT = Path(__file__).resolve().parents[2]


def _torchrun(*args: str, timeout: float) -> subprocess.CompletedProcess:
    command = [
        *(sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"),
        *("--master-port", str(free_port()), *args),
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run(
        command, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.slow
def test_torchrun_ends_the_job_of_a_failing_rank_naming_it_and_the_cause() -> None:
    start = time.monotonic()
    done = _torchrun("-m", "test.distributed.failing_rank", timeout=60)
    assert done.returncode != 0
    assert time.monotonic() - start < 45
    # both ranks' errors name the first failure, rank 1's
    assert done.stderr.count("rank 1 of 2 failed: RuntimeError: injected failure") >= 2


@pytest.mark.slow
def test_torchrun_ends_the_job_of_a_killed_rank_naming_it_as_the_root_cause() -> None:
    start = time.monotonic()
    done = _torchrun("-m", "test.distributed.failing_rank", "--kill", timeout=60)
    assert done.returncode != 0
    assert time.monotonic() - start < 45
    root_cause = done.stderr.split("Root Cause", 1)[1]
    assert "rank      : 1" in root_cause
    assert "SIGKILL" in root_cause


@pytest.mark.slow
def test_torchrun_trains_a_mujoco_script_on_two_ranks_and_rank_0_reports(tmp_path: Path) -> None:
    done = _torchrun(
        *("-m", "examples.mujoco.mujoco_ppo", "--distributed", "--distributed-timeout", "20"),
        *("--task", "Pendulum-v1", "--epoch", "2", "--epoch-num-steps", "200"),
        *("--collection-step-num-env-steps", "50", "--num-training-envs", "2"),
        *("--num-test-envs", "1", "--hidden-sizes", "8", "--batch-size", "64"),
        *("--backend", "dummy", "--torch-threads", "1", "--no-progress"),
        *("--persistence-base-dir", str(tmp_path), "--device", "cpu"),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    run_dir = tmp_path / "Pendulum-v1" / "ppo" / "0"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["env_steps"] == 2 * 200  # two epochs of 200 env steps of both ranks together
    assert result["update_steps"] == 2 * 200 // (2 * 50)  # each update learns from both ranks
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 1  # only rank 0 logs


def test_cuda_means_the_gpu_of_the_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert rank_device("cuda") == torch.device("cuda", 3)
    assert rank_device("cuda:1") == torch.device("cuda", 1)
    assert rank_device("cpu") == torch.device("cpu")


@pytest.mark.slow
def test_two_torchrun_nodes_meet_by_rendezvous_and_train_together(tmp_path: Path) -> None:
    endpoint = f"127.0.0.1:{free_port()}"
    node_command = [
        *(sys.executable, "-m", "torch.distributed.run", "--nnodes", "2"),
        *("--nproc-per-node", "1", "--rdzv-backend", "c10d", "--rdzv-endpoint", endpoint),
        *("--rdzv-id", "two-nodes", "-m", "examples.mujoco.mujoco_sac", "--distributed"),
        *("--task", "Pendulum-v1", "--epoch", "1", "--epoch-num-steps", "100"),
        *("--start-timesteps", "50", "--num-training-envs", "1", "--num-test-envs", "1"),
        *("--hidden-sizes", "8", "--batch-size", "16", "--backend", "dummy"),
        *("--torch-threads", "1", "--no-progress", "--device", "cpu"),
        *("--persistence-base-dir", str(tmp_path), "--distributed-timeout", "20"),
        "--save-checkpoints",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    nodes = [
        subprocess.Popen(node_command, cwd=REPO_ROOT, env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    errors = [node.communicate(timeout=120)[1] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], errors
    run_dir = tmp_path / "Pendulum-v1" / "sac" / "0"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["env_steps"] == 100  # the epoch's env steps, collected by both nodes
    # rank 0's checkpoint holds the shared state, and each rank saved its own replay buffer
    saved = sorted(os.listdir(run_dir / "checkpoint"))
    assert {"policy.pth", "buffer.hdf5", "buffer.rank1.hdf5"} <= set(saved), saved


def test_a_process_group_set_up_before_is_joined_and_left_in_place(tmp_path: Path) -> None:
    """As in a Ray Train worker, whose process group Ray Train initialises and destroys."""
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        with data_parallel("cpu", timeout_s=5) as ranks:
            assert (ranks.rank, ranks.world_size) == (0, 1)
            assert current_rank_group() is ranks
        assert dist.is_initialized()
        assert current_rank_group() is SINGLE_PROCESS
    finally:
        dist.destroy_process_group()
