"""Fixtures shared by the env-layer tests."""

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from test.env.toy_envs import Gate
from tianshou.env import BaseVectorEnv

MakeVenv = Callable[..., BaseVectorEnv]


@pytest.fixture
def make_venv() -> Iterator[MakeVenv]:
    """Build vector envs that are closed after the test, whatever happens in it."""
    created: list[BaseVectorEnv] = []

    def make(cls: type[BaseVectorEnv], env_fns: list, **kwargs: Any) -> BaseVectorEnv:
        venv = cls(env_fns, **kwargs)
        created.append(venv)
        return venv

    yield make
    for venv in created:
        venv.close()


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    """An open :class:`Gate` for :class:`~test.env.toy_envs.GatedEnv`; opened again afterwards."""
    made = Gate(str(tmp_path))
    yield made
    made.open()  # envs still waiting at it (a failed test) go on and can be closed
