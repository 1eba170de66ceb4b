"""Importing an example module changes no process-wide setting.

Each family's modules are imported in a fresh interpreter, started from the repository root as
``python -m examples...`` would be. The third-party modules they import are imported first,
before the reference snapshot, so that what a dependency does on import (gymnasium's or
pettingzoo's own warning filters, say) is not blamed on the example; then every example module
is imported in turn and the module search path, torch's thread count, the root logger's handlers
and level, the warning filters and the environment variables are compared with the snapshot.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"

PROBE = r"""
import importlib, json, logging, os, sys, warnings

import torch

first_party, modules = json.loads(sys.argv[1])
for name in first_party:
    importlib.import_module(name)


def snapshot():
    return {
        "sys.path": list(sys.path),
        "torch threads": torch.get_num_threads(),
        "root handlers": [repr(handler) for handler in logging.root.handlers],
        "root level": logging.root.level,
        "warnings.filters": [repr(entry) for entry in warnings.filters],
        "os.environ": dict(os.environ),
    }


reference = snapshot()
changes = {}
for name in modules:
    importlib.import_module(name)
    now = snapshot()
    changed = sorted(key for key in reference if now[key] != reference[key])
    if changed:
        changes[name] = changed
        reference = now  # blame each change on the module that made it, once
print(json.dumps(changes))
"""


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _family_modules(family: Path) -> list[str]:
    files = sorted(family.glob("*.py")) if family != EXAMPLES else sorted(EXAMPLES.glob("*.py"))
    return [_module_name(path) for path in files]


def _third_party_imports(modules: list[str]) -> list[str]:
    """The top-level modules that ``modules`` import, other than the examples themselves."""
    names: set[str] = set()
    for module in modules:
        path = REPO_ROOT / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return sorted(name for name in names if name.split(".")[0] != "examples")


FAMILIES = [
    EXAMPLES,
    *sorted(path for path in EXAMPLES.iterdir() if (path / "__init__.py").exists()),
]


def test_every_example_module_is_covered() -> None:
    covered = {module for family in FAMILIES for module in _family_modules(family)}
    on_disk = {_module_name(path) for path in EXAMPLES.rglob("*.py")}
    assert covered == on_disk
    assert len(on_disk) > 50


@pytest.mark.parametrize("family", FAMILIES, ids=lambda path: path.name)
def test_importing_examples_changes_no_setting(family: Path) -> None:
    modules = _family_modules(family)
    probe = json.dumps([_third_party_imports(modules), modules])
    done = subprocess.run(
        [sys.executable, "-c", PROBE, probe],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    changes = json.loads(done.stdout.strip().splitlines()[-1])
    assert changes == {}, f"importing these modules changed process-wide settings: {changes}"


def test_the_probe_notices_a_module_that_changes_settings(tmp_path: Path) -> None:
    """The check itself can fail: each kind of change a module makes on import is reported."""
    (tmp_path / "meddling.py").write_text(
        "import logging, os, sys, warnings\nimport torch\n\n"
        "sys.path.append('/nowhere')\ntorch.set_num_threads(1)\nlogging.basicConfig()\n"
        "warnings.simplefilter('ignore')\nos.environ['MUJOCO_GL'] = 'egl'\n"
    )
    (tmp_path / "polite.py").write_text("import torch\n")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps([["torch"], ["polite", "meddling"]])],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(tmp_path), "OMP_NUM_THREADS": "2", "PATH": ""},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        "meddling": ["os.environ", "root handlers", "sys.path", "torch threads", "warnings.filters"]
    }
