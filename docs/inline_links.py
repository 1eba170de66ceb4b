"""Turn the guides' inline code that names a documented object or a guide into a link.

The guides name classes and functions as inline code (```Batch```, ```Collector.collect()```,
```tianshou.data.ReplayBuffer```) and each other by file name (```docs/spaces.md```). Written
as plain Markdown, so that they read well on GitHub too, they would stay plain text on the site.
:class:`LinkInlineCode` links them when the build knows exactly one target:

- a dotted path of a documented object, or an alias path of one (``tianshou.data.Batch`` for
  ``tianshou.data.batch.Batch``);
- the bare name of a documented class or exception that no other documented object shares,
  optionally followed by one of its members (``Batch.cat_``); a trailing ``()`` is allowed;
- ``docs/<guide>.md`` for a guide of the site.

Code in code blocks, in headings and inside links stays as written, and so does every name the
build does not know or knows twice (``Mode``), so a link is never a guess. Importing this module
has no side effects; ``docs/conf.py`` registers the transform (a subclass that knows the
alias paths).
"""

import re
from collections.abc import Callable
from typing import Any

from docutils import nodes
from sphinx.addnodes import pending_xref
from sphinx.transforms.post_transforms import SphinxPostTransform

DOTTED_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
GUIDE_PATH = re.compile(r"docs/(\w+)\.md")
CLASS_TYPES = ("class", "exception")

Canonical = Callable[[str], str | None]
"""Maps an alias path of a documented object to its documented path (None if unknown)."""


def short_name_index(objects: dict[str, Any]) -> dict[str, str]:
    """The documented classes and exceptions by bare name, for names only one of them has.

    :param objects: the Python domain's objects, ``{dotted name: entry with .objtype}``.
    """
    by_name: dict[str, set[str]] = {}
    for full_name, entry in objects.items():
        short = full_name.rpartition(".")[2]
        by_name.setdefault(short, set()).add(full_name if entry.objtype in CLASS_TYPES else "")
    return {
        short: next(iter(targets))
        for short, targets in by_name.items()
        if len(targets) == 1 and "" not in targets
    }


def python_target(
    text: str, objects: dict[str, Any], short_names: dict[str, str], canonical: Canonical
) -> str | None:
    """The documented object a piece of inline code names, or None.

    :param text: the inline code, e.g. ``Batch``, ``Collector.collect()``.
    :param objects: the Python domain's objects by dotted name.
    :param short_names: :func:`short_name_index` of ``objects``.
    :param canonical: resolves alias paths (``tianshou.data.Batch``).
    """
    name = text.removesuffix("()")
    if not DOTTED_NAME.fullmatch(name):
        return None
    if name in objects:
        return name
    head, _, rest = name.partition(".")
    if head in short_names:
        full = f"{short_names[head]}.{rest}" if rest else short_names[head]
        return full if full in objects else None
    if "." in name:
        full = canonical(name)
        return full if full in objects else None
    return None


def _in_link_code_or_title(node: nodes.Node) -> bool:
    parent = node.parent
    while parent is not None:
        if isinstance(parent, nodes.reference | pending_xref | nodes.title | nodes.literal_block):
            return True
        parent = parent.parent
    return False


class LinkInlineCode(SphinxPostTransform):
    """Wrap a guide's inline code in a reference when it names one documented object or guide
    (see the module docstring). Runs before Sphinx resolves references (priority 10) and after
    the signature fix of ``conf.py`` (5); API pages are left alone, as autodoc links them."""

    default_priority = 6

    def canonical(self, name: str) -> str | None:
        """The documented path of an alias path; ``conf.py`` overrides this with its alias
        resolution (here: none known)."""
        return None

    def run(self, **kwargs: Any) -> None:
        docname = self.env.docname
        if docname.startswith("api/"):
            return
        objects = self.env.get_domain("py").objects  # type: ignore[attr-defined]
        short_names = short_name_index(objects)
        for literal in list(self.document.findall(nodes.literal)):
            if _in_link_code_or_title(literal):
                continue
            text = literal.astext()
            guide = GUIDE_PATH.fullmatch(text)
            if guide is not None and guide.group(1) in self.env.found_docs:
                reference = pending_xref(
                    "", refdomain="std", reftype="doc", reftarget="/" + guide.group(1)
                )
            else:
                target = python_target(text, objects, short_names, self.canonical)
                if target is None:
                    continue
                reference = pending_xref("", refdomain="py", reftype="obj", reftarget=target)
            reference["refexplicit"] = True
            reference["refwarn"] = False
            reference["refdoc"] = docname
            literal.replace_self(reference)
            reference += literal
