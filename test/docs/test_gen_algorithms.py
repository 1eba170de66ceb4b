"""``docs/gen_algorithms.py``: the algorithm catalogue names real classes and scripts, every
family page shows its algorithms, and the benchmark figures are those of the committed results."""

import importlib
import json
import re

import pytest

from test.docs.conftest import DOCS_DIR, REPO_ROOT, load_docs_script

gen_algorithms = load_docs_script("gen_algorithms")
CATALOGUE = gen_algorithms.CATALOGUE


@pytest.mark.parametrize("entry", CATALOGUE, ids=lambda entry: entry.name)
def test_every_entry_names_a_class_a_script_and_a_family_page_that_exist(entry: object) -> None:
    for path in filter(None, (entry.path, entry.recurrent)):
        module_name, _, class_name = path.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module_name), class_name), type), path
    algorithm = importlib.import_module("tianshou.algorithm")
    assert getattr(algorithm, entry.name, None) is not None or "." in entry.path
    if entry.script is not None:
        assert (REPO_ROOT / "examples" / entry.script.split()[0]).is_file()
    page = (DOCS_DIR / "algorithms" / f"{entry.family}.md").read_text()
    assert f"_generated/algorithms/{entry.name}.md" in page  # the page shows the entry


def test_every_exported_algorithm_is_in_the_catalogue() -> None:
    """A new algorithm in ``tianshou.algorithm`` must get a catalogue entry (or a reason not)."""
    import tianshou.algorithm as algorithm
    from tianshou.algorithm.algorithm_base import Algorithm

    catalogued = {entry.name for entry in CATALOGUE} | {"ICMOnPolicyWrapper"}
    infrastructure = {
        "Algorithm", "OffPolicyAlgorithm", "OnPolicyAlgorithm", "OfflineAlgorithm",
        "OffPolicyWrapperAlgorithm", "OnPolicyWrapperAlgorithm", "OffPolicyImitationLearning",
        "MultiAgentOffPolicyAlgorithm", "MARLRandomDiscreteMaskedOffPolicyAlgorithm",
    }  # fmt: skip
    algorithms = {
        name
        for name in algorithm.__all__
        if isinstance(getattr(algorithm, name), type)
        and issubclass(getattr(algorithm, name), Algorithm)
    }
    assert algorithms - infrastructure - catalogued == set()


def test_benchmark_tables_show_the_committed_results() -> None:
    summary = json.loads(gen_algorithms.BENCHMARK_SUMMARY.read_text())
    cells = gen_algorithms.load_benchmark()
    ppo = next(e for e in CATALOGUE if e.name == "PPO")
    snippet = gen_algorithms.entry_snippet(ppo, cells)
    for cell in summary["cells"]:
        if cell["algorithm"] != "ppo":
            continue
        iqm = f"{cell['final_return']['iqm']:,.0f}"
        row = next(line for line in snippet.splitlines() if line.startswith(f"| {cell['task']} "))
        assert f"| {len(cell['seeds'])} |" in row and iqm in row
    landing = gen_algorithms.landing_table(cells)
    hopper = cells[("ppo", "Hopper-v5")]["final_return"]["iqm"]
    assert re.search(rf"PPO.*\[{hopper:,.0f} / ", landing)


def test_parameters_come_from_the_signature() -> None:
    listed = gen_algorithms.parameter_list("tianshou.algorithm.modelfree.ppo.PPO")
    assert "`eps_clip=0.2`" in listed and "`policy`" in listed and "`self`" not in listed


def spaces_guide_observations() -> dict[str, set[str]]:
    """The observation spaces of each algorithm in the Spaces guide's support table."""
    text = (DOCS_DIR / "spaces.md").read_text()
    table = text[text.index("## Which algorithm supports which space") :]
    found = {}
    for line in table.splitlines()[4:]:
        if not line.startswith("| `"):
            break
        algorithms, observations = line.split("|")[1:3]
        spaces = set(re.findall(r"`(Box|Discrete|Dict)`", observations))
        for name in re.findall(r"`(\w+)`", algorithms):
            found[name] = spaces
    return found


def test_observation_spaces_agree_with_the_spaces_guide() -> None:
    guide = spaces_guide_observations()
    assert {"PPO", "SAC", "DQN", "GAIL"} <= guide.keys()
    for entry in CATALOGUE:
        if entry.name in guide:
            assert set(entry.observations.split(", ")) == guide[entry.name], entry.name
