"""Every algorithm's golden trajectory (``test/golden/<name>.json``) is what it learns today:
a change to an algorithm's losses, collected returns or final state fails here, naming the
algorithm and the first differences, until its file is regenerated on purpose."""

import pytest

from test.golden.trajectories import RUNS, differences, golden_path, load, record


@pytest.mark.parametrize("name", list(RUNS))
def test_the_algorithm_still_learns_its_golden_trajectory(name: str) -> None:
    golden = load(name)
    assert golden is not None, (
        f"no golden file {golden_path(name)}: run `python -m test.golden.regenerate {name}`"
    )
    changes = differences(golden, record(name))
    assert not changes, (
        f"{name} learns differently from its golden trajectory ({len(changes)} differences; "
        f"first: {'; '.join(changes[:5])}). If the change is meant, run "
        f"`python -m test.golden.regenerate {name}` and say why in CHANGELOG.md."
    )


def test_every_golden_file_belongs_to_a_run() -> None:
    files = {path.stem for path in golden_path("x").parent.glob("*.json")}
    assert files == set(RUNS)


def test_a_changed_loss_is_named_and_a_tolerance_applies_across_platforms() -> None:
    golden = {"algorithm": "X", "platform": {"machine": "a"}, "losses": [{"loss": 1.0}]}
    same_platform = {**golden, "losses": [{"loss": 1.0000001}]}
    assert differences(golden, same_platform) == ["X.losses[0].loss: 1.0 -> 1.0000001"]
    other_platform = {**same_platform, "platform": {"machine": "b"}}
    assert differences(golden, other_platform) == []  # within the stated tolerance
    clipped = {**other_platform, "losses": [{"loss": 1.2}]}
    assert differences(golden, clipped) == ["X.losses[0].loss: 1.0 -> 1.2"]
