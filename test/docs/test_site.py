"""The documentation site of ``make docs``: it builds with warnings as errors, holds the guides,
the full API reference, the benchmark, changelog, search and layer pages, and renders in a
headless browser."""

import importlib
import inspect
import pkgutil
import re
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

import tianshou
from test.docs.conftest import DOCS_DIR, REPO_ROOT, BuiltSite

BROWSER_TIMEOUT_S = 120


def public_module_names() -> list[str]:
    """Every module of tianshou whose dotted path has no ``_``-prefixed part."""
    names = ["tianshou"]
    for info in pkgutil.walk_packages(tianshou.__path__, prefix="tianshou."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


def documented_python_objects(html_dir: Path) -> dict[str, str]:
    """The Python objects of the site's ``objects.inv``: ``{dotted name: role}``."""
    raw = (html_dir / "objects.inv").read_bytes()
    header_end = 0
    for _ in range(4):  # four text lines, then the zlib-compressed entries
        header_end = raw.index(b"\n", header_end) + 1
    entries = {}
    for line in zlib.decompress(raw[header_end:]).decode().splitlines():
        name, role = line.split(" ", 2)[:2]
        if role.startswith("py:"):
            entries[name] = role
    return entries


def object_at(dotted: str) -> object | None:
    """The object a documented name refers to, importing the longest module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute, None)
        return obj
    return None


def test_site_builds_with_warnings_as_errors(built_site: BuiltSite) -> None:
    assert built_site.returncode == 0, f"sphinx-build -W failed:\n{built_site.output}"
    assert (built_site.html_dir / "index.html").is_file()


def test_every_public_package_has_an_api_page(built_site: BuiltSite) -> None:
    packages = [n for n in public_module_names() if hasattr(importlib.import_module(n), "__path__")]
    assert {"tianshou.data", "tianshou.algorithm", "tianshou.highlevel"} <= set(packages)
    missing = [
        name for name in packages if not (built_site.html_dir / f"api/{name}.html").is_file()
    ]
    assert missing == []


def test_every_public_class_and_function_is_documented(built_site: BuiltSite) -> None:
    documented = {
        id(obj)
        for name, role in documented_python_objects(built_site.html_dir).items()
        if role in ("py:class", "py:function", "py:exception")
        and (obj := object_at(name)) is not None
    }
    undocumented = []
    for module_name in public_module_names():
        module = importlib.import_module(module_name)
        listed = getattr(module, "__all__", None)
        names = listed if listed is not None else [n for n in vars(module) if n[0] != "_"]
        for name in names:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            exported = listed is not None and obj.__module__.startswith("tianshou.")
            if (exported or obj.__module__ == module_name) and id(obj) not in documented:
                undocumented.append(f"{module_name}.{name}")
    assert undocumented == []


def test_api_signatures_show_types_linked_to_their_pages(built_site: BuiltSite) -> None:
    page = (built_site.html_dir / "api/tianshou.data.html").read_text()
    collector = page[page.index('id="tianshou.data.collector.Collector"') :]
    signature = collector[: collector.index("</dt>")]
    # the `buffer: ReplayBuffer | None` parameter links to the buffer's own page
    assert 'href="tianshou.data.buffer.html#tianshou.data.buffer.buffer_base.ReplayBuffer"' in (
        signature
    )
    assert "exploration_noise" in signature and "bool" in signature


def test_references_by_an_imported_name_are_linked(built_site: BuiltSite) -> None:
    """``tianshou.data.collector`` writes :meth:`Policy.map_action`, a name it imports only for
    type checking; the method is documented as ``tianshou.algorithm.Policy.map_action``."""
    page = (built_site.html_dir / "api/tianshou.data.html").read_text()
    assert 'href="tianshou.algorithm.html#tianshou.algorithm.Policy.map_action"' in page


def test_guides_benchmark_changelog_and_search_are_pages(built_site: BuiltSite) -> None:
    for guide in DOCS_DIR.glob("*.md"):
        assert (built_site.html_dir / f"{guide.stem}.html").is_file(), guide.name
    changelog = (built_site.html_dir / "changelog.html").read_text()
    first_release_heading = re.search(r"^## (.+)$", (REPO_ROOT / "CHANGELOG.md").read_text(), re.M)
    assert first_release_heading is not None
    assert first_release_heading.group(1) in changelog
    index = (built_site.html_dir / "index.html").read_text()
    assert 'action="search.html"' in index and (built_site.html_dir / "searchindex.js").is_file()
    for page in ("benchmark.html", "changelog.html", "api.html", "layers.html"):
        assert f'href="{page}"' in index, page


def test_layer_picture_is_drawn_from_the_imports(built_site: BuiltSite) -> None:
    layers = (built_site.html_dir / "layers.html").read_text()
    assert 'src="_images/layers.svg"' in layers
    svg = (built_site.html_dir / "_images/layers.svg").read_text()
    for package in (
        "tianshou.data",
        "tianshou.algorithm",
        "tianshou.trainer",
        "tianshou.highlevel",
    ):
        assert f">{package}</text>" in svg


def rendered_dom(page: Path) -> str:
    """The DOM of a built page after headless Chromium has loaded it."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            "Chromium is not installed, so the built site cannot be checked in a browser: "
            "run `make docs-deps` (installs Debian's `chromium` and `graphviz`)."
        )
    command = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"]
    result = subprocess.run(
        [*command, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def test_browser_renders_the_index_and_an_api_page(built_site: BuiltSite) -> None:
    index = rendered_dom(built_site.html_dir / "index.html")
    assert re.search(r"<h1>tianshou documentation<a", index)
    assert 'href="data.html"' in index
    api_page = rendered_dom(built_site.html_dir / "api/tianshou.data.html")
    assert re.search(r"<h1>tianshou\.data<a", api_page)
    assert re.search(r"<h2>tianshou\.data\.collector<a", api_page)
    assert 'id="tianshou.data.collector.Collector"' in api_page


def test_guides_link_the_objects_and_guides_their_code_names(built_site: BuiltSite) -> None:
    data = (built_site.html_dir / "data.html").read_text()
    # `Batch` in the guide's prose is a link to its entry in the API reference
    batch_entry = r"api/tianshou\.data\.html#tianshou\.data\.batch\.Batch"
    assert re.search(
        rf'<a class="reference internal" href="{batch_entry}"[^>]*><code[^>]*>'
        r'<span class="pre">Batch</span>',
        data,
    )
    # `docs/spaces.md` in another guide is a link to that guide's page
    memory = (built_site.html_dir / "memory.html").read_text()
    assert '<a class="reference internal" href="spaces.html"><span class="doc">docs/spaces.md' in (
        memory
    )


def test_api_pages_open_with_a_summary_table_and_link_the_source(built_site: BuiltSite) -> None:
    page = (built_site.html_dir / "api/tianshou.algorithm.modelfree.html").read_text()
    table = page[page.index('class="autosummary') : page.index("</table>")]
    assert 'href="#tianshou.algorithm.modelfree.ppo.PPO"' in table
    assert 'href="#tianshou.algorithm.modelfree.sac.SAC"' in table
    first_entry = page.index('id="tianshou.algorithm.modelfree.a2c.A2C"')
    assert page.index('class="autosummary') < first_entry
    assert '<span class="viewcode-link">' in page
    assert (built_site.html_dir / "_modules/tianshou/algorithm/modelfree/ppo.html").is_file()


def test_code_blocks_get_a_copy_button_that_leaves_out_prompts(built_site: BuiltSite) -> None:
    index = (built_site.html_dir / "index.html").read_text()
    assert "copybutton.js" in index
    settings = (built_site.html_dir / "_static/copybutton.js").read_text()
    assert "formatCopyText(text, '>>> |\\\\.\\\\.\\\\. |\\\\$ ', true, true" in settings


def test_landing_page_leads_a_newcomer_to_install_start_and_every_algorithm(
    built_site: BuiltSite,
) -> None:
    index = (built_site.html_dir / "index.html").read_text()
    for page in ("installation.html", "getting_started.html", "tutorials.html"):
        assert f'href="{page}"' in index, page
    for family in ("policy_gradient", "continuous_off_policy", "q_learning", "offline_imitation"):
        assert f'href="algorithms/{family}.html"' in index, family
        assert (built_site.html_dir / f"algorithms/{family}.html").is_file()
    # the table links each algorithm to its API entry
    assert 'href="api/tianshou.algorithm.modelfree.html#tianshou.algorithm.modelfree.ppo.PPO"' in (
        index
    )
    # "install" finds the installation page in the search index
    search_index = (built_site.html_dir / "searchindex.js").read_text()
    assert '"installation"' in search_index and "instal" in search_index


def test_getting_started_shows_the_readme_quick_start(built_site: BuiltSite) -> None:
    page = (built_site.html_dir / "getting_started.html").read_text()
    assert "run_training" in page and "DQNExperimentBuilder" in page
    assert "quick-start: begin" not in page  # the markers stay out of the page


def test_benchmark_page_shows_every_figure_and_the_comparison_tables(
    built_site: BuiltSite,
) -> None:
    page = (built_site.html_dir / "benchmark.html").read_text()
    for task in ("Hopper-v5", "HalfCheetah-v5", "Walker2d-v5"):
        for family in ("off-policy", "on-policy"):
            assert f'src="_images/{task}-{family}.png"' in page, (task, family)
    assert 'src="_images/Ant-v5-on-policy.png"' in page
    assert 'src="_images/aggregate.png"' in page
    assert "best, published" in page and "final, SB3" in page
    assert "\u00a0±\u00a0" in page  # figures joined so that the table cannot wrap them
