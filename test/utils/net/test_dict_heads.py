"""Tests of the algorithm-specific networks on a DictEncoder body: DictHeadNet with
distributional, noisy and branching heads, and BCQ's DictVAE and DictPerturbation."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.data import Batch
from tianshou.utils.net.branching import BranchingNet
from tianshou.utils.net.common import Net
from tianshou.utils.net.dict_encoder import DictEncoder
from tianshou.utils.net.dict_heads import DictHeadNet, DictPerturbation, DictVAE
from tianshou.utils.net.discrete import NoisyLinear, noisy_layers

SPACE = gym.spaces.Dict(
    {
        "pos": gym.spaces.Box(-1.0, 1.0, (2,)),
        "goal": gym.spaces.Discrete(3),
        "camera": gym.spaces.Box(0, 255, (8, 8, 3), dtype=np.uint8),
    }
)


def sample(size: int) -> Batch:
    SPACE.seed(0)
    return Batch({key: np.stack([sub.sample() for _ in range(size)]) for key, sub in SPACE.items()})


def body() -> DictEncoder:
    return DictEncoder(observation_space=SPACE, hidden_sizes=[16], cnn_channels=[4])


def camera_gradient(module: torch.nn.Module) -> torch.Tensor:
    """The gradient of the first convolution of the camera's CNN (after a backward pass)."""
    convolutions = [m for m in module.modules() if isinstance(m, torch.nn.Conv2d)]
    grad = convolutions[0].weight.grad
    assert grad is not None
    return grad


def test_head_net_applies_a_distributional_head_to_the_encoded_observation() -> None:
    torch.manual_seed(0)
    encoder = body()
    head = Net(state_shape=16, action_shape=4, num_atoms=5, softmax=True)
    net = DictHeadNet(encoder=encoder, head=head)
    obs = sample(3)
    probs, state = net(obs, state="kept")
    assert probs.shape == (3, 4, 5) and state == "kept"
    assert torch.allclose(probs.sum(-1), torch.ones(3, 4))
    assert torch.equal(probs, head(encoder(obs)[0])[0])
    probs[:, 0, 0].sum().backward()
    assert camera_gradient(net).abs().sum() > 0, "the loss trains the CNN of the image entry"


def test_head_net_carries_noisy_layers_that_rainbow_finds() -> None:
    torch.manual_seed(0)
    noisy = {"linear_layer": NoisyLinear}
    head = Net(
        state_shape=16, action_shape=2, num_atoms=3, softmax=True, dueling_param=(noisy, noisy),
        **noisy,
    )  # fmt: skip
    net = DictHeadNet(encoder=body(), head=head)
    layers = noisy_layers(net)
    assert len(layers) == 2  # the output layers of the advantage and value streams
    obs = sample(2)
    first = net(obs)[0].detach()
    for layer in layers:
        layer.sample()
    assert not torch.allclose(first, net(obs)[0]), "new noise changes the training output"


def test_head_net_with_a_branching_head() -> None:
    net = DictHeadNet(
        encoder=body(), head=BranchingNet(state_shape=16, num_branches=3, action_per_branch=4)
    )
    q, _ = net(sample(5))
    assert q.shape == (5, 3, 4)


@pytest.mark.parametrize(
    "head",
    [
        Net(state_shape=12, action_shape=2, num_atoms=3),
        BranchingNet(state_shape=12, num_branches=2, action_per_branch=2),
    ],
)
def test_head_of_the_wrong_width_is_a_clear_error(head: torch.nn.Module) -> None:
    with pytest.raises(ValueError, match="reads inputs of width 12, but the encoder outputs 16"):
        DictHeadNet(encoder=body(), head=head)


def test_perturbation_stays_within_phi_of_the_candidate_and_reads_the_camera() -> None:
    torch.manual_seed(0)
    perturb = DictPerturbation(
        observation_space=SPACE, action_shape=2, max_action=1.0, phi=0.1, hidden_sizes=[8],
        cnn_channels=[4],
    )  # fmt: skip
    obs = sample(6)
    candidates = torch.full((6, 2), 0.5)
    out = perturb(obs, candidates)
    assert out.shape == (6, 2)
    assert (out - candidates).abs().max() <= 0.1 + 1e-6
    assert not torch.allclose(out, candidates)
    out.sum().backward()
    assert camera_gradient(perturb).abs().sum() > 0


def test_vae_reconstructs_actions_of_dict_observations() -> None:
    torch.manual_seed(0)
    vae = DictVAE(
        observation_space=SPACE, action_shape=2, latent_dim=3, max_action=2.0, hidden_sizes=[8],
        cnn_channels=[4],
    )  # fmt: skip
    obs, act = sample(5), torch.zeros(5, 2)
    reconstruction, mean, std = vae(obs, act)
    assert reconstruction.shape == (5, 2) and mean.shape == std.shape == (5, 3)
    assert (std > 0).all()
    decoded = vae.decode(obs)
    assert decoded.shape == (5, 2) and decoded.abs().max() <= 2.0
    # given the latent, decoding is deterministic and reads the encoded observation
    z = torch.zeros(5, 3)
    features = vae.obs_encoder(obs)[0]
    expected = 2.0 * torch.tanh(vae.decoder(torch.cat([features, z], -1)))
    assert torch.equal(vae.decode(obs, z), expected)
    (reconstruction.square().sum() + mean.sum()).backward()
    assert camera_gradient(vae).abs().sum() > 0


def test_vae_needs_a_hidden_layer() -> None:
    with pytest.raises(ValueError, match="at least one hidden layer"):
        DictVAE(observation_space=SPACE, action_shape=2, latent_dim=3, max_action=1.0,
                hidden_sizes=[])  # fmt: skip
