"""The random-action samplers draw exactly what ``Space.sample`` draws."""

import gymnasium as gym
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tianshou.data._space_sampling import space_sampler

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
float_dtypes = st.sampled_from([np.float16, np.float32, np.float64])


@settings(max_examples=60, deadline=None)
@given(shape=shapes, dtype=float_dtypes, seed=st.integers(0, 2**31), width=st.floats(0.01, 1e3))
def test_bounded_float_box_sample_equals_space_sample(
    shape: tuple[int, ...], dtype: type, seed: int, width: float
) -> None:
    rng = np.random.default_rng(seed)
    low = rng.uniform(-width, 0, shape).astype(dtype)
    high = (low.astype(np.float64) + rng.uniform(0.001, width, shape)).astype(dtype)
    ours, theirs = gym.spaces.Box(low, high, dtype=dtype), gym.spaces.Box(low, high, dtype=dtype)
    ours.seed(seed)
    theirs.seed(seed)
    sample = space_sampler(ours)
    for _ in range(5):
        drawn, expected = sample(), theirs.sample()
        assert drawn.dtype == expected.dtype and drawn.shape == expected.shape
        np.testing.assert_array_equal(drawn, expected)
    # the generators are left in the same state: later draws of any kind agree
    assert ours.np_random.integers(2**62) == theirs.np_random.integers(2**62)


def test_reseeding_the_space_reseeds_the_sampler() -> None:
    space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    sample = space_sampler(space)
    space.seed(7)
    first = sample()
    space.seed(7)
    np.testing.assert_array_equal(sample(), first)


class ConstantBox(gym.spaces.Box):
    def sample(self, mask: None = None, probability: None = None) -> np.ndarray:
        return np.zeros(self.shape, self.dtype)


def test_other_spaces_use_their_own_sample() -> None:
    partly_bounded = gym.spaces.Box(
        np.array([0.0, -np.inf]), np.array([1.0, 1.0]), dtype=np.float64
    )
    integer_box = gym.spaces.Box(0, 5, (2,), np.int64)
    for space in (partly_bounded, integer_box, gym.spaces.Discrete(4)):
        assert space_sampler(space) == space.sample
    subclass = ConstantBox(-1.0, 1.0, (2,), np.float32)
    np.testing.assert_array_equal(space_sampler(subclass)(), np.zeros(2, np.float32))


@settings(max_examples=30, deadline=None)
@given(shape=shapes, dtype=float_dtypes, seed=st.integers(0, 2**31), bound=st.floats(1e-3, 1e3))
def test_equal_bounds_sample_equals_space_sample(
    shape: tuple[int, ...], dtype: type, seed: int, bound: float
) -> None:
    ours, theirs = (gym.spaces.Box(-bound, bound / 3, shape, dtype) for _ in range(2))
    ours.seed(seed)
    theirs.seed(seed)
    sample = space_sampler(ours)
    for _ in range(5):
        np.testing.assert_array_equal(sample(), theirs.sample())
