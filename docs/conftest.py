"""pytest settings for ``docs/``: its Markdown guides are doctests; ``conf.py`` is not a test.

``conf.py`` is Sphinx's configuration: it imports Sphinx and only makes sense inside a build
(``test/docs/test_site.py`` runs one), so pytest's ``--doctest-modules`` does not import it.
"""

collect_ignore = ["conf.py"]
