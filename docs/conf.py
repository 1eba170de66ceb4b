"""Sphinx configuration of the documentation site (``make docs``).

The guides are the Markdown pages of this folder (read by MyST); the API reference is generated
from the docstrings at every build (``gen_api.py`` writes one page per package into ``api/``) and
so is the picture of the package layers (``gen_layers.py`` writes ``_generated/layers.svg``).
Both generated folders are ignored by git.

Importing this file only sets names (``docs/conftest.py`` keeps pytest from collecting it); the
generation runs in the build hooks that :func:`setup` registers.
"""

import ast
import functools
import importlib
import inspect
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform

if TYPE_CHECKING:
    from docutils import nodes
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

DOCS_DIR = Path(__file__).resolve().parent
REPO_ROOT = DOCS_DIR.parent
if str(REPO_ROOT) not in sys.path:  # the benchmark page reads the results through `benchmark`
    sys.path.insert(0, str(REPO_ROOT))

project = "tianshou"
author = "the tianshou developers"
copyright = "the tianshou developers"
release = importlib.import_module("tianshou").__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.viewcode",
    "sphinx_copybutton",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# the algorithm snippets are included into the family pages, not pages of their own
exclude_patterns = ["_build", "_generated/algorithms", "_generated/benchmark"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "attrs_inline"]

# Signatures show the annotations; the docstrings are reST field lists (``:param x:``), which
# autodoc reads without napoleon. Members appear in source order, which is the order of reading.
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_preserve_defaults = True
add_module_names = False
python_display_short_literal_types = True

# The copy button leaves out prompts (`>>> `, `... `, `$ `) and the output lines of examples.
copybutton_prompt_text = r">>> |\.\.\. |\$ "
copybutton_prompt_is_regexp = True
copybutton_only_copy_prompt_lines = True

html_theme = "furo"
html_title = f"tianshou {release}"

# Alias paths of documented objects (see gen_api.plan_pages); filled in by generate_sources().
documented_as: dict[str, str] = {}


def docs_module(name: str) -> Any:
    """Import one of the helper modules of ``docs/`` (not a package)."""
    sys.path.insert(0, str(DOCS_DIR))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(DOCS_DIR))


def generate_sources(app: "Sphinx") -> None:
    """Write the API pages, the layer picture and the algorithm tables before Sphinx reads the
    sources."""
    gen_api, gen_layers = docs_module("gen_api"), docs_module("gen_layers")
    documented_as.update(gen_api.write_api_pages("tianshou", Path(app.srcdir) / "api"))
    gen_layers.write_layer_svg(REPO_ROOT, "tianshou", Path(app.srcdir) / "_generated/layers.svg")
    docs_module("gen_algorithms").write_algorithm_snippets(
        Path(app.srcdir) / "_generated/algorithms"
    )
    docs_module("gen_benchmark").write_benchmark_tables(Path(app.srcdir) / "_generated/benchmark")


def canonical_target(target: str, module: str | None) -> str | None:
    """The documented path of a Python reference target that Sphinx did not find, if any.

    ``target`` may be a re-exported path (``tianshou.data.Batch``), a private defining path
    (``tianshou.algorithm._policy.Policy``), or a name imported into the referring module, even
    if only for type checking (``Policy`` written in ``tianshou.data.collector``), each
    optionally followed by attributes (``Policy.map_action``).
    """
    candidates = [target]
    if module is not None:
        head, _, rest = target.partition(".")
        imported = imported_names(module).get(head)
        candidates += (
            [f"{module}.{target}"] if imported is None else [f"{imported}.{rest}".rstrip(".")]
        )
    for candidate in candidates:
        parts = candidate.split(".")
        for cut in range(len(parts), 0, -1):
            head = ".".join(parts[:cut])
            if head in documented_as:
                return ".".join([documented_as[head], *parts[cut:]])
            obj = imported_object(head)
            origin = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
            if origin in documented_as:
                return ".".join([documented_as[origin], *parts[cut:]])
    return None


def imported_object(dotted: str) -> object | None:
    """The object a dotted ``module.attribute`` path names in an already imported module."""
    module_name, _, attribute = dotted.rpartition(".")
    module = sys.modules.get(module_name)
    return getattr(module, attribute, None) if module is not None else None


def resolve_alias(
    app: "Sphinx", env: "BuildEnvironment", node: "pending_xref", contnode: "nodes.TextElement"
) -> Any:
    """Link a Python reference written with an alias path to where the object is documented."""
    if node.get("refdomain") != "py":
        return None
    target = canonical_target(node["reftarget"], node.get("py:module"))
    if target is None or target == node["reftarget"]:
        return None
    domain = env.get_domain("py")
    retargeted = node.deepcopy()
    retargeted["reftarget"] = target
    retargeted["refspecific"] = False
    return domain.resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], target, retargeted, contnode
    )


@functools.cache
def imported_names(module_name: str) -> dict[str, str]:
    """What each name imported by a module's source refers to, as ``{name: "package.name"}``.

    Read from the source rather than the module, because imports under ``if TYPE_CHECKING:``
    never run, yet their names appear in string annotations (``policy: "Policy"``).
    """
    module = sys.modules.get(module_name)
    try:
        source = inspect.getsource(module) if module is not None else ""
    except (OSError, TypeError):
        return {}
    names = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


class ResolveImportedNames(SphinxPostTransform):
    """Point a bare name in a signature at the object its module imports under that name.

    An annotation autodoc cannot evaluate (a name imported only for type checking) stays a bare
    name, which Sphinx would match against every documented object of that name, e.g. both
    ``tianshou.algorithm.Policy`` and a nested class called ``Policy``. The referring module's
    own import says which one is meant. Runs before Sphinx resolves references (priority 10).
    """

    default_priority = 5

    def run(self, **kwargs: Any) -> None:
        for node in self.document.findall(pending_xref):
            target, module = node.get("reftarget", ""), node.get("py:module")
            if node.get("refdomain") != "py" or module is None or "." in target:
                continue
            imported = imported_names(module).get(target)
            documented = canonical_target(imported, None) if imported else None
            if documented is not None:
                node["reftarget"] = documented
                node["refspecific"] = False


class LinkGuideCode(docs_module("inline_links").LinkInlineCode):  # type: ignore[misc]
    """Links the guides' inline code, knowing the alias paths of the API pages."""

    def canonical(self, name: str) -> str | None:
        return canonical_target(name, None)


def setup(app: "Sphinx") -> dict[str, Any]:
    """Register the build hooks: source generation, alias resolution of references, and the
    links of the guides' inline code."""
    app.connect("builder-inited", generate_sources)
    app.connect("missing-reference", resolve_alias)
    app.add_post_transform(ResolveImportedNames)
    app.add_post_transform(LinkGuideCode)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
