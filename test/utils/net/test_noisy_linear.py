"""NoisyLinear and sample_noise: factorised noise, its distribution, modes and gradients."""

import numpy as np
import torch

from tianshou.utils.net.discrete import NoisyLinear, noisy_layers, sample_noise


def test_train_mode_weights_are_mu_plus_sigma_times_the_outer_noise_product() -> None:
    torch.manual_seed(0)
    layer = NoisyLinear(3, 2, noisy_std=0.5)
    x = torch.randn(4, 3)
    eps_p, eps_q = layer.eps_p.numpy(), layer.eps_q.numpy()
    mu_w, sigma_w = layer.mu_W.detach().numpy(), layer.sigma_W.detach().numpy()
    mu_b, sigma_b = layer.mu_bias.detach().numpy(), layer.sigma_bias.detach().numpy()
    expected = np.zeros((4, 2))
    for n in range(4):  # element by element: y_j = sum_i (mu_ji + sigma_ji q_j p_i) x_i + b_j
        for j in range(2):
            expected[n, j] = mu_b[j] + sigma_b[j] * eps_q[j]
            for i in range(3):
                w = mu_w[j, i] + sigma_w[j, i] * eps_q[j] * eps_p[i]
                expected[n, j] += w * x[n, i].item()
    np.testing.assert_allclose(layer(x).detach().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_eval_mode_uses_only_the_means_and_is_deterministic() -> None:
    layer = NoisyLinear(3, 2).eval()
    x = torch.randn(5, 3)
    first = layer(x)
    layer.sample()
    assert torch.equal(first, layer(x))
    assert torch.allclose(first, x @ layer.mu_W.T + layer.mu_bias)


def test_initialisation_follows_the_paper() -> None:
    torch.manual_seed(1)
    layer = NoisyLinear(16, 4, noisy_std=0.4)
    bound = 1 / 4  # 1 / sqrt(16)
    assert layer.mu_W.abs().max() <= bound and layer.mu_bias.abs().max() <= bound
    assert torch.allclose(layer.sigma_W, torch.full((4, 16), 0.4 * bound))
    assert torch.allclose(layer.sigma_bias, torch.full((4,), 0.4 * bound))


def test_noise_is_sign_times_sqrt_abs_of_a_standard_normal() -> None:
    z = torch.empty(200_000)
    torch.manual_seed(3)
    noise = NoisyLinear.f(z)
    torch.manual_seed(3)
    normal = torch.randn(200_000)
    assert torch.allclose(noise, normal.sign() * normal.abs().sqrt())
    # E[|z|] for a standard normal is sqrt(2 / pi): the squared noise has that mean
    assert abs(noise.pow(2).mean().item() - np.sqrt(2 / np.pi)) < 0.01
    assert abs(noise.mean().item()) < 0.01


def test_sample_redraws_both_vectors_and_seeds_reproduce_them() -> None:
    layer = NoisyLinear(5, 3)
    torch.manual_seed(4)
    layer.sample()
    p, q = layer.eps_p.clone(), layer.eps_q.clone()
    layer.sample()
    assert not torch.equal(p, layer.eps_p) and not torch.equal(q, layer.eps_q)
    torch.manual_seed(4)
    layer.sample()
    assert torch.equal(p, layer.eps_p) and torch.equal(q, layer.eps_q)


def test_gradients_reach_the_sigmas_in_train_mode_only() -> None:
    layer = NoisyLinear(3, 2)
    layer(torch.randn(4, 3)).sum().backward()
    assert layer.sigma_W.grad is not None and layer.sigma_W.grad.abs().sum() > 0
    assert "eps_p" in layer.state_dict() and "eps_p" not in dict(layer.named_parameters())
    layer.zero_grad()
    layer.eval()
    layer(torch.randn(4, 3)).sum().backward()
    assert layer.sigma_W.grad is None or layer.sigma_W.grad.abs().sum() == 0


def test_sample_noise_resamples_every_noisy_layer_of_a_model() -> None:
    model = torch.nn.Sequential(NoisyLinear(2, 4), torch.nn.ReLU(), NoisyLinear(4, 1))
    before = [m.eps_q.clone() for m in model if isinstance(m, NoisyLinear)]
    assert sample_noise(model)
    after = [m.eps_q for m in model if isinstance(m, NoisyLinear)]
    assert all(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    assert not sample_noise(torch.nn.Linear(2, 2))


def test_noisy_layers_lists_each_layer_once_in_module_order() -> None:
    shared = NoisyLinear(4, 4)
    inner = torch.nn.Sequential(NoisyLinear(2, 4), torch.nn.ReLU(), shared)
    model = torch.nn.Sequential(inner, shared, torch.nn.Identity(), NoisyLinear(4, 1))
    expected = [m for m in model.modules() if isinstance(m, NoisyLinear)]
    assert len(expected) == 3
    assert [id(m) for m in noisy_layers(model)] == [id(m) for m in expected]
    assert noisy_layers(shared) == [shared]
    assert noisy_layers(torch.nn.Linear(2, 2)) == []
