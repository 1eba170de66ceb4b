"""Writing the files that the docs generators produce at every build.

A generated file is rewritten only when its text changes, so that Sphinx's incremental build
re-reads only the pages whose sources really changed.
"""

from pathlib import Path


def write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (creating its folder) unless the file already holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
