"""``docs/inline_links.py``: which inline code of the guides becomes a link, and to what."""

from types import SimpleNamespace

from test.docs.conftest import load_docs_script

inline_links = load_docs_script("inline_links")

OBJECTS = {
    "tianshou.data.batch.Batch": SimpleNamespace(objtype="class"),
    "tianshou.data.batch.Batch.cat_": SimpleNamespace(objtype="method"),
    "tianshou.highlevel.persistence.PolicyPersistence.Mode": SimpleNamespace(objtype="class"),
    "tianshou.highlevel.experiment.Mode": SimpleNamespace(objtype="class"),
    "tianshou.utils.run": SimpleNamespace(objtype="function"),
    "tianshou.trainer.Trainer.run": SimpleNamespace(objtype="method"),
}


def canonical(name: str) -> str | None:
    return {"tianshou.data.Batch": "tianshou.data.batch.Batch"}.get(name)


def target(text: str) -> str | None:
    short_names = inline_links.short_name_index(OBJECTS)
    return inline_links.python_target(text, OBJECTS, short_names, canonical)


def test_unique_class_names_full_paths_and_aliases_are_linked() -> None:
    assert target("Batch") == "tianshou.data.batch.Batch"
    assert target("Batch.cat_()") == "tianshou.data.batch.Batch.cat_"
    assert target("tianshou.data.batch.Batch") == "tianshou.data.batch.Batch"
    assert target("tianshou.data.Batch") == "tianshou.data.batch.Batch"
    assert target("tianshou.utils.run") == "tianshou.utils.run"


def test_shared_names_members_nobody_documents_and_other_code_stay_text() -> None:
    assert target("Mode") is None  # two classes are called Mode
    assert target("run") is None  # bare function and method names are too common to guess
    assert target("Batch.no_such_method") is None
    assert target("b[0]") is None and target("pip install") is None
    assert target("tianshou.data.Nothing") is None
