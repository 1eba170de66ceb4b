import optuna
import pytest

from tianshou.highlevel.hpo.space import (
    CategoricalDimension,
    FloatDimension,
    IntDimension,
    SearchSpace,
)


def sac_like_space() -> SearchSpace:
    return SearchSpace(
        [
            FloatDimension("lr", 1e-4, 1e-2, log=True),
            IntDimension("n_step", 1, 5),
            CategoricalDimension("auto_alpha", [True, False]),
            FloatDimension("alpha_lr", 1e-4, 1e-3, log=True, condition=("auto_alpha", (True,))),
            FloatDimension("alpha", 0.01, 0.5, condition=("auto_alpha", (False,))),
            CategoricalDimension("hidden_sizes", [(64, 64), [32]]),
        ]
    )


def test_conditional_dimensions_are_sampled_only_when_their_condition_holds() -> None:
    space = sac_like_space()
    fixed = {"lr": 1e-3, "n_step": 2, "auto_alpha": False, "alpha": 0.1, "hidden_sizes": "32"}
    values = space.sample(optuna.trial.FixedTrial(fixed))
    assert values == {
        "lr": 1e-3,
        "n_step": 2,
        "auto_alpha": False,
        "alpha": 0.1,
        "hidden_sizes": (32,),
    }
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        trial = study.ask()
        sampled = space.sample(trial)
        assert ("alpha_lr" in sampled) == sampled["auto_alpha"]
        assert ("alpha" in sampled) != sampled["auto_alpha"]
        assert 1e-4 <= sampled["lr"] <= 1e-2 and sampled["n_step"] in range(1, 6)
        assert sampled["hidden_sizes"] in [(64, 64), (32,)]
        study.tell(trial, 0.0)


def test_integer_sequence_choices_are_stored_as_text() -> None:
    study = optuna.create_study()
    trial = study.ask()
    value = SearchSpace([CategoricalDimension("hidden_sizes", [(8, 8)])]).sample(trial)
    assert value == {"hidden_sizes": (8, 8)}
    assert trial.params == {"hidden_sizes": "8-8"}


@pytest.mark.parametrize(
    "make",
    [
        lambda: FloatDimension("lr", 0.0, 1.0, log=True),
        lambda: FloatDimension("lr", 2.0, 1.0),
        lambda: FloatDimension("lr", 0.1, 1.0, log=True, step=0.1),
        lambda: IntDimension("n", 1, 10, log=True, step=2),
        lambda: CategoricalDimension("c", []),
        lambda: CategoricalDimension("c", [1, 1]),
    ],
)
def test_bad_dimensions_are_refused(make: object) -> None:
    with pytest.raises(ValueError):
        make()  # type: ignore[operator]


def test_bad_types_are_refused() -> None:
    with pytest.raises(TypeError, match="integers"):
        IntDimension("n", 1.5, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="scalar"):
        CategoricalDimension("c", [{"a": 1}])


def test_space_refuses_duplicates_and_forward_conditions() -> None:
    with pytest.raises(ValueError, match="twice"):
        SearchSpace([IntDimension("n", 1, 2), IntDimension("n", 1, 3)])
    with pytest.raises(ValueError, match="not declared before"):
        SearchSpace(
            [
                FloatDimension("alpha", 0.1, 0.2, condition=("auto_alpha", (False,))),
                CategoricalDimension("auto_alpha", [True, False]),
            ]
        )
