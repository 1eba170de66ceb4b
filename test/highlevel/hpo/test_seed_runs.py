import numpy as np
import pytest
import torch

from test.highlevel.hpo.conftest import tiny_cartpole_ppo_template
from tianshou.data import EpochStats
from tianshou.evaluation.launcher import JoblibConfig, JoblibExpLauncher
from tianshou.highlevel.hpo.seed_runs import (
    LockstepRun,
    SeedRunner,
    run_in_lockstep,
    run_recording_test_returns,
)


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


def losses(stats: EpochStats) -> dict[str, float]:
    assert stats.training_stat is not None
    return {**stats.training_stat.get_loss_stats_dict(), **stats.training_stat.smoothed_loss}


def test_a_lockstep_seed_trains_bit_identically_to_the_same_seed_alone() -> None:
    """Each seed's returns, losses and final weights in lockstep equal its solo run's exactly,
    though the seeds draw from the same global generators (numpy's shuffles the minibatches and
    seeds the envs, torch's samples the actions) between each other's epochs."""
    template = tiny_cartpole_ppo_template(seed=5)
    experiments = template.seeded_experiments({"lr": 3e-3}, 5, 3, "identical")
    together = [LockstepRun(e) for e in experiments]
    run_in_lockstep(together)
    for experiment, run in zip(experiments, together, strict=True):
        alone = LockstepRun(experiment)
        run_in_lockstep([alone])
        assert run.returns == alone.returns and len(run.returns) == 2
        assert [losses(s) for s in run.epoch_stats] == [losses(s) for s in alone.epoch_stats]
        assert run.world is not None and alone.world is not None
        weights = run.world.algorithm.policy.state_dict()
        solo_weights = alone.world.algorithm.policy.state_dict()
        assert list(weights) == list(solo_weights)
        for name, tensor in weights.items():
            assert torch.equal(tensor, solo_weights[name]), name
    first_weights = together[0].world.algorithm.policy.state_dict()  # type: ignore[union-attr]
    second_weights = together[1].world.algorithm.policy.state_dict()  # type: ignore[union-attr]
    assert not all(torch.equal(first_weights[k], second_weights[k]) for k in first_weights)
