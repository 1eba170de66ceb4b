"""Tianshou's module imports read from the source, type-checking imports included, for the
tests that keep a package's modules off import cycles and its layers apart (the reading is
``docs/gen_layers.py``'s, which draws the package layers)."""

import ast
from pathlib import Path

from test.docs.conftest import REPO_ROOT, load_docs_script

_gen_layers = load_docs_script("gen_layers")


def source_of(module: str) -> Path | None:
    """The source file of a tianshou module or package, None for a name that is neither (a
    class imported from a package, say)."""
    base = REPO_ROOT / module.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def tianshou_imports(module: str) -> set[str]:
    """The tianshou modules ``module`` imports anywhere in its source, under ``if
    TYPE_CHECKING:`` too (an import for the type checker still ties the modules together)."""
    path = source_of(module)
    if path is None:
        raise ValueError(f"{module} is not a module of this repository")
    tree = ast.parse(path.read_text(), filename=str(path))
    found = _gen_layers.imported_modules(tree, module, path.name == "__init__.py")
    return {name for name, _ in found if name.startswith("tianshou.") and source_of(name)}


def reachable_imports(module: str, within: str) -> set[str]:
    """Every module of package ``within`` that ``module`` imports directly or through other
    modules of ``within``."""
    seen: set[str] = set()
    pending = [module]
    while pending:
        for imported in tianshou_imports(pending.pop()):
            if imported.startswith(within + ".") and imported not in seen:
                seen.add(imported)
                pending.append(imported)
    return seen
