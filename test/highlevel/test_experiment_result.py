"""The results of runs: what ``build_and_run`` returns serves the code written for either of
the published return types (an ``ExperimentResult`` for one experiment, a list of training
results for several). ``test_experiment.py`` checks the same on real runs."""

import dataclasses
from typing import cast

import pytest

from tianshou.data import InfoStats
from tianshou.highlevel.experiment import ExperimentResult, SeedResults
from tianshou.highlevel.experiment_result import WorkersRunResult
from tianshou.highlevel.world import World

# stand-ins: the results only hold and hand out these objects
WORLD = cast(World, object())
STATS = cast(InfoStats, object())


def test_several_runs_behave_like_the_published_list() -> None:
    results = SeedResults([STATS, None])
    assert isinstance(results, list)
    assert not isinstance(results, ExperimentResult)
    assert results == [STATS, None]
    assert results[0] is STATS and results[1] is None
    assert list(results) == [STATS, None]
    assert [r for r in results if r is not None] == [STATS]
    assert not hasattr(results, "world")
    with pytest.raises(AttributeError, match="results of 2 runs: index or iterate"):
        _ = results.trainer_result
    assert repr(results).startswith("SeedResults([")


def test_a_single_run_is_also_the_published_experiment_result() -> None:
    result = SeedResults.of_single_run(ExperimentResult(world=WORLD, trainer_result=STATS))
    assert isinstance(result, ExperimentResult)
    assert isinstance(result, SeedResults) and isinstance(result, list)
    assert result.world is WORLD
    assert result.trainer_result is STATS
    assert result == [STATS]
    assert [field.name for field in dataclasses.fields(result)] == ["world", "trainer_result"]
    assert repr(result) == f"SeedResults([{STATS!r}])"


def test_a_run_that_did_not_train_has_a_none_result() -> None:
    result = SeedResults.of_single_run(ExperimentResult(world=WORLD, trainer_result=None))
    assert result.trainer_result is None
    assert result == [None]


def test_one_result_without_a_world_ran_elsewhere() -> None:
    result = SeedResults([STATS])
    assert result.trainer_result is STATS
    assert not isinstance(result, ExperimentResult)
    with pytest.raises(AttributeError, match="only a single experiment"):
        _ = result.world


def test_a_world_belongs_to_exactly_one_result() -> None:
    with pytest.raises(ValueError, match="a world belongs to a single run, but there are 2"):
        SeedResults([STATS, STATS], world=WORLD)


def test_a_run_on_ray_train_workers_has_rank_0s_result_and_says_where_its_world_is() -> None:
    result = WorkersRunResult(STATS)
    assert result.trainer_result is STATS
    assert "WorkersRunResult" in repr(result)
    single = SeedResults.of_single_run(result)
    assert isinstance(single, ExperimentResult)
    assert single.trainer_result is STATS
    for each in (result, single):
        with pytest.raises(AttributeError, match="Ray Train workers"):
            _ = each.world
