"""``docs/gen_api.py``: which page documents each public module and exported object."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from test.docs.conftest import load_docs_script

gen_api = load_docs_script("gen_api")

PACKAGE = "gen_api_toy"


@pytest.fixture
def toy_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An importable package: a private module whose class the package exports, a public
    module, a private module nobody exports, and a subpackage."""
    files = {
        "__init__.py": (
            "from gen_api_toy._impl import Engine, build\n__all__ = ['Engine', 'build']\n"
        ),
        "_impl.py": "class Engine:\n    pass\ndef build() -> Engine:\n    return Engine()\n",
        "_hidden.py": "class Hidden:\n    pass\n",
        "tools.py": (
            "from gen_api_toy._impl import Engine\n"
            "from gen_api_toy._hidden import Hidden\n"
            "class Wrench:\n    pass\n"
            "def helper() -> None:\n    pass\n"
        ),
        "sub/__init__.py": "",
        "sub/parts.py": "class Part:\n    pass\n",
    }
    for relative, text in files.items():
        path = tmp_path / PACKAGE / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield PACKAGE
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
        del sys.modules[name]


def test_plan_places_modules_and_exported_private_objects(toy_package: str) -> None:
    pages, documented = gen_api.plan_pages(toy_package)
    assert sorted(pages) == [PACKAGE, f"{PACKAGE}.sub"]
    top = pages[PACKAGE]
    assert top.modules == [f"{PACKAGE}.tools"]
    assert top.subpackages == [f"{PACKAGE}.sub"]
    assert top.exported == {PACKAGE: [f"{PACKAGE}.Engine", f"{PACKAGE}.build"]}
    assert pages[f"{PACKAGE}.sub"].modules == [f"{PACKAGE}.sub.parts"]
    # a private module's object is documented under its public name; tools' imports are not its
    assert documented[f"{PACKAGE}._impl.Engine"] == f"{PACKAGE}.Engine"
    assert documented[f"{PACKAGE}.tools.Wrench"] == f"{PACKAGE}.tools.Wrench"
    assert f"{PACKAGE}._hidden.Hidden" not in documented


def test_written_page_uses_automodule_and_autoclass(toy_package: str, tmp_path: Path) -> None:
    out_dir = tmp_path / "api"
    gen_api.write_api_pages(toy_package, out_dir)
    assert sorted(p.name for p in out_dir.iterdir()) == [f"{PACKAGE}.rst", f"{PACKAGE}.sub.rst"]
    page = (out_dir / f"{PACKAGE}.rst").read_text()
    assert page.startswith(f"{PACKAGE}\n{'=' * len(PACKAGE)}\n")
    assert f".. autoclass:: {PACKAGE}.Engine" in page
    assert f".. autofunction:: {PACKAGE}.build" in page
    assert f".. automodule:: {PACKAGE}.tools\n   :members:" in page
    assert ":ignore-module-all:" in page
    assert f"   {PACKAGE}.sub" in page  # the subpackage's page is in the toctree


def test_only_changed_pages_are_rewritten(
    toy_package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sphinx re-reads a page whose file changed, so unchanged pages must keep their mtime."""
    out_dir = tmp_path / "api"
    gen_api.write_api_pages(toy_package, out_dir)
    stale = out_dir / f"{PACKAGE}.sub.rst"
    stale.write_text("outdated")
    written: list[str] = []
    original_write = Path.write_text

    def recording_write(path: Path, text: str) -> int:
        written.append(path.name)
        return original_write(path, text)

    monkeypatch.setattr(Path, "write_text", recording_write)
    gen_api.write_api_pages(toy_package, out_dir)
    assert written == [f"{PACKAGE}.sub.rst"]
    assert stale.read_text().startswith(f"{PACKAGE}.sub\n")
