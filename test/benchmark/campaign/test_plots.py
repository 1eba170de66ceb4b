"""The figures' numbers: runs put on one grid of env steps; the per-task normalisation of the
aggregate; one figure per budget family, a style per algorithm."""

from pathlib import Path

from benchmark.campaign.plan import available_algorithms
from benchmark.campaign.plots import (
    algorithm_style,
    budget_family,
    common_curves,
    normalized_scores,
    plot_task_families,
)


def run(task: str, algorithm: str, seed: int, steps: list[int], returns: list[float]) -> dict:
    return {
        "task": task,
        "algorithm": algorithm,
        "seed": seed,
        "test_env_steps": steps,
        "test_returns": returns,
        "final_return": returns[-1],
    }


def test_runs_are_interpolated_onto_their_common_steps_up_to_the_shortest() -> None:
    runs = [
        run("T", "a", 0, [0, 100, 200], [0.0, 10.0, 20.0]),
        run("T", "a", 1, [0, 150, 300], [0.0, 30.0, 60.0]),
    ]
    grid, curves = common_curves(runs)
    assert grid.tolist() == [0, 100, 150, 200]
    assert curves.tolist() == [[0.0, 10.0, 15.0, 20.0], [0.0, 20.0, 30.0, 40.0]]


def test_scores_are_normalised_per_task_between_its_lowest_and_highest_run() -> None:
    runs = [
        run("T1", "a", 0, [0], [10.0]),
        run("T1", "a", 1, [0], [20.0]),
        run("T1", "b", 0, [0], [30.0]),
        run("T2", "a", 0, [0], [-5.0]),
        run("T2", "a", 1, [0], [5.0]),
        run("T2", "b", 0, [0], [0.0]),
        run("T2", "b", 1, [0], [5.0]),  # b has no seed 1 on T1: left out
    ]
    scores = normalized_scores(runs)
    assert scores["a"].tolist() == [[0.0, 0.0], [0.5, 1.0]]
    assert scores["b"].tolist() == [[1.0, 0.5]]


def test_every_known_algorithm_has_its_own_colour_and_style() -> None:
    styles = [algorithm_style(algorithm) for algorithm in available_algorithms()]
    assert len(set(styles)) == len(styles)
    assert len({color for color, _ in styles}) == len(styles)  # colours alone tell them apart


def test_each_budget_family_of_a_task_gets_its_own_figure(tmp_path: Path) -> None:
    sac = [run("T", "sac", seed, [1000, 2000], [1.0, 2.0]) | {"warmup_env_steps": 1000,
           "env_steps": 2000} for seed in (0, 1)]  # fmt: skip
    ppo = [run("T", "ppo", seed, [0, 9000], [1.0, 5.0]) | {"env_steps": 9000} for seed in (0, 1)]
    paths = plot_task_families("T", {"sac": sac, "ppo": ppo}, tmp_path, reps=50)
    assert [p.name for p in paths] == ["T-off-policy.png", "T-on-policy.png"]
    assert budget_family(sac) == "off-policy" and budget_family(ppo) == "on-policy"
    assert all(p.stat().st_size > 0 for p in paths)
