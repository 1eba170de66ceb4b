"""Fixtures shared by the env-layer tests."""

from collections.abc import Callable, Iterator
from typing import Any

import pytest

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
