"""Tests of the factories of action-range-scaled exploration noise and parameter values."""

import numpy as np
import pytest

from tianshou.exploration import GaussianNoise
from tianshou.highlevel.env import Environments
from tianshou.highlevel.params.env_param import (
    FloatEnvValueFactory,
    FloatEnvValueFactoryMaxActionScaled,
    MaxActionScaled,
)
from tianshou.highlevel.params.noise import (
    MaxActionScaledGaussian,
    NoiseFactory,
    NoiseFactoryMaxActionScaledGaussian,
)


def test_gaussian_std_is_scaled_by_max_action(pendulum: Environments) -> None:
    noise = MaxActionScaledGaussian(0.1).create_noise(pendulum)  # Pendulum: max_action 2
    assert isinstance(noise, GaussianNoise)
    np.random.seed(0)
    draws = noise((20000,))
    assert draws.mean() == pytest.approx(0.0, abs=0.01)
    assert draws.std() == pytest.approx(0.2, rel=0.02)
    assert isinstance(MaxActionScaledGaussian(0.1), NoiseFactoryMaxActionScaledGaussian)
    assert isinstance(MaxActionScaledGaussian(0.1), NoiseFactory)


def test_noise_rejects_negative_std_and_discrete_envs(cartpole: Environments) -> None:
    with pytest.raises(ValueError, match="std_fraction"):
        MaxActionScaledGaussian(-0.1)
    with pytest.raises(TypeError, match="continuous environments"):
        MaxActionScaledGaussian(0.1).create_noise(cartpole)


def test_value_is_scaled_by_max_action(pendulum: Environments) -> None:
    factory = MaxActionScaled(0.25)
    assert isinstance(factory, FloatEnvValueFactoryMaxActionScaled)
    assert isinstance(factory, FloatEnvValueFactory)
    assert factory.create_value(pendulum) == 0.5  # type: ignore[arg-type]


def test_value_rejects_discrete_envs(cartpole: Environments) -> None:
    with pytest.raises(TypeError, match="continuous environments"):
        MaxActionScaled(0.5).create_value(cartpole)  # type: ignore[arg-type]


def test_str_shows_the_fraction() -> None:
    assert str(MaxActionScaled(0.5)) == "MaxActionScaled[value=0.5]"
    assert str(MaxActionScaledGaussian(0.1)) == "MaxActionScaledGaussian[std_fraction=0.1]"
