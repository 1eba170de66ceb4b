import numpy as np
import pytest

from test.highlevel.hpo.conftest import tiny_cartpole_ppo_template
from tianshou.evaluation.launcher import JoblibConfig, JoblibExpLauncher
from tianshou.highlevel.hpo.seed_runs import SeedRunner, run_recording_test_returns


def test_lockstep_seeds_give_the_returns_of_their_solo_runs_and_report_every_epoch() -> None:
    template = tiny_cartpole_ppo_template(seed=5)
    values = {"lr": 3e-3}
    experiments = template.seeded_experiments(values, 5, 2, "lockstep")
    reports: list[tuple[int, list[float]]] = []
    np.random.seed(123)
    callers_draw = np.random.get_state()[1].copy()
    returns = SeedRunner().run(experiments, lambda e, r: reports.append((e, r.tolist())))
    assert np.array_equal(np.random.get_state()[1], callers_draw)
    assert returns.shape == (2, 2)
    assert [epoch for epoch, _ in reports] == [1, 2]
    assert [r for _, r in reports] == returns.T.tolist()
    solo = [run_recording_test_returns(e).test_returns for e in experiments]
    assert returns.tolist() == solo


def test_a_parallel_launcher_reports_after_the_runs_with_the_same_returns() -> None:
    template = tiny_cartpole_ppo_template(seed=5)
    experiments = template.seeded_experiments({"lr": 3e-3}, 5, 2, "parallel")
    launcher = JoblibExpLauncher(JoblibConfig(n_jobs=1, backend="threading", verbose=0))
    runner = SeedRunner(launcher)
    assert not runner.reports_during_training
    reports: list[int] = []
    returns = runner.run(experiments, lambda e, r: reports.append(e))
    assert reports == [1, 2]
    assert returns.tolist() == SeedRunner().run(experiments).tolist()
    assert launcher.experiment_runner.__name__ == "default_experiment_execution"


def test_runs_without_test_envs_or_epochs_are_refused() -> None:
    template = tiny_cartpole_ppo_template(max_epochs=0)
    experiments = template.seeded_experiments({}, 1, 1, "no_epochs")
    with pytest.raises(ValueError, match="no epoch"):
        SeedRunner().run(experiments)
    with pytest.raises(ValueError, match="no experiments"):
        SeedRunner().run([])
