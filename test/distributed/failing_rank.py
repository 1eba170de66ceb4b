"""A rank program for torchrun whose rank 1 fails after the first exchange (see
``test_process_group.py``): it raises, or with ``--kill`` it is killed (SIGKILL, no chance to
say why)::

    torchrun --nproc-per-node 2 -m test.distributed.failing_rank [--kill]
"""

import os
import signal
import sys

from tianshou.distributed import data_parallel

if __name__ == "__main__":
    with data_parallel("cpu", timeout_s=20) as ranks:
        ranks.sum_collection(1, 0, False)
        if ranks.rank == 1:
            if "--kill" in sys.argv:
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("injected failure")
        ranks.sum_collection(1, 0, False)  # waits for rank 1, which has died
