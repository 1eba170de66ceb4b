"""A rank program for torchrun whose rank 1 raises after the first exchange (see
``test_process_group.py``): ``torchrun --nproc-per-node 2 -m test.distributed.failing_rank``."""

from tianshou.distributed import data_parallel

if __name__ == "__main__":
    with data_parallel("cpu", timeout_s=20) as ranks:
        ranks.sum_collection(1, 0, False)
        if ranks.rank == 1:
            raise RuntimeError("injected failure")
        ranks.sum_collection(1, 0, False)  # waits for rank 1, which has died
