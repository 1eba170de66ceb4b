"""Tests of the sequence-capable recurrent networks in tianshou/utils/net/recurrent.py."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.data import Batch
from tianshou.utils.net.dict_encoder import DictEncoder
from tianshou.utils.net.recurrent import (
    RecurrentDiscreteActor,
    RecurrentGaussianActor,
    RecurrentQCritic,
    RecurrentQNet,
    RecurrentValueNet,
    SequenceEncoder,
)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_state_has_the_cells_keys_and_batch_first_shape(cell: str) -> None:
    actor = RecurrentDiscreteActor(obs_dim=3, action_num=2, hidden_size=8, layer_num=2, cell=cell)
    _, state = actor(np.zeros((5, 3)))
    expected = {"hidden", "cell"} if cell == "lstm" else {"hidden"}
    assert set(state) == expected
    assert all(value.shape == (5, 2, 8) for value in state.values())
    assert all(not value.requires_grad for value in state.values())


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_one_sequence_pass_equals_stepping_with_the_state(cell: str) -> None:
    torch.manual_seed(0)
    critic = RecurrentValueNet(obs_dim=2, hidden_size=6, cell=cell)
    obs = torch.randn(3, 7, 2)
    initial = {key: torch.randn_like(value) for key, value in critic.initial_state(3).items()}
    sequence_values, sequence_state = critic(obs, initial)
    state = initial
    stepped = []
    for t in range(7):
        value, state = critic(obs[:, t], state)
        stepped.append(value)
    assert sequence_values.shape == (3, 7)
    assert torch.allclose(sequence_values, torch.stack(stepped, dim=1), atol=1e-6)
    for key in state:
        assert torch.allclose(sequence_state[key], state[key], atol=1e-6)


def test_no_state_is_the_zero_state() -> None:
    torch.manual_seed(0)
    net = RecurrentQNet(obs_dim=2, action_num=3, hidden_size=4)
    obs = torch.randn(2, 4, 2)
    without, _ = net(obs)
    with_zeros, _ = net(obs, net.initial_state(2))
    assert torch.equal(without, with_zeros)


def test_the_state_carries_memory() -> None:
    torch.manual_seed(0)
    net = RecurrentDiscreteActor(obs_dim=1, action_num=2, hidden_size=4, cell="gru")
    _, after_ones = net(torch.ones(1, 3, 1))
    _, after_minus = net(-torch.ones(1, 3, 1))
    same_obs = torch.zeros(1, 1)
    assert not torch.allclose(net(same_obs, after_ones)[0], net(same_obs, after_minus)[0])


def test_gaussian_actor_sigma_is_free_or_conditioned() -> None:
    free = RecurrentGaussianActor(obs_dim=2, action_dim=3, hidden_size=4)
    (mu, sigma), _ = free(np.zeros((5, 6, 2)))
    assert mu.shape == sigma.shape == (5, 6, 3)
    assert torch.allclose(sigma, torch.ones_like(sigma))
    conditioned = RecurrentGaussianActor(2, 3, hidden_size=4, conditioned_sigma=True)
    assert conditioned.log_sigma is None
    (mu, sigma), _ = conditioned(np.zeros((5, 2)))
    assert mu.shape == sigma.shape == (5, 3)
    assert bool((sigma > 0).all())


def test_q_critic_shares_features_across_actions() -> None:
    torch.manual_seed(0)
    critic = RecurrentQCritic(obs_dim=2, action_dim=1, hidden_size=4)
    obs = torch.randn(3, 5, 2)
    features, _ = critic.features(obs)
    act = torch.randn(3, 5, 1)
    direct, _ = critic(obs, act)
    assert direct.shape == (3, 5)
    assert torch.allclose(critic.value(features, act), direct)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"obs_dim": 2, "cell": "rnn"}, "cell"),
        ({"obs_dim": 0}, "positive"),
        ({"obs_dim": 2, "layer_num": 0}, "positive"),
    ],
)
def test_bad_settings_are_clear_errors(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SequenceEncoder(**kwargs)


def test_bad_shapes_are_clear_errors() -> None:
    net = RecurrentValueNet(obs_dim=3, hidden_size=4)
    with pytest.raises(ValueError, match="obs of shape"):
        net(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="recurrent state must have shape"):
        net(np.zeros((2, 3)), {"hidden": torch.zeros(5, 1, 4), "cell": torch.zeros(5, 1, 4)})


CAMERA_SPACE = gym.spaces.Dict(
    {
        "goal": gym.spaces.Discrete(3),
        "camera": gym.spaces.Box(0, 255, (6, 6, 1), dtype=np.uint8),
    }
)


def dict_observations(leading: tuple[int, ...], seed: int = 0) -> Batch:
    rng = np.random.default_rng(seed)
    return Batch(
        goal=rng.integers(3, size=leading),
        camera=rng.integers(0, 256, size=(*leading, 6, 6, 1), dtype=np.uint8),
    )


def test_a_preprocess_net_encodes_structured_observations_in_steps_and_sequences() -> None:
    torch.manual_seed(0)
    encoder = DictEncoder(observation_space=CAMERA_SPACE, hidden_sizes=[16])
    actor = RecurrentDiscreteActor(obs_dim=16, action_num=2, hidden_size=8, preprocess_net=encoder)
    obs = dict_observations((3, 5))
    logits, final = actor(obs, sequence=True)
    assert logits.shape == (3, 5, 2)
    state = None
    for t in range(5):
        step_logits, state = actor(obs[:, t], state)  # one step: the default with a preprocess_net
        assert torch.allclose(step_logits, logits[:, t], atol=1e-6)
    assert torch.allclose(state["hidden"], final["hidden"], atol=1e-6)
    # the image encoder is trained with the recurrent layer
    logits.sum().backward()
    assert encoder.image_encoders["camera"].net[0].weight.grad is not None


def test_structured_observations_without_a_preprocess_net_are_a_clear_error() -> None:
    actor = RecurrentDiscreteActor(obs_dim=2, action_num=2)
    with pytest.raises(TypeError, match="need a preprocess_net"):
        actor(dict_observations((4,)))
    with pytest.raises(ValueError, match="sequence=True"):
        actor(np.zeros((4, 2)), sequence=True)


def test_the_preprocess_net_width_must_be_obs_dim() -> None:
    encoder = DictEncoder(observation_space=CAMERA_SPACE, hidden_sizes=[16])
    with pytest.raises(ValueError, match="width of the preprocess_net's features, 16"):
        RecurrentValueNet(obs_dim=8, preprocess_net=encoder)
