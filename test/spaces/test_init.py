"""The spaces package sits below the algorithms and the collectors, which both import it."""

import pkgutil

import pytest

import tianshou.spaces
from test.import_graph import reachable_imports

SPACES_MODULES = sorted(
    f"tianshou.spaces.{info.name}" for info in pkgutil.iter_modules(tianshou.spaces.__path__)
)
ABOVE_SPACES = ("tianshou.algorithm", "tianshou.data.collector", "tianshou.highlevel")


def test_the_package_names_each_of_its_modules() -> None:
    assert SPACES_MODULES == [
        "tianshou.spaces.dict_observations",
        "tianshou.spaces.masks",
        "tianshou.spaces.product_distributions",
    ]
    assert tianshou.spaces.__doc__ is not None
    assert all(f":mod:`{name}`" in tianshou.spaces.__doc__ for name in SPACES_MODULES)


@pytest.mark.parametrize("module", SPACES_MODULES)
def test_a_spaces_module_reaches_no_algorithm_collector_or_high_level_module(module: str) -> None:
    above = [m for m in reachable_imports(module, within="tianshou") if m.startswith(ABOVE_SPACES)]
    assert above == []
