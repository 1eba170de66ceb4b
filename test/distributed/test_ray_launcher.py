"""Data-parallel jobs launched through Ray Train: on a local Ray the replicas end bit-identical
and every rank's result comes back, a failing worker ends the job naming its rank and cause, and
a MuJoCo script trains with ``--launcher ray`` on a Ray cluster of two nodes."""

import json
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

from test.distributed.ranks import RANK_TIMEOUT_S
from test.distributed.test_rank_group import (
    PPO_EPOCH_ENV_STEPS,
    _assert_bit_identical,
    _fail_on_rank_1,
    _policy_changed,
    _train_ppo_replica,
)
from test.local_ray import fresh_local_ray, two_node_ray_cluster
from tianshou.distributed import DataParallel, data_parallel, launch_on_ray_train

REPO_ROOT = Path(__file__).resolve().parents[2]


def _on_ray_rank(rank_fn: Callable[..., None], *args: Any) -> int:
    """A Ray Train worker of a test: join the job as a rank, run ``rank_fn(ranks, *args)`` and
    return the rank."""
    torch.set_num_threads(1)
    with data_parallel("cpu", timeout_s=RANK_TIMEOUT_S) as ranks:
        assert isinstance(ranks, DataParallel)
        rank_fn(ranks, *args)
        return ranks.rank


@pytest.mark.slow
def test_two_ray_train_workers_train_bit_identical_ppo_replicas(tmp_path: Path) -> None:
    with fresh_local_ray(num_cpus=2):
        ranks = launch_on_ray_train(
            partial(_on_ray_rank, _train_ppo_replica, tmp_path),
            num_workers=2,
            timeout_s=RANK_TIMEOUT_S,
        )
    assert ranks == [0, 1]  # every rank's result, in rank order
    rank0, rank1 = (torch.load(tmp_path / f"{r}.pt", weights_only=False) for r in range(2))
    _assert_bit_identical(rank0["state"], rank1["state"], "state")
    _assert_bit_identical(rank0["obs_rms"], rank1["obs_rms"], "obs_rms")
    assert _policy_changed(rank0), "training left the policy unchanged"
    assert rank0["train_step"] == rank1["train_step"] == 2 * PPO_EPOCH_ENV_STEPS


@pytest.mark.slow
def test_a_failing_ray_train_worker_ends_the_job_naming_its_rank_and_the_cause() -> None:
    start = time.monotonic()
    with fresh_local_ray(num_cpus=2), pytest.raises(RuntimeError) as raised:
        launch_on_ray_train(partial(_on_ray_rank, _fail_on_rank_1), num_workers=2, timeout_s=20)
    assert time.monotonic() - start < 60
    assert "worker of rank 1: RuntimeError: rank 1 of 2 failed: RuntimeError: injected failure" in (
        str(raised.value)
    )


@pytest.mark.slow
def test_a_mujoco_script_trains_on_a_two_node_ray_cluster(tmp_path: Path) -> None:
    """Each node has one CPU and each worker takes one, so the two ranks run on two nodes."""
    with two_node_ray_cluster() as (address, env):
        done = subprocess.run(
            [
                *(sys.executable, "-m", "examples.mujoco.mujoco_ppo"),
                *("--launcher", "ray", "--num-workers", "2", "--ray-address", address),
                *("--task", "Pendulum-v1", "--epoch", "1", "--epoch-num-steps", "100"),
                *("--collection-step-num-env-steps", "50", "--num-training-envs", "1"),
                *("--num-test-envs", "1", "--hidden-sizes", "8", "--batch-size", "64"),
                *("--backend", "dummy", "--torch-threads", "1", "--no-progress"),
                *("--persistence-base-dir", str(tmp_path), "--device", "cpu"),
                *("--distributed-timeout", "20"),
            ],
            cwd=REPO_ROOT,
            env={**env, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "Pendulum-v1" / "ppo" / "0" / "result.json").read_text())
    assert result["env_steps"] == 100  # the epoch's env steps, collected by both workers
    assert result["update_steps"] == 100 // (2 * 50)  # each update learns from both workers
