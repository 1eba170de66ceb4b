import numpy as np
import pytest

from tianshou.exploration import BaseNoise, GaussianNoise, OUNoise


def test_gaussian_noise_has_the_requested_moments() -> None:
    np.random.seed(0)
    draws = GaussianNoise(mu=1.5, sigma=0.5)((20000, 2))
    assert draws.shape == (20000, 2)
    assert abs(draws.mean() - 1.5) < 0.02
    assert abs(draws.std() - 0.5) < 0.02


def test_gaussian_noise_is_reproducible_with_numpy_seed() -> None:
    noise = GaussianNoise()
    np.random.seed(7)
    first = noise(3)
    np.random.seed(7)
    np.testing.assert_array_equal(first, noise(3))
    assert isinstance(noise, BaseNoise)
    noise.reset()


def test_zero_sigma_gives_a_constant() -> None:
    np.testing.assert_array_equal(GaussianNoise(mu=2.0, sigma=0.0)((4,)), np.full(4, 2.0))
    with pytest.raises(ValueError, match="sigma"):
        GaussianNoise(sigma=-1.0)


def test_ou_noise_follows_its_recursion() -> None:
    noise = OUNoise(mu=1.0, sigma=0.3, theta=0.15, dt=0.01)
    np.random.seed(1)
    got = [noise((2,)) for _ in range(3)]
    np.random.seed(1)
    x = np.zeros(2)
    for step in got:
        x = x + 0.15 * 0.01 * (1.0 - x) + 0.3 * np.sqrt(0.01) * np.random.normal(size=(2,))
        np.testing.assert_allclose(step, x)


def test_ou_noise_reverts_to_its_mean_and_is_correlated() -> None:
    np.random.seed(2)
    noise = OUNoise(mu=2.0, sigma=0.1, theta=1.0, dt=0.1)
    draws = np.array([noise(1)[0] for _ in range(3000)])
    assert abs(draws[1000:].mean() - 2.0) < 0.05
    assert np.corrcoef(draws[1000:-1], draws[1001:])[0, 1] > 0.8


def test_ou_noise_reset_and_shape_change() -> None:
    noise = OUNoise(x0=np.array([5.0, 5.0]), sigma=0.0, theta=0.5, dt=1.0)
    np.testing.assert_allclose(noise((2,)), [2.5, 2.5])
    np.testing.assert_allclose(noise((2,)), [1.25, 1.25])
    noise.reset()
    np.testing.assert_allclose(noise(2), [2.5, 2.5])
    assert noise((3,)).shape == (3,)  # a new shape restarts from 0
    np.testing.assert_allclose(noise(3, mu=4.0), [2.0, 2.0, 2.0])


def test_ou_noise_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="dt > 0"):
        OUNoise(dt=0.0)
