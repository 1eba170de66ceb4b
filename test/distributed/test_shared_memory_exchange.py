"""The shared-memory gradient exchange of ranks on one machine, on real processes: the same mean
as gloo's all-reduce, every rank alike, and a clear error (never a hang) when a rank is missing,
differs, fails or hangs."""

import os
import time
from pathlib import Path

import gymnasium as gym
import pytest
import torch
import torch.distributed as dist

from test.distributed.ranks import run_ranks
from tianshou.algorithm import DQN
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.distributed import DataParallel
from tianshou.distributed import shared_memory_exchange as shm
from tianshou.distributed.failure_record import failure_report, recorded_failure
from tianshou.distributed.shared_memory_exchange import SharedMemoryExchange
from tianshou.utils.net.common import Net

pytestmark = pytest.mark.skipif(
    not shm.shared_memory_supported(), reason="needs x86-64 Linux with /dev/shm"
)

CAPACITY_BYTES = 8 * 4096


def _open(timeout_s: float = 20.0) -> SharedMemoryExchange:
    exchange = SharedMemoryExchange.open(CAPACITY_BYTES, timeout_s, recorded_failure)
    assert exchange is not None
    return exchange


def _means_match_all_reduce(ranks: DataParallel, steps: int) -> None:
    exchange = _open()
    if ranks.rank == 1:
        # rank 1 reads each step's slots late, while the others have moved on to the next step
        check = exchange._check_same_shapes

        def late_check(flat: torch.Tensor, generation: int) -> None:
            time.sleep(0.001)
            check(flat, generation)

        exchange._check_same_shapes = late_check  # type: ignore[method-assign]
    shared = torch.Generator().manual_seed(0)  # the same sizes and types on every rank
    own = torch.Generator().manual_seed(100 + ranks.rank)
    inputs, means = [], []
    for step in range(steps):  # a burst of exchanges, no other collective in between
        numel = int(torch.randint(1, 4096, (1,), generator=shared))
        dtype = torch.float64 if step % 3 == 0 else torch.float32
        inputs.append(torch.randn(numel, generator=own, dtype=dtype) * (1 + ranks.rank))
        means.append(inputs[-1].clone())
        assert exchange.mean_(means[-1])
    exchange.close()
    for step, (local, averaged) in enumerate(zip(inputs, means, strict=True)):
        reduced = local.clone()
        dist.all_reduce(reduced)
        reduced /= ranks.world_size
        if ranks.world_size == 2:
            assert torch.equal(averaged, reduced), step
        else:  # gloo's order of summing differs from the exchange's rank order
            torch.testing.assert_close(averaged, reduced)
        every_ranks = [torch.empty_like(averaged) for _ in range(ranks.world_size)]
        dist.all_gather(every_ranks, averaged)
        assert all(torch.equal(averaged, other) for other in every_ranks), step


@pytest.mark.parametrize("world_size", [2, 3])
def test_the_mean_is_the_all_reduce_mean_and_the_same_on_every_rank(world_size: int) -> None:
    run_ranks(_means_match_all_reduce, world_size, 300)


def _gathers_match_all_gather(ranks: DataParallel) -> None:
    exchange = _open()
    local = [torch.tensor([step, ranks.rank, 7 * step + ranks.rank]) for step in range(50)]
    gathered = [exchange.all_gather(values) for values in local]  # a burst, interleaved with
    exchange.mean_(torch.ones(3))  # a mean in the same slots
    exchange.close()
    for values, every_ranks in zip(local, gathered, strict=True):
        expected = [torch.empty_like(values) for _ in range(ranks.world_size)]
        dist.all_gather(expected, values)
        assert every_ranks is not None and torch.equal(every_ranks, torch.stack(expected))


def test_all_gather_stacks_every_ranks_tensor_in_rank_order() -> None:
    run_ranks(_gathers_match_all_gather, 3)


def _large_tensor_is_left_alone(ranks: DataParallel) -> None:
    exchange = _open()
    large = torch.ones(CAPACITY_BYTES // 4 + 1)
    assert not exchange.mean_(large)
    assert torch.equal(large, torch.ones_like(large))
    booleans = torch.ones(4, dtype=torch.bool)
    assert not exchange.mean_(booleans)
    exchange.close()


def test_a_tensor_larger_than_a_slot_or_not_floating_is_left_to_the_process_group() -> None:
    run_ranks(_large_tensor_is_left_alone, 2)


def _sizes_differ(ranks: DataParallel) -> None:
    exchange = _open()
    with pytest.raises(RuntimeError, match=r"different sizes .*elements by rank: \[3, 4\]"):
        exchange.mean_(torch.ones(3 + ranks.rank))
    exchange.close()


def test_ranks_averaging_tensors_of_different_sizes_fail_naming_the_sizes() -> None:
    run_ranks(_sizes_differ, 2)


def _rank_1_exits(ranks: DataParallel, report: Path) -> None:
    exchange = _open()
    if ranks.rank == 1:
        os._exit(0)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as raised:
        exchange.mean_(torch.ones(8))
    report.write_text(f"{time.monotonic() - start:.3f}\n{raised.value}")


def test_a_rank_that_exits_while_another_waits_is_named_within_seconds(tmp_path: Path) -> None:
    report = tmp_path / "report"
    run_ranks(_rank_1_exits, 2, report)
    waited, message = report.read_text().split("\n", 1)
    assert float(waited) < 5.0  # a tenth of a second when the machine is not overloaded
    assert "rank 1 (pid" in message and "exited while rank 0 waited" in message


def _rank_1_fails_and_stays(ranks: DataParallel, released: Path) -> None:
    exchange = _open()
    if ranks.rank == 1:
        failure_report(1, 2, ValueError("injected failure"))
        deadline = time.monotonic() + 30
        while not released.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return
    with pytest.raises(RuntimeError, match="rank 1 of 2 failed: ValueError: injected failure"):
        exchange.mean_(torch.ones(8))
    released.touch()


def test_a_rank_that_recorded_a_failure_ends_the_others_wait(tmp_path: Path) -> None:
    run_ranks(_rank_1_fails_and_stays, 2, tmp_path / "released")


def _rank_1_hangs(ranks: DataParallel) -> None:
    exchange = _open(timeout_s=1.0)
    if ranks.rank == 1:
        time.sleep(2.5)
        return
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"waited 1 s for the gradients of ranks \[1\]"):
        exchange.mean_(torch.ones(8))
    assert time.monotonic() - start < 5.0


def test_a_rank_that_hangs_ends_the_others_wait_after_the_timeout() -> None:
    run_ranks(_rank_1_hangs, 2)


def _one_rank_cannot_take_part(ranks: DataParallel, reason: str) -> None:
    if ranks.rank == 1 and reason == "unsupported":
        shm.shared_memory_supported = lambda: False  # as on another kind of machine
    if ranks.rank == 1 and reason == "another /dev/shm":
        shm._map_file = lambda announced, size: None  # the file is not there, or not the same
    assert SharedMemoryExchange.open(CAPACITY_BYTES, 20.0, recorded_failure) is None


@pytest.mark.parametrize("reason", ["unsupported", "another /dev/shm"])
def test_no_rank_uses_shared_memory_unless_every_rank_can(reason: str) -> None:
    run_ranks(_one_rank_cannot_take_part, 2, reason)


def _attach_and_check(ranks: DataParallel) -> None:
    env = gym.make("CartPole-v1")
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[8])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space)
    algorithm = DQN(policy=policy, optim=AdamOptimizerFactory())
    assert ranks.gradient_averaging == "all_reduce"
    ranks.attach(algorithm)
    assert ranks.gradient_averaging == "shared_memory"
    ranks.close()
    assert ranks.gradient_averaging == "all_reduce"


def test_cpu_replicas_on_one_machine_average_through_shared_memory() -> None:
    run_ranks(_attach_and_check, 2)
