import json
from pathlib import Path

import pytest

from tianshou.highlevel.env import EnvFactoryRegistered, VectorEnvType
from tianshou.highlevel.experiment import PPOExperimentBuilder
from tianshou.highlevel.hpo.best_config import BestConfiguration, load_best_params


def test_saved_configuration_loads_back_and_configures_a_builder(tmp_path: Path) -> None:
    path = str(tmp_path / "out" / "best_config.json")
    values = {"lr": 7e-4, "batch_size": 32, "hidden_sizes": (16, 16)}
    BestConfiguration("PPO", values, 3, "reevaluation", {"iqm": 1.0}).save(path)
    assert json.loads(Path(path).read_text())["hyperparameters"]["hidden_sizes"] == [16, 16]
    assert load_best_params(path) == values
    loaded = BestConfiguration.load(path)
    assert (loaded.algorithm, loaded.trial_number, loaded.chosen_by) == ("PPO", 3, "reevaluation")
    builder = PPOExperimentBuilder(
        EnvFactoryRegistered(task="CartPole-v1", venv_type=VectorEnvType.DUMMY)
    )
    experiment = loaded.configure(builder).build()
    assert experiment.algorithm_factory.params.lr == 7e-4  # type: ignore[attr-defined]
    assert experiment.training_config.batch_size == 32


def test_other_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"lr": 1e-3}))
    with pytest.raises(ValueError, match="not a best-configuration file"):
        load_best_params(str(path))
