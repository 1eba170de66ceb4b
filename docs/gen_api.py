"""Write the API reference pages of the documentation site from tianshou's package tree.

The site documents every public module (a dotted path with no ``_``-prefixed part) with
``automodule``, one page per package, so that a module added to the library appears in the
reference without editing the docs. Classes and functions that live in a private module but are
exported by a public package (``tianshou.algorithm.Policy`` is defined in
``tianshou.algorithm._policy``) are documented on that package's page, under the name users
import them by.

:func:`plan_pages` maps every such object's defining path to the path it is documented
under; ``docs/conf.py`` uses it to turn references written with either name into links.
Importing this module has no side effects; :func:`write_api_pages` is called by ``conf.py`` when
a build starts.
"""

import importlib
import inspect
import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from generated_files import write_if_changed

# A module's page lists what the module defines (``:ignore-module-all:``: autodoc would otherwise
# document each name of ``__all__`` again under every module that re-exports it).
CLASS_OPTIONS = ("   :members:", "   :undoc-members:", "   :show-inheritance:")
MODULE_OPTIONS = (*CLASS_OPTIONS, "   :ignore-module-all:")


def is_public(dotted: str) -> bool:
    """Whether no part of a dotted path is private (starts with an underscore)."""
    return not any(part.startswith("_") for part in dotted.split("."))


@dataclass
class PackagePage:
    """What one package's page documents.

    :param name: the package's dotted name, also the page title.
    :param modules: its public non-package submodules, each documented with ``automodule``.
    :param subpackages: its public subpackages, each on a page of its own.
    :param exported: for the package and each of its modules, the names of the objects it is
        the first public module to export although a private module defines them.
    """

    name: str
    modules: list[str] = field(default_factory=list)
    subpackages: list[str] = field(default_factory=list)
    exported: dict[str, list[str]] = field(default_factory=dict)


def public_modules(root: str) -> list[ModuleType]:
    """Import ``root`` and all its public submodules, parents before children.

    :param root: a package name such as ``"tianshou"``.
    """
    package = importlib.import_module(root)
    modules = [package]
    for info in pkgutil.walk_packages(package.__path__, prefix=root + "."):
        if is_public(info.name):
            modules.append(importlib.import_module(info.name))
    return sorted(modules, key=lambda module: (module.__name__.count("."), module.__name__))


def exported_objects(module: ModuleType) -> dict[str, object]:
    """The tianshou classes and functions a module exports.

    With ``__all__`` these are the ones it lists (re-exports included); without it, the public
    ones the module defines itself: a name merely imported there is not part of its interface.
    """
    listed = getattr(module, "__all__", None)
    names = listed if listed is not None else [n for n in vars(module) if not n.startswith("_")]
    root = module.__name__.partition(".")[0]
    exported: dict[str, object] = {}
    for name in names:
        value = getattr(module, name)
        if not (inspect.isclass(value) or inspect.isfunction(value)):
            continue
        origin = value.__module__
        if origin.partition(".")[0] == root and (listed is not None or origin == module.__name__):
            exported[name] = value
    return exported


def defining_path(obj: object) -> str:
    """The dotted path under which ``obj`` is defined, e.g. ``tianshou.data.batch.Batch``."""
    return f"{obj.__module__}.{obj.__qualname__}"  # type: ignore[attr-defined]


def plan_pages(root: str) -> tuple[dict[str, PackagePage], dict[str, str]]:
    """Decide which package page documents each public module and exported private object.

    :param root: the top package name.
    :return: the pages by package name, and a map from each documented object's defining
        path (and every public path it is re-exported under) to the path it is documented as.
    """
    modules = public_modules(root)
    pages = {m.__name__: PackagePage(m.__name__) for m in modules if hasattr(m, "__path__")}
    for module in modules[1:]:
        owner = pages[module.__name__.rpartition(".")[0]]
        if hasattr(module, "__path__"):
            owner.subpackages.append(module.__name__)
        else:
            owner.modules.append(module.__name__)
    documented: dict[str, str] = {}
    for module in modules:
        for name, obj in exported_objects(module).items():
            origin = defining_path(obj)
            if origin in documented:
                continue
            if is_public(obj.__module__):
                documented[origin] = origin
                continue
            public_name = f"{module.__name__}.{name}"
            page = pages.get(module.__name__) or pages[module.__name__.rpartition(".")[0]]
            page.exported.setdefault(module.__name__, []).append(public_name)
            documented[origin] = public_name
    for module in modules:
        for name, obj in exported_objects(module).items():
            documented.setdefault(f"{module.__name__}.{name}", documented[defining_path(obj)])
    return pages, documented


def title(text: str, underline: str) -> list[str]:
    """A reST section title."""
    return [text, underline * len(text), ""]


def defined_objects(module_name: str) -> list[str]:
    """The dotted paths of the public classes and functions a module defines itself (what
    ``automodule`` with ``:members:`` documents), by name."""
    module = importlib.import_module(module_name)
    return [
        f"{module_name}.{name}"
        for name, value in sorted(vars(module).items())
        if not name.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and value.__module__ == module_name
    ]


def summary_table(page: PackagePage) -> list[str]:
    """An ``autosummary`` table of every class and function on the page (name, linked, and the
    first line of its docstring), so that a long page can be scanned before it is read."""
    names = list(page.exported.get(page.name, []))
    for module in page.modules:
        names += defined_objects(module) + page.exported.get(module, [])
    if not names:
        return []
    lines = [".. rubric:: On this page", "", ".. autosummary::", "   :nosignatures:", ""]
    # relative to the page's package, which the page's automodule made the current module
    return lines + [f"   {name.removeprefix(page.name + '.')}" for name in names] + [""]


def page_source(page: PackagePage) -> str:
    """The reST source of one package's page."""
    lines = title(page.name, "=")
    lines += [f".. automodule:: {page.name}", ""]
    lines += summary_table(page)
    lines += exported_directives(page.exported.get(page.name, []))
    if page.subpackages:
        lines += [".. toctree::", "   :maxdepth: 1", ""]
        lines += [f"   {name}" for name in page.subpackages] + [""]
    for name in page.modules:
        lines += title(name, "-")
        lines += [f".. automodule:: {name}", *MODULE_OPTIONS, ""]
        lines += exported_directives(page.exported.get(name, []))
    return "\n".join(lines)


def exported_directives(names: list[str]) -> list[str]:
    """``autoclass``/``autofunction`` directives for objects documented under a re-export."""
    lines = []
    for name in names:
        if inspect.isclass(resolve(name)):
            lines += [f".. autoclass:: {name}", *CLASS_OPTIONS, ""]
        else:
            lines += [f".. autofunction:: {name}", ""]
    return lines


def resolve(dotted: str) -> object:
    """The object at a dotted path whose last part is an attribute of a module."""
    module_name, _, attribute = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def write_api_pages(root: str, out_dir: Path) -> dict[str, str]:
    """Write one ``<package>.rst`` per package of ``root`` into ``out_dir``.

    Files are rewritten only when their text changes, so Sphinx's incremental build re-reads
    only pages whose package changed.

    :param root: the top package name.
    :param out_dir: the folder of the generated pages (created when absent).
    :return: the map of :func:`plan_pages` from defining to documented paths.
    """
    pages, documented = plan_pages(root)
    for page in pages.values():
        write_if_changed(out_dir / f"{page.name}.rst", page_source(page))
    return documented
