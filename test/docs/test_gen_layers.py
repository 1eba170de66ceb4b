"""``docs/gen_layers.py``: the package-layer graph drawn from a package's import statements."""

import shutil
from collections import Counter
from pathlib import Path

import pytest

from test.docs.conftest import REPO_ROOT, load_docs_script

gen_layers = load_docs_script("gen_layers")


def write_package(root: Path, files: dict[str, str]) -> None:
    """Write a package's source files, given as ``{relative path: text}``."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture
def toy_source(tmp_path: Path) -> Path:
    """A package ``toy`` with layers ``core``, ``algo`` and ``app`` and a module ``toy.config``."""
    write_package(
        tmp_path,
        {
            "toy/__init__.py": "from toy import core, algo\n",
            "toy/config.py": "",
            "toy/core/__init__.py": "from toy.core.batch import Batch\n",
            "toy/core/batch.py": "import numpy\nimport toy.config\n",
            "toy/algo/__init__.py": "",
            "toy/algo/policy.py": (
                "from typing import TYPE_CHECKING\n"
                "from toy.core import Batch\n"
                "from ..core.batch import Batch as B\n"
                "from . import helpers\n"
                "if TYPE_CHECKING:\n"
                "    from toy.app.run import Runner\n"
                "def late():\n"
                "    from toy import config\n"
            ),
            "toy/algo/helpers.py": "",
            "toy/app/run.py": "import toy.algo.policy\nfrom toy.core.batch import Batch\n",
        },
    )
    return tmp_path


def test_import_edges_count_imports_between_layers(toy_source: Path) -> None:
    runtime, typing_only = gen_layers.import_edges(toy_source, "toy")
    assert runtime == Counter(
        {
            ("toy.algo", "toy.core"): 2,  # absolute and relative; `from . import` stays inside
            ("toy.algo", "toy.config"): 1,  # an import inside a function runs too
            ("toy.core", "toy.config"): 1,
            ("toy.app", "toy.algo"): 1,
            ("toy.app", "toy.core"): 1,
        }
    )
    assert typing_only == Counter({("toy.algo", "toy.app"): 1})


def test_dot_draws_type_checking_imports_dashed_and_outside_the_ranking(toy_source: Path) -> None:
    dot = gen_layers.to_dot(*gen_layers.import_edges(toy_source, "toy"))
    assert '"toy.algo" -> "toy.core" [label="2"];' in dot
    typing_edge = next(line for line in dot.splitlines() if '"toy.algo" -> "toy.app"' in line)
    assert "style=dashed" in typing_edge and "constraint=false" in typing_edge


def test_layer_svg_of_tianshou_names_its_packages(tmp_path: Path) -> None:
    if shutil.which("dot") is None:
        pytest.fail("Graphviz's `dot` is not installed: run `make docs-deps`.")
    svg_path = tmp_path / "layers.svg"
    gen_layers.write_layer_svg(REPO_ROOT, "tianshou", svg_path)
    svg = svg_path.read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    assert ">tianshou.data</text>" in svg and ">tianshou.trainer</text>" in svg


def test_without_graphviz_matplotlib_draws_every_layer_in_import_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gen_layers.shutil, "which", lambda name: None)
    svg_path = tmp_path / "layers.svg"
    gen_layers.write_layer_svg(REPO_ROOT, "tianshou", svg_path)
    svg = svg_path.read_text()
    assert "<svg" in svg
    for package in ("tianshou.data", "tianshou.algorithm", "tianshou.trainer"):
        assert f">{package}</text>" in svg


def test_layer_ranks_put_importers_above_what_they_import(toy_source: Path) -> None:
    runtime, typing_only = gen_layers.import_edges(toy_source, "toy")
    ranks = gen_layers.layer_ranks(runtime, typing_only)
    assert ranks == {"toy.app": 0, "toy.algo": 1, "toy.core": 2, "toy.config": 3}
    # an import cycle is ranked too (one of its imports points up)
    runtime[("toy.core", "toy.app")] += 1
    cyclic = gen_layers.layer_ranks(runtime, typing_only)
    assert set(cyclic) == set(ranks) and len(set(cyclic.values())) == 4
