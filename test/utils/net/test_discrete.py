"""Discrete actor and critic heads, and NoisyLinear."""

import numpy as np
import torch
import torch.nn.functional as F

from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.discrete import (
    DiscreteActor,
    DiscreteCritic,
    NoisyLinear,
    dist_fn_categorical_from_logits,
    sample_noise,
)


def test_discrete_actor_probabilities_and_logits() -> None:
    body = Net(state_shape=4, hidden_sizes=[16])
    actor = DiscreteActor(preprocess_net=body, action_shape=3, hidden_sizes=[8])
    obs = np.random.randn(5, 4)
    probs, state = actor(obs)
    assert probs.shape == (5, 3) and state is None and actor.output_dim == 3
    assert torch.allclose(probs.sum(-1), torch.ones(5))
    logits_actor = DiscreteActor(preprocess_net=body, action_shape=3, softmax_output=False)
    logits, _ = logits_actor(obs)
    assert torch.allclose(logits, logits_actor.last(body(obs)[0]))
    dist = dist_fn_categorical_from_logits(logits)
    assert torch.allclose(dist.probs, F.softmax(logits, dim=-1))
    assert actor.get_preprocess_net() is body


def test_discrete_critic_shapes_and_gradients() -> None:
    critic = DiscreteCritic(preprocess_net=Net(state_shape=(2, 2), hidden_sizes=[8]))
    values = critic(torch.randn(6, 2, 2))
    assert values.shape == (6, 1) and critic.output_dim == 1
    values.sum().backward()
    assert all(p.grad is not None for p in critic.parameters())
    wide = DiscreteCritic(preprocess_net=Net(state_shape=4), hidden_sizes=[8], last_size=5)
    assert wide(np.zeros((3, 4))).shape == (3, 5)


def test_noisy_linear_train_noise_and_eval_means() -> None:
    torch.manual_seed(0)
    layer = NoisyLinear(4, 3)
    x = torch.randn(2, 4)
    noisy = layer(x)
    expected = F.linear(
        x,
        layer.mu_W + layer.sigma_W * torch.outer(layer.eps_q, layer.eps_p),
        layer.mu_bias + layer.sigma_bias * layer.eps_q,
    )
    assert torch.allclose(noisy, expected)
    assert torch.equal(noisy, layer(x))
    layer.sample()
    assert not torch.allclose(noisy, layer(x))
    layer.eval()
    assert torch.allclose(layer(x), F.linear(x, layer.mu_W, layer.mu_bias))
    assert torch.allclose(layer.sigma_W, torch.full((3, 4), 0.25))


def test_noisy_linear_inside_net_and_sample_noise() -> None:
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[8], linear_layer=NoisyLinear)
    assert sum(isinstance(m, NoisyLinear) for m in net.modules()) == 2
    before = net.model.model[0].eps_p.clone()
    assert sample_noise(net)
    assert not torch.equal(before, net.model.model[0].eps_p)
    assert not sample_noise(MLP(input_dim=3, output_dim=1))
    assert net(torch.zeros(3, 4))[0].shape == (3, 2)
