"""Test-session settings shared by the test suite and the doctests of README.md and docs/.

pytest-xdist runs one worker per core; torch's default of one intra-op thread per core would
then put several threads on each core and slow every worker down (learning tests most of all).
One torch thread per worker keeps the cores busy without oversubscribing them.
"""

import torch


def pytest_configure() -> None:
    torch.set_num_threads(1)
