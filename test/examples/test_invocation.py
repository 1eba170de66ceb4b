"""Every example script runs three ways, from a fresh interpreter: as a file from any folder
(``python /path/to/examples/mujoco/mujoco_sac.py``), as a file from its own folder (``cd
examples/mujoco && python mujoco_sac.py``) and as a module from the repository root (``python -m
examples.mujoco.mujoco_sac``). Scripts import only from the installed ``tianshou`` package (and
third-party packages), never from ``examples`` or by editing the module search path, which is
what makes the first two ways work.

Running every script's ``--help`` three ways takes a few minutes (each start imports torch), so
that test is marked ``slow``; the static checks of the scripts' imports are instant.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"
SCRIPTS = sorted(path for path in EXAMPLES.rglob("*.py") if path.name != "__init__.py")


def script_id(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO_ROOT).with_suffix("").parts)


def test_there_are_scripts_of_every_family() -> None:
    families = {path.parent.name for path in SCRIPTS}
    assert {"atari", "discrete", "hpo", "mujoco", "offline", "pettingzoo", "pomdp"} <= families
    assert len(SCRIPTS) > 40


def imported_modules(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
    return names


@pytest.mark.parametrize("path", SCRIPTS, ids=script_id)
def test_script_imports_nothing_from_examples_and_leaves_the_search_path(path: Path) -> None:
    tree = ast.parse(path.read_text())
    from_examples = [
        name for name in imported_modules(tree) if name.split(".")[0] in ("examples", "")
    ]
    assert from_examples == [], "shared code belongs in the tianshou package"
    text = ast.unparse(tree)
    for edit in ("sys.path", "PYTHONPATH", "except ImportError", "except ModuleNotFoundError"):
        assert edit not in text, f"{edit} in {script_id(path)}"


def run_help(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv, "--help"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", SCRIPTS, ids=script_id)
def test_help_works_as_a_file_anywhere_in_its_folder_and_as_a_module(
    path: Path, tmp_path: Path
) -> None:
    ways = {
        "file, from another folder": ([str(path)], tmp_path),
        "file, from its folder": ([path.name], path.parent),
        "module, from the repository root": (["-m", module_name(path)], REPO_ROOT),
    }
    for way, (argv, cwd) in ways.items():
        done = run_help(argv, cwd)
        assert done.returncode == 0, f"{way}: {done.stderr[-2000:]}"
        assert done.stdout.startswith("usage: "), f"{way}: {done.stdout[:300]}"
        assert "--torch-threads N" in done.stdout, f"{way}: no --torch-threads"
