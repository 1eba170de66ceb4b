"""Draw tianshou's package layers from the ``import`` statements of its source.

Each node is a subpackage of ``tianshou`` (``tianshou.data``, ``tianshou.algorithm``, ...; a
top-level module such as ``tianshou.config`` is its own node); an edge ``A -> B`` means that
modules of ``A`` import modules of ``B``, labelled with the number of such imports. Imports made
only for type checking (under ``if TYPE_CHECKING:``) are drawn dashed: they tie the layers
together for the type checker but not at run time. Graphviz's ``dot`` ranks the nodes so that
edges point downwards where the graph allows; an edge pointing up is a layering violation.
Without Graphviz (a machine where it cannot be installed), :func:`draw_with_matplotlib` draws
the same graph in rows by the same rule, plainer but complete, so that the site builds anyway.

The picture is redrawn at every docs build (``docs/conf.py`` calls :func:`write_layer_svg`), so
it cannot drift from the code. Importing this module has no side effects.
"""

import ast
import io
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from generated_files import write_if_changed

Edge = tuple[str, str]


def module_name(path: Path, source_root: Path) -> str:
    """The dotted module name of a ``.py`` file below ``source_root`` (the package's parent)."""
    parts = list(path.relative_to(source_root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str, root: str) -> str | None:
    """The node a module belongs to: ``root`` plus its first part below ``root``, if in ``root``."""
    parts = module.split(".")
    if parts[0] != root or len(parts) < 2:
        return None
    return f"{root}.{parts[1]}"


def is_type_checking_block(node: ast.If) -> bool:
    """Whether an ``if`` statement is ``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imported_modules(tree: ast.Module, importer: str, is_package: bool) -> list[tuple[str, bool]]:
    """Every module a source file imports, with whether the import is for type checking only.

    :param tree: the parsed file.
    :param importer: the file's dotted module name (needed to resolve relative imports).
    :param is_package: whether the file is a package's ``__init__.py``.
    """
    found: list[tuple[str, bool]] = []
    package = importer if is_package else importer.rpartition(".")[0]

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking_block(child):
                for statement in child.body:
                    visit_statement(statement, True)
                for statement in child.orelse:
                    visit_statement(statement, typing_only)
            else:
                visit_statement(child, typing_only)

    def visit_statement(node: ast.AST, typing_only: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((alias.name, typing_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            if "." in base:
                found.append((base, typing_only))
            else:  # `from tianshou import data`: the layer is the imported name
                found.extend((f"{base}.{alias.name}", typing_only) for alias in node.names)
        else:
            visit(node, typing_only)

    visit(tree, False)
    return found


def import_edges(source_root: Path, root: str) -> tuple[Counter[Edge], Counter[Edge]]:
    """Count the imports between the layers of package ``root``.

    :param source_root: the folder that contains the package folder ``root``.
    :param root: the package name, e.g. ``"tianshou"``.
    :return: the run-time edges and the type-checking-only edges, each with its import count;
        imports within one layer are left out.
    """
    runtime: Counter[Edge] = Counter()
    typing_only: Counter[Edge] = Counter()
    for path in sorted((source_root / root).rglob("*.py")):
        importer = module_name(path, source_root)
        source_layer = layer_of(importer, root)
        if source_layer is None:
            continue
        tree = ast.parse(path.read_text(), filename=str(path))
        for imported, for_typing in imported_modules(tree, importer, path.name == "__init__.py"):
            target_layer = layer_of(imported, root)
            if target_layer is None or target_layer == source_layer:
                continue
            (typing_only if for_typing else runtime)[source_layer, target_layer] += 1
    return runtime, typing_only


def to_dot(runtime: Counter[Edge], typing_only: Counter[Edge]) -> str:
    """A Graphviz ``dot`` description of the layer graph."""
    lines = [
        "digraph layers {",
        '  graph [rankdir=TB, nodesep=0.4, ranksep=0.6, fontname="sans-serif"];',
        '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", fontname="sans-serif"];',
        '  edge [color="#555555", fontname="sans-serif", fontsize=10];',
    ]
    nodes = sorted({layer for edge in [*runtime, *typing_only] for layer in edge})
    lines += [f'  "{node}";' for node in nodes]
    for (source, target), count in sorted(runtime.items()):
        lines.append(f'  "{source}" -> "{target}" [label="{count}"];')
    for (source, target), count in sorted(typing_only.items()):
        lines.append(
            f'  "{source}" -> "{target}" [label="{count}", style=dashed, constraint=false, '
            'color="#aaaaaa", fontcolor="#888888"];'
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def layer_ranks(runtime: Counter[Edge], typing_only: Counter[Edge]) -> dict[str, int]:
    """Each layer's row, counted from the top: one below the lowest layer importing it at run
    time (the longest run-time import path from a layer nothing imports). An import that closes a
    cycle is left out of the ranking, as ``dot`` does.
    """
    nodes = sorted({layer for edge in [*runtime, *typing_only] for layer in edge})
    importers: dict[str, list[str]] = {node: [] for node in nodes}
    for source, target in runtime:
        importers[target].append(source)
    ranks: dict[str, int] = {}
    on_path: set[str] = set()

    def rank(node: str) -> int:
        if node not in ranks:
            on_path.add(node)
            above = [rank(i) for i in sorted(importers[node]) if i not in on_path]
            on_path.discard(node)
            ranks[node] = 1 + max(above, default=-1)
        return ranks[node]

    for node in nodes:
        rank(node)
    return ranks


def draw_with_matplotlib(runtime: Counter[Edge], typing_only: Counter[Edge]) -> str:
    """The layer graph as SVG text drawn by matplotlib: a row per rank of :func:`layer_ranks`,
    run-time imports as solid arrows labelled with their count, type-checking ones dashed."""
    import matplotlib

    matplotlib.use("Agg")  # no display needed; the docs build may run headless
    from matplotlib import pyplot as plt

    ranks = layer_ranks(runtime, typing_only)
    rows: dict[int, list[str]] = {}
    for node in sorted(ranks):
        rows.setdefault(ranks[node], []).append(node)
    width = max(len(row) for row in rows.values())
    position = {
        node: ((i + 0.5) * width / len(row), -rank)
        for rank, row in rows.items()
        for i, node in enumerate(row)
    }
    with plt.rc_context({"svg.fonttype": "none", "font.family": "sans-serif"}):
        figure, axes = plt.subplots(figsize=(2.4 * width, 1.1 * len(rows) + 0.6))
        for edges, style, colour in ((runtime, "-", "#555555"), (typing_only, "--", "#aaaaaa")):
            for (source, target), count in sorted(edges.items()):
                start, end = position[source], position[target]
                axes.annotate(
                    "",
                    xy=end,
                    xytext=start,
                    arrowprops={
                        "arrowstyle": "->",
                        "linestyle": style,
                        "color": colour,
                        "shrinkA": 12,
                        "shrinkB": 12,
                    },
                )
                middle = ((start[0] + end[0]) / 2, (start[1] + end[1]) / 2)
                axes.text(*middle, str(count), fontsize=7, color=colour, ha="center")
        for node, (x, y) in position.items():
            axes.text(
                x,
                y,
                node,
                ha="center",
                va="center",
                fontsize=9,
                bbox={"boxstyle": "round", "facecolor": "#eef3fb", "edgecolor": "#555555"},
            )
        axes.set_xlim(0, width)
        axes.set_ylim(-max(rows) - 0.5, 0.5)
        axes.axis("off")
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", bbox_inches="tight")
        plt.close(figure)
    return buffer.getvalue()


def write_layer_svg(source_root: Path, root: str, svg_path: Path) -> None:
    """Render the layer graph of package ``root`` to ``svg_path``: with Graphviz's ``dot`` when
    it is installed, else with :func:`draw_with_matplotlib`."""
    edges = import_edges(source_root, root)
    dot = shutil.which("dot")
    if dot is None:
        svg = draw_with_matplotlib(*edges)
    else:
        svg = subprocess.run(
            [dot, "-Tsvg"], input=to_dot(*edges), capture_output=True, text=True, check=True
        ).stdout
    write_if_changed(svg_path, svg)
