"""What an error says when an optional package is missing: which extra of tianshou installs it,
and how, from the checkout and through its constraints file.

``pip install 'tianshou[extra]'`` would fetch the published library from the package index (a
different package under the same name) with an unpinned CUDA torch, so no message suggests it.

>>> print(install_hint("hpo"))
install the 'hpo' extra from the tianshou checkout: pip install -c constraints.txt -e '.[hpo]'
"""


def install_hint(extra: str) -> str:
    """The sentence that tells how to install ``extra`` (end an ImportError's message with it).

    :param extra: the name of the extra in ``pyproject.toml``, e.g. ``"atari"``.
    """
    return (
        f"install the '{extra}' extra from the tianshou checkout: "
        f"pip install -c constraints.txt -e '.[{extra}]'"
    )
