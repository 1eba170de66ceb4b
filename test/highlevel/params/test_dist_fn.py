"""Tests of the distribution function factories."""

import pickle

import pytest
import torch
from torch.distributions import Categorical, Independent, Normal

from tianshou.highlevel.env import Environments
from tianshou.highlevel.params.dist_fn import (
    DistributionFunctionFactoryCategorical,
    DistributionFunctionFactoryIndependentGaussians,
)


@pytest.mark.parametrize("is_probs_input", [True, False])
def test_categorical_reads_probs_or_logits(cartpole: Environments, is_probs_input: bool) -> None:
    dist_fn = DistributionFunctionFactoryCategorical(is_probs_input).create_dist_fn(cartpole)
    probs = torch.tensor([[0.25, 0.75]])
    dist = dist_fn(probs if is_probs_input else probs.log())
    assert isinstance(dist, Categorical)
    torch.testing.assert_close(dist.probs, probs)
    assert pickle.loads(pickle.dumps(dist_fn)) is dist_fn


def test_independent_gaussians(pendulum: Environments) -> None:
    dist_fn = DistributionFunctionFactoryIndependentGaussians().create_dist_fn(pendulum)
    loc, scale = torch.zeros(3, 2), torch.ones(3, 2)
    dist = dist_fn((loc, scale))
    assert isinstance(dist, Independent)
    assert isinstance(dist.base_dist, Normal)
    assert dist.log_prob(loc).shape == (3,)
    torch.testing.assert_close(dist.log_prob(loc), Normal(loc, scale).log_prob(loc).sum(-1))
    assert pickle.loads(pickle.dumps(dist_fn)) is dist_fn


def test_wrong_env_type_is_named(cartpole: Environments, pendulum: Environments) -> None:
    with pytest.raises(AssertionError, match="requires discrete environments"):
        DistributionFunctionFactoryCategorical().create_dist_fn(pendulum)
    with pytest.raises(AssertionError, match="requires continuous environments"):
        DistributionFunctionFactoryIndependentGaussians().create_dist_fn(cartpole)
