"""``benchmark/README.md`` and ``make bench`` stay true to the scripts: every script is in the
README's table and in ``make bench``, every row names a script, each script answers ``--help``,
and no benchmark module imports another's private name."""

import ast
import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARK = ROOT / "benchmark"
NOT_SCRIPTS = {
    "__init__",
    "common",
    "timing",
    "run_benchmark",
    "data_parallel_learning",
    "perf_guard",
    "mutations",
}
"""Modules that are no benchmark of ``make bench``: helpers, the learning campaigns (hours, not
speed) and the gates (``make perf-guard``, ``make mutations``)."""
SCRIPTS = sorted(
    path.stem
    for path in BENCHMARK.glob("*.py")
    if path.stem not in NOT_SCRIPTS and not path.stem.startswith("bare_")
)


def readme_rows() -> list[str]:
    """The script names in the first column of the README's table of scripts."""
    text = (BENCHMARK / "README.md").read_text()
    table = text.split("## The scripts", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE)


def test_the_readme_documents_exactly_the_scripts() -> None:
    assert sorted(readme_rows()) == SCRIPTS


def test_make_bench_runs_every_script() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nbench:", 1)[1].split("\n\n", 1)[0]
    assert sorted(re.findall(r"-m benchmark\.(\w+)", recipe)) == SCRIPTS


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_script_answers_help(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"benchmark.{name}")
    monkeypatch.setattr(sys, "argv", [f"benchmark.{name}", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        module.main()
    assert exit_info.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_no_module_imports_a_private_name_of_another() -> None:
    offences = []
    for path in BENCHMARK.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("benchmark"):
                offences += [
                    f"{path.relative_to(ROOT)}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
    assert offences == []
