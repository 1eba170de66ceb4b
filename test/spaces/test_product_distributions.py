"""Tests of :mod:`tianshou.spaces.product_distributions`: each product distribution against
its parts built by hand with torch, the actor output widths, and the round trip between flat
action rows and the env's tuples and dicts (the algorithms that learn with them are tested in
``test/algorithm/test_spaces.py``)."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import kl_divergence

from tianshou.spaces.product_distributions import (
    ActionLayout,
    ProductDistribution,
    actor_output_dim,
    is_structured_action_space,
    product_dist_fn,
)

MULTI_DISCRETE = gym.spaces.MultiDiscrete([3, 4])
MULTI_BINARY = gym.spaces.MultiBinary(3)
DISCRETE_TUPLE = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3)))
HYBRID = gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Box(-1.0, 1.0, (1,))))
"""A discrete choice and its continuous parameter."""


def test_log_prob_and_entropy_sum_over_the_parts() -> None:
    torch.manual_seed(0)
    logits = torch.randn(5, 7)
    dist = product_dist_fn(MULTI_DISCRETE)(logits)
    act = dist.sample()
    first = torch.distributions.Categorical(logits=logits[:, :3])
    second = torch.distributions.Categorical(logits=logits[:, 3:])
    expected = first.log_prob(act[:, 0]) + second.log_prob(act[:, 1])
    assert act.shape == (5, 2) and act.dtype == torch.long
    assert torch.allclose(dist.log_prob(act), expected)
    assert torch.allclose(dist.entropy(), first.entropy() + second.entropy())


def test_hybrid_parts_are_a_categorical_and_a_gaussian() -> None:
    params = torch.tensor([[2.0, -1.0, 0.3, np.log(0.5)]])
    dist = product_dist_fn(HYBRID)(params)
    act = torch.tensor([[0.0, 0.1]])
    normal = torch.distributions.Normal(torch.tensor(0.3), torch.tensor(0.5))
    categorical = torch.distributions.Categorical(logits=params[0, :2])
    expected = categorical.log_prob(torch.tensor(0)) + normal.log_prob(torch.tensor(0.1))
    assert torch.allclose(dist.log_prob(act), expected.reshape(1))
    assert dist.mode.tolist() == [[0.0, pytest.approx(0.3)]]
    assert dist.sample().dtype == torch.float32


def test_multi_binary_is_independent_bernoullis() -> None:
    logits = torch.tensor([[0.0, 5.0, -5.0]])
    dist = product_dist_fn(MULTI_BINARY)(logits)
    assert dist.mode[0, 1:].tolist() == [1, 0]
    expected = torch.distributions.Bernoulli(logits=logits).log_prob(torch.ones(1, 3)).sum()
    assert torch.allclose(dist.log_prob(torch.ones(1, 3, dtype=torch.long)), expected)


def test_kl_divergence_sums_over_the_parts() -> None:
    torch.manual_seed(1)
    p_params, q_params = torch.randn(4, 4), torch.randn(4, 4)
    p, q = product_dist_fn(HYBRID)(p_params), product_dist_fn(HYBRID)(q_params)
    by_part = kl_divergence(p.components[0], q.components[0]) + kl_divergence(
        p.components[1], q.components[1]
    )
    assert torch.allclose(kl_divergence(p, q), by_part)
    assert torch.allclose(kl_divergence(p, p), torch.zeros(4), atol=1e-6)


@pytest.mark.parametrize(
    ("space", "width"),
    [(MULTI_DISCRETE, 7), (MULTI_BINARY, 3), (DISCRETE_TUPLE, 5), (HYBRID, 4)],
)
def test_actor_output_dim(space: gym.Space, width: int) -> None:
    assert actor_output_dim(space) == width


def test_wrong_actor_output_width_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"needs an actor output of shape \(batch, 7\)"):
        product_dist_fn(MULTI_DISCRETE)(torch.zeros(2, 6))


@pytest.mark.parametrize(
    "space",
    [
        gym.spaces.MultiDiscrete([[2, 2], [2, 2]]),
        gym.spaces.Tuple((gym.spaces.Tuple((gym.spaces.Discrete(2),)),)),
        gym.spaces.Tuple((gym.spaces.Text(3),)),
    ],
)
def test_unsupported_parts_are_a_clear_error(space: gym.Space) -> None:
    with pytest.raises(ValueError, match="has no product distribution"):
        ActionLayout(space)


def test_multi_part_env_actions_have_their_space_dtype() -> None:
    space = gym.spaces.Dict(
        {"bits": gym.spaces.MultiBinary(3), "picks": gym.spaces.MultiDiscrete([2, 3])}
    )
    layout = ActionLayout(space)
    (action,) = layout.to_env_actions(np.array([[1, 0, 1, 1, 2]]))
    assert space.contains(action) and action["bits"].dtype == np.int8
    assert layout.from_env_actions([action]).tolist() == [[1, 0, 1, 1, 2]]


def test_env_actions_of_a_dict_space_round_trip() -> None:
    space = gym.spaces.Dict(
        {"move": gym.spaces.Discrete(3, start=1), "force": gym.spaces.Box(-1.0, 1.0, (2,))}
    )
    layout = ActionLayout(space)
    assert list(space.keys()) == ["force", "move"]  # the order of the flat columns
    rows = np.array([[0.5, 3.0, 0.0], [-0.2, -4.0, 2.0]], dtype=np.float32)
    env_actions = layout.to_env_actions(rows)
    assert all(space.contains(a) for a in env_actions)
    assert env_actions[0]["move"] == 1 and env_actions[1]["move"] == 3
    assert env_actions[0]["force"].tolist() == [0.5, 1.0]  # clipped to the bounds
    back = layout.from_env_actions(env_actions)
    assert np.allclose(back, [[0.5, 1.0, 0.0], [-0.2, -1.0, 2.0]])


@pytest.mark.parametrize(
    ("space", "structured"),
    [
        (MULTI_DISCRETE, True),
        (MULTI_BINARY, True),
        (DISCRETE_TUPLE, True),
        (gym.spaces.Dict({"move": gym.spaces.Discrete(2)}), True),
        (gym.spaces.Discrete(3), False),
        (gym.spaces.Box(-1.0, 1.0, (2,)), False),
    ],
)
def test_only_multi_part_spaces_need_a_product_distribution(
    space: gym.Space, structured: bool
) -> None:
    assert is_structured_action_space(space) is structured


def test_mean_and_variance_of_a_categorical_part_are_those_of_its_index() -> None:
    dist = product_dist_fn(DISCRETE_TUPLE)(torch.log(torch.tensor([[0.5, 0.5, 0.2, 0.3, 0.5]])))
    assert isinstance(dist, ProductDistribution)
    assert dist.mean.tolist() == [[pytest.approx(0.5), pytest.approx(1.3)]]
    assert dist.variance.tolist() == [[pytest.approx(0.25), pytest.approx(0.61)]]


def test_flat_layouts_pass_env_actions_through() -> None:
    layout = ActionLayout(MULTI_DISCRETE)
    rows = np.array([[2, 3], [0, 1]])
    assert not layout.is_composite
    assert layout.to_env_actions(rows) is rows
    assert np.array_equal(layout.from_env_actions(rows), rows)
