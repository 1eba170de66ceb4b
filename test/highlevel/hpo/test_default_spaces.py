import optuna
import pytest

from tianshou.highlevel.hpo.binding import BINDINGS
from tianshou.highlevel.hpo.default_spaces import default_search_space


@pytest.mark.parametrize("algorithm", ["SAC", "TD3", "PPO", "DQN"])
def test_default_spaces_sample_values_their_binding_accepts(algorithm: str) -> None:
    space = default_search_space(algorithm.lower())
    BINDINGS[algorithm].check_names(space.names)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    trial = study.ask()
    values = space.sample(trial)
    assert set(values) <= set(space.names)
    assert len(values) >= 5


def test_unknown_algorithm_is_refused() -> None:
    with pytest.raises(ValueError, match="known"):
        default_search_space("A2C")
