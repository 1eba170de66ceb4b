"""The buffer package's modules import each other in one direction only (no import cycle).

The state sits at the bottom, the buffer classes above it and the file formats depend on the
state, never the other way round. Imports inside functions count too: they hide a cycle from the
interpreter but not from a reader.
"""

import ast
from pathlib import Path

import tianshou.data.buffer

PACKAGE = "tianshou.data.buffer"


def module_imports() -> dict[str, set[str]]:
    """``module -> modules of the package it imports`` (at any depth of its syntax tree)."""
    root = Path(tianshou.data.buffer.__file__).parent
    files = {
        PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}": path
        for path in root.glob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    target = f"{node.module}.{alias.name}"
                    # "from package import submodule" depends on the submodule only
                    if target in files:
                        deps.add(target)
                    elif node.module in files:
                        deps.add(node.module)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names if alias.name in files)
        deps.discard(name)
        graph[name] = deps
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for dep in sorted(graph[node]):
            cycle = visit(dep, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        cycle = visit(start, [])
        if cycle:
            return cycle
    return None


def test_the_graph_is_read() -> None:
    graph = module_imports()
    assert f"{PACKAGE}._state" in graph[f"{PACKAGE}.buffer_base"]
    assert f"{PACKAGE}._hdf5" in graph[f"{PACKAGE}.buffer_base"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle() -> None:
    assert find_cycle(module_imports()) is None


def test_formats_depend_on_the_state_not_on_the_buffer_classes() -> None:
    graph = module_imports()
    assert graph[f"{PACKAGE}._hdf5"] == {f"{PACKAGE}._state"}
    assert not graph[f"{PACKAGE}._state"] & {
        f"{PACKAGE}.{name}" for name in ("_hdf5", "buffer_base", "manager", "prio", "her")
    }
