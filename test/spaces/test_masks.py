"""Tests of :mod:`tianshou.spaces.masks`: the legal-action mask convention, function by
function, on hand-made masks (the algorithms that honour it are tested in
``test/algorithm/test_masked_algorithms.py``)."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Categorical

from tianshou.data import Batch
from tianshou.spaces.masks import (
    action_mask,
    check_mask,
    legal_tensor,
    mask_logits,
    mask_q_values,
    masked_categorical,
    network_input,
    policy_input,
    random_legal_actions,
    sample_legal_actions,
    split_masked_obs,
    unmask_dead_ends,
)

OBS_DIM = 3
N = 4


def test_the_mask_is_the_mask_entry_of_an_observation_batch_only() -> None:
    mask = np.ones((2, N), dtype=bool)
    assert action_mask(Batch(obs=np.zeros((2, OBS_DIM)), mask=mask)) is mask
    assert action_mask(Batch(obs=np.zeros((2, OBS_DIM)))) is None
    assert action_mask({"obs": np.zeros((2, OBS_DIM)), "mask": mask}) is None
    assert action_mask(np.zeros((2, OBS_DIM))) is None


def test_split_feeds_obs_to_the_network_only_when_there_is_a_mask() -> None:
    inner = np.zeros((2, OBS_DIM))
    mask = np.ones((2, N), dtype=bool)
    assert split_masked_obs(Batch(obs=inner, mask=mask))[0] is inner
    plain = Batch(obs=inner, agent_id=np.zeros(2))
    assert split_masked_obs(plain) == (plain, None)
    assert split_masked_obs(inner) == (inner, None)


def test_all_false_row_names_the_row_and_env() -> None:
    mask = np.array([[True, False], [False, False]])
    with pytest.raises(ValueError, match=r"row 1 \(env_id 7\) allows no action"):
        check_mask(mask, Batch(env_id=np.array([3, 7])))
    with pytest.raises(ValueError, match=r"row 1 allows no action"):
        check_mask(torch.as_tensor(mask))
    branches = np.ones((2, 3, N), dtype=bool)
    branches[1, 2] = False
    with pytest.raises(ValueError, match="row 1, branch 2"):
        check_mask(branches)
    with pytest.raises(ValueError, match="shape"):
        check_mask(np.ones(3, dtype=bool))


def test_masked_logits_give_the_exact_distribution_over_the_legal_actions() -> None:
    logits = torch.tensor([[1.0, 5.0, 2.0, 0.5]], requires_grad=True)
    legal = np.array([[True, False, True, True]])
    dist = Categorical(logits=mask_logits(logits, legal))
    expected = Categorical(logits=logits.detach()[:, [0, 2, 3]])
    assert dist.probs[0, 1].item() == 0.0
    assert torch.allclose(dist.probs[0, [0, 2, 3]], expected.probs[0])
    assert torch.allclose(dist.entropy(), expected.entropy())
    assert torch.allclose(dist.log_prob(torch.tensor([2])), expected.log_prob(torch.tensor([1])))
    (dist.entropy() + dist.log_prob(torch.tensor([0]))).sum().backward()
    assert torch.isfinite(logits.grad).all() and logits.grad[0, 1] == 0.0


def test_probabilities_are_renormalised_over_the_legal_actions() -> None:
    probs = torch.tensor([[0.1, 0.6, 0.3]])
    dist = masked_categorical(Categorical(probs=probs), np.array([[True, False, True]]))
    assert torch.allclose(dist.probs, torch.tensor([[0.25, 0.0, 0.75]]))
    with pytest.raises(TypeError, match="Categorical"):
        masked_categorical(torch.distributions.Normal(0.0, 1.0), np.ones((1, 3), bool))


def test_random_legal_actions_are_legal_and_cover_every_legal_action() -> None:
    legal = np.zeros((3000, N), dtype=bool)
    legal[:, 1] = legal[::2, 3] = True
    act = random_legal_actions(legal, np.random.default_rng(0))
    assert legal[np.arange(3000), act].all()
    assert 0.45 < np.mean(act[::2] == 3) < 0.55


def test_space_draws_are_legal_reproducible_and_name_the_env() -> None:
    mask = np.array([[False, True, False, True]] * 50)
    space = gym.spaces.Discrete(N, start=10)
    spaces = [space] * 50
    space.seed(1)
    act = sample_legal_actions(spaces, mask)
    assert set(act.tolist()) == {11, 13}
    space.seed(1)
    assert np.array_equal(sample_legal_actions(spaces, mask), act)
    mask[4] = False
    with pytest.raises(ValueError, match=r"env_id 9"):
        sample_legal_actions(spaces, mask, {"env_id": np.arange(5, 55)})


def test_dead_ends_are_opened_for_bootstrapping_only() -> None:
    obs = Batch(obs=np.zeros((2, OBS_DIM)), mask=np.array([[True, False], [False, False]]))
    opened = unmask_dead_ends(obs)
    assert opened.mask.tolist() == [[True, False], [True, True]]
    assert obs.mask[1].tolist() == [False, False]
    intact = Batch(obs=np.zeros((1, OBS_DIM)), mask=np.array([[True, False]]))
    assert unmask_dead_ends(intact) is intact


def test_network_input_of_a_masked_batch_is_its_obs_entry() -> None:
    inner = np.zeros((2, OBS_DIM))
    assert network_input(Batch(obs=inner, mask=np.ones((2, N), dtype=bool))) is inner
    assert network_input(inner) is inner


def test_policy_input_checks_the_mask_and_names_the_env() -> None:
    inner = np.zeros((2, OBS_DIM))
    mask = np.array([[True, False, False, False], [False, True, True, False]])
    obs, got = policy_input(Batch(obs=Batch(obs=inner, mask=mask), info=Batch()))
    assert obs is inner and got is mask
    assert policy_input(Batch(obs=inner, info=Batch())) == (inner, None)
    mask[0] = False
    info = Batch(env_id=np.array([4, 5]))
    with pytest.raises(ValueError, match=r"row 0 \(env_id 4\) allows no action"):
        policy_input(Batch(obs=Batch(obs=inner, mask=mask), info=info))


def test_masked_q_values_are_minus_infinity_and_the_rest_unchanged() -> None:
    q = torch.tensor([[1.0, 5.0, 2.0, 0.5], [3.0, -1.0, 0.0, 4.0]])
    legal = np.array([[True, False, True, True], [False, True, True, False]])
    masked = mask_q_values(q, legal)
    assert masked.argmax(dim=-1).tolist() == [2, 2]
    assert torch.isneginf(masked[~torch.as_tensor(legal)]).all()
    assert torch.equal(masked[torch.as_tensor(legal)], q[torch.as_tensor(legal)])
    assert mask_q_values(q, None) is q


def test_a_mask_of_the_wrong_shape_names_both_shapes() -> None:
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*\(2, 4\)"):
        legal_tensor(np.ones((2, 3), dtype=bool), torch.zeros(2, N))
    assert legal_tensor(np.array([[1, 0, 1, 0]]), torch.zeros(1, N)).dtype == torch.bool
