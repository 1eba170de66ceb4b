"""The MuJoCo example scripts run end to end (tiny budgets), save a policy, and watch it again."""

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tianshou.data import CollectStats, InfoStats

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mujoco"


@pytest.fixture(autouse=True)
def examples_on_path() -> Iterator[None]:
    sys.path.insert(0, str(EXAMPLES))
    try:
        yield
    finally:
        sys.path.remove(str(EXAMPLES))


PPO_BUDGET = ["--epoch-num-steps", "128", "--collection-step-num-env-steps", "64"]
PPO_BUDGET += ["--num-train-envs", "2", "--batch-size", "32", "--backend", "dummy"]
TINY = ["--hidden-sizes", "16", "--num-test-envs", "2", "--no-progress", "--epoch", "1"]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    ("module_name", "budget"),
    [
        (
            "mujoco_sac",
            ["--epoch-num-steps", "60", "--start-timesteps", "64", "--batch-size", "32"],
        ),
        (
            "mujoco_ppo",
            PPO_BUDGET,
        ),
    ],
)
def test_script_trains_saves_and_watches(
    module_name: str, budget: list[str], tmp_path: Path
) -> None:
    torch.set_num_threads(1)
    module = __import__(module_name)
    args = [*TINY, *budget, "--logdir", str(tmp_path), "--task", "Hopper-v5"]
    result = module.main(args)
    assert isinstance(result, InfoStats)
    assert result.train_step >= int(budget[1])
    saved = tmp_path / "Hopper-v5" / module_name.removeprefix("mujoco_") / "0" / "policy.pth"
    assert saved.exists()
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(saved.parent))
    watched = module.main([*args, "--watch", "--resume-path", str(saved)])
    assert isinstance(watched, CollectStats)
    assert watched.n_collected_episodes == 2
