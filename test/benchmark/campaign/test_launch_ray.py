"""The campaign's Ray launcher on a local Ray: a run's directory travels to its task and back
(a file the driver had is still there, the run's own files arrive), and a failed run is
reported without stopping the others."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmark.campaign.execute import RESULT_FILE, RunOutcome
from benchmark.campaign.launch_ray import RayLauncher
from benchmark.campaign.plan import RunSpec
from test.local_ray import fresh_local_ray

TINY_PPO = RunSpec("Hopper-v5", "ppo", 0, 300, ("--hidden-sizes", "16", "--num-test-envs", "1"))
FAILING = RunSpec("Hopper-v5", "reinforce", 0, 300, ("--buffer-size", "0"))


@pytest.fixture
def local_ray() -> Iterator[Any]:
    with fresh_local_ray(num_cpus=1) as ray:
        yield ray


def test_runs_travel_to_their_tasks_and_back(local_ray: Any, tmp_path: Path) -> None:
    run_dir = TINY_PPO.run_dir(tmp_path)
    run_dir.mkdir(parents=True)
    (run_dir / "from_the_driver.txt").write_text("kept")
    outcomes: list[RunOutcome] = []
    RayLauncher(tmp_path, "abc123", None, max_concurrent=1).run(
        [FAILING, TINY_PPO], outcomes.append
    )

    by_algorithm = {outcome.spec.algorithm: outcome for outcome in outcomes}
    assert by_algorithm.keys() == {"ppo", "reinforce"}
    failed = by_algorithm["reinforce"]
    assert failed.result is None
    assert failed.error is not None and failed.error.startswith("Ray task failed: ")
    finished = by_algorithm["ppo"]
    assert finished.error is None and finished.result is not None
    assert finished.result["commit"] == "abc123"
    assert (run_dir / "from_the_driver.txt").read_text() == "kept"
    assert (run_dir / RESULT_FILE).exists()
    assert local_ray.is_initialized(), "a Ray the launcher did not start is left running"


def test_max_concurrent_must_allow_a_run() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        RayLauncher(Path("out"), "abc123", None, max_concurrent=0)
