"""Tests of DictEncoder and DictActionCritic: how each kind of entry is read, image layouts,
key selection, and the errors for observations that do not fit the space."""

import functools

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.data import Batch
from tianshou.utils.net.dict_encoder import (
    DictActionCritic,
    DictEncoder,
    ImageEncoder,
    is_image_space,
)
from tianshou.utils.net.layers import EnsembleLinear

SPACE = gym.spaces.Dict(
    {
        "pos": gym.spaces.Box(-1.0, 1.0, (2,)),
        "goal": gym.spaces.Discrete(3),
        "camera": gym.spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8),
    }
)


def sample(space: gym.spaces.Dict, size: int) -> dict[str, np.ndarray]:
    space.seed(0)
    return {key: np.stack([sub.sample() for _ in range(size)]) for key, sub in space.items()}


def test_flat_entries_are_concatenated_and_discrete_ones_one_hot() -> None:
    space = gym.spaces.Dict(
        {"pos": gym.spaces.Box(-1.0, 1.0, (2,)), "goal": gym.spaces.Discrete(3)}
    )
    encoder = DictEncoder(observation_space=space, hidden_sizes=())
    obs = {"pos": np.array([[0.5, -0.5]]), "goal": np.array([2])}
    features, state = encoder(obs)
    # the space orders its keys: goal (one-hot), then pos
    assert features.tolist() == [[0.0, 0.0, 1.0, 0.5, -0.5]] and state is None
    assert encoder.output_dim == 5


def test_images_go_through_a_cnn_and_the_output_width_is_declared() -> None:
    encoder = DictEncoder(observation_space=SPACE, action_shape=4, hidden_sizes=[16])
    assert set(encoder.image_encoders) == {"camera"}
    out, _ = encoder(Batch(sample(SPACE, 6)))  # a collected Batch reads like a dict
    assert out.shape == (6, 4) and encoder.output_dim == 4
    body = DictEncoder(observation_space=SPACE, hidden_sizes=[16, 12])
    assert body(sample(SPACE, 2))[0].shape == (2, 12) and body.output_dim == 12


def test_the_image_features_depend_on_the_pixels() -> None:
    torch.manual_seed(0)
    encoder = DictEncoder(observation_space=SPACE, hidden_sizes=[16])
    obs = sample(SPACE, 2)
    before, _ = encoder(obs)
    obs["camera"] = 255 - obs["camera"]
    after, _ = encoder(obs)
    assert not torch.allclose(before, after)


@pytest.mark.parametrize(("shape", "channels_last"), [((8, 6, 3), True), ((3, 8, 6), False)])
def test_image_layout_is_read_from_the_channel_axis(
    shape: tuple[int, int, int], channels_last: bool
) -> None:
    encoder = ImageEncoder(shape, channels=[4])
    assert encoder.channels_last is channels_last
    images = torch.zeros((2, *shape), dtype=torch.uint8)
    assert encoder(images).shape == (2, encoder.output_dim)
    # two stride-2 halvings of an 8x6 image would be 2x2; one is 4x3, with 4 channels
    assert encoder.output_dim == 4 * 4 * 3


def test_image_spaces_are_uint8_boxes_of_three_axes() -> None:
    assert is_image_space(gym.spaces.Box(0, 255, (4, 4, 1), dtype=np.uint8))
    assert not is_image_space(gym.spaces.Box(0.0, 1.0, (4, 4, 1)))
    assert not is_image_space(gym.spaces.Box(0, 255, (4, 4), dtype=np.uint8))


def test_keys_select_and_order_the_entries() -> None:
    encoder = DictEncoder(observation_space=SPACE, hidden_sizes=(), keys=["pos", "goal"])
    obs = {"pos": np.array([[0.1, 0.2]]), "goal": np.array([1])}  # no camera needed
    assert encoder(obs)[0][0].tolist() == pytest.approx([0.1, 0.2, 0.0, 1.0, 0.0])


def test_bad_configuration_and_input_are_clear_errors() -> None:
    with pytest.raises(TypeError, match=r"needs a gymnasium\.spaces\.Dict"):
        DictEncoder(observation_space=gym.spaces.Box(0.0, 1.0, (2,)))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="keys must name at least one entry"):
        DictEncoder(observation_space=SPACE, keys=["speed"])
    nested = gym.spaces.Dict({"inner": gym.spaces.Dict({"x": gym.spaces.Discrete(2)})})
    with pytest.raises(TypeError, match="entry 'inner' has the space Dict"):
        DictEncoder(observation_space=nested)
    encoder = DictEncoder(observation_space=SPACE)
    with pytest.raises(ValueError, match="expects dict observations with the entry"):
        encoder(np.zeros((2, 5)))
    obs = sample(SPACE, 2)
    obs["pos"] = np.zeros((2, 3))
    with pytest.raises(ValueError, match=r"entry 'pos' has shape \(2, 3\)"):
        encoder(obs)


def test_action_critic_reads_the_action() -> None:
    torch.manual_seed(0)
    critic = DictActionCritic(observation_space=SPACE, action_shape=2, hidden_sizes=[16])
    obs = sample(SPACE, 3)
    q0 = critic(obs, np.zeros((3, 2)))
    q1 = critic(obs, np.ones((3, 2)))
    assert q0.shape == (3, 1) and not torch.allclose(q0, q1)
    with pytest.raises(ValueError, match="expects actions of 2 entries"):
        critic(obs, np.zeros((3, 3)))


def test_action_critic_with_ensemble_layers_is_an_ensemble_on_one_encoding() -> None:
    """Member ``i`` of the ensemble is the MLP with the ``i``-th weights of every layer, all
    reading the same encoded observation and action."""
    torch.manual_seed(0)
    ensemble = DictActionCritic(
        observation_space=SPACE,
        action_shape=2,
        hidden_sizes=[16],
        linear_layer=functools.partial(EnsembleLinear, 3),
    )
    obs, act = sample(SPACE, 4), np.ones((4, 2), dtype=np.float32)
    q = ensemble(obs, act)
    assert q.shape == (3, 4, 1)
    features = torch.cat([ensemble.encoder(obs)[0], torch.as_tensor(act)], dim=1)
    first, _, last = ensemble.head.model
    for member in range(3):
        hidden = torch.relu(features @ first.weight[member] + first.bias[member])
        expected = hidden @ last.weight[member] + last.bias[member]
        assert torch.allclose(q[member], expected, atol=1e-6)
    assert not torch.allclose(q[0], q[1])
