"""Fixtures of the documentation tests: the site built once per test session, and the scripts.

The build takes about a minute, so every test of ``test/docs`` shares one: under pytest-xdist
the first worker to get the lock builds into a folder that all workers of the session see, and
the others wait for it and read its result.
"""

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS_DIR = REPO_ROOT / "docs"


@dataclass(frozen=True)
class BuiltSite:
    """The outcome of one ``sphinx-build -W --keep-going`` of ``docs/``.

    :param html_dir: the built HTML site.
    :param returncode: sphinx-build's exit status (non-zero on any warning).
    :param output: what sphinx-build printed, to show when the build failed.
    """

    html_dir: Path
    returncode: int
    output: str


def load_docs_script(name: str) -> ModuleType:
    """Import one of the scripts of ``docs/`` (not a package) by its file path; ``docs/`` is on
    the module path meanwhile, for the helper modules the scripts import (as in ``conf.py``)."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(DOCS_DIR))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(DOCS_DIR))
    return module


def build_site(out_dir: Path) -> BuiltSite:
    """Run the build of ``make docs`` (warnings as errors) into ``out_dir / "html"``."""
    if importlib.util.find_spec("sphinx") is None:
        pytest.fail("Sphinx is not installed: install the `docs` extra (`make install` does).")
    html_dir = out_dir / "html"
    command = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
    command += ["-d", str(out_dir / "doctrees"), str(DOCS_DIR), str(html_dir)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    return BuiltSite(html_dir, result.returncode, result.stdout + result.stderr)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    """The site, built once per test session however many xdist workers share it."""
    session_dir = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session_dir = session_dir.parent  # shared by this session's workers
    site_dir = session_dir / "docs-site"
    site_dir.mkdir(exist_ok=True)
    result_file = site_dir / "result.json"
    with (site_dir / "build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not result_file.exists():
            shutil.rmtree(site_dir / "html", ignore_errors=True)
            site = build_site(site_dir)
            result_file.write_text(
                json.dumps({"returncode": site.returncode, "output": site.output})
            )
    result = json.loads(result_file.read_text())
    return BuiltSite(site_dir / "html", result["returncode"], result["output"])
