"""Discrete actor and critic heads, NoisyLinear, the IQN/FQF quantile networks and ICM."""

import numpy as np
import torch
import torch.nn.functional as F

from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.discrete import (
    CosineEmbeddingNetwork,
    DiscreteActor,
    DiscreteCritic,
    FractionProposalNetwork,
    FullQuantileFunction,
    ImplicitQuantileNetwork,
    IntrinsicCuriosityModule,
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


def test_cosine_embedding_matches_hand_computed_values() -> None:
    embed = CosineEmbeddingNetwork(num_cosines=2, embedding_dim=1)
    with torch.no_grad():
        embed.net[0].weight.copy_(torch.tensor([[1.0, -1.0]]))
        embed.net[0].bias.fill_(0.5)
    taus = torch.tensor([[0.0, 0.5], [1.0 / 3.0, 1.0]])
    # cos(pi i tau) for i = 1, 2: tau=0 -> (1, 1), 0.5 -> (0, -1), 1/3 -> (0.5, -0.5), 1 -> (-1, 1);
    # then x1 - x2 + 0.5 and ReLU.
    expected = torch.tensor([[[0.5], [1.5]], [[1.5], [0.0]]])
    assert torch.allclose(embed(taus), expected, atol=1e-6)
    assert CosineEmbeddingNetwork(num_cosines=8, embedding_dim=5)(torch.rand(3, 7)).shape == (
        3,
        7,
        5,
    )


def test_cosine_embedding_state_holds_only_weights_and_follows_the_dtype() -> None:
    embed = CosineEmbeddingNetwork(num_cosines=4, embedding_dim=3)
    assert set(embed.state_dict()) == {"net.0.weight", "net.0.bias"}
    taus = torch.rand(2, 5, dtype=torch.float64)
    out = embed.double()(taus)
    assert out.dtype == torch.float64
    want = torch.relu(
        torch.cos(taus.unsqueeze(-1) * torch.pi * torch.arange(1.0, 5.0, dtype=torch.float64))
        @ embed.net[0].weight.T
        + embed.net[0].bias
    )
    torch.testing.assert_close(out, want)


def test_implicit_quantile_network_shapes_and_gradients() -> None:
    body = Net(state_shape=4, hidden_sizes=[16])
    iqn = ImplicitQuantileNetwork(
        preprocess_net=body, action_shape=3, hidden_sizes=[8], num_cosines=6
    )
    assert iqn.output_dim == 3 and isinstance(iqn, DiscreteCritic)
    obs = torch.randn(5, 4)
    (quantiles, taus), state = iqn(obs, sample_size=7)
    assert quantiles.shape == (5, 3, 7) and taus.shape == (5, 7) and state is None
    assert bool(((taus >= 0) & (taus <= 1)).all())
    features, _ = body(obs)
    assert torch.allclose(quantiles, iqn._compute_quantiles(features, taus))
    quantiles.sum().backward()
    assert all(p.grad is not None for p in iqn.parameters())


def test_fraction_proposal_taus_are_cumulative_fractions() -> None:
    proposal = FractionProposalNetwork(num_fractions=6, embedding_dim=8)
    bound = 0.01 * (6.0 / (8 + 6)) ** 0.5
    assert float(proposal.net.weight.detach().abs().max()) <= bound
    assert torch.equal(proposal.net.bias, torch.zeros(6))
    with torch.no_grad():
        proposal.net.weight.mul_(1000.0)  # make the proposal far from uniform
    taus, tau_hats, entropies = proposal(torch.randn(4, 8))
    assert taus.shape == (4, 7) and tau_hats.shape == (4, 6) and entropies.shape == (4,)
    assert bool((taus[:, 0] == 0).all()) and bool((taus[:, -1] == 1).all())
    assert bool((taus.diff(dim=1) >= 0).all()) and bool(((taus >= 0) & (taus <= 1)).all())
    assert torch.allclose(tau_hats, (taus[:, :-1] + taus[:, 1:]) / 2)
    assert not tau_hats.requires_grad
    assert bool((entropies > 0).all()) and bool((entropies <= np.log(6) + 1e-6).all())
    (taus[:, 1:-1] ** 2).sum().backward()
    assert proposal.net.weight.grad is not None and proposal.net.weight.grad.abs().sum() > 0


def test_full_quantile_function_given_fractions_and_gradient_flow() -> None:
    body = Net(state_shape=4, hidden_sizes=[16])
    fqf = FullQuantileFunction(preprocess_net=body, action_shape=3, num_cosines=6)
    proposal = FractionProposalNetwork(num_fractions=5, embedding_dim=16)
    obs = torch.randn(4, 4)
    (quantiles, fractions, quantiles_tau), state = fqf(obs, proposal)
    taus, tau_hats, _ = fractions
    assert quantiles.shape == (4, 3, 5) and quantiles_tau is not None
    assert quantiles_tau.shape == (4, 3, 4) and state is None
    features, _ = body(obs)
    assert torch.allclose(quantiles, fqf._compute_quantiles(features, tau_hats))
    assert torch.allclose(quantiles_tau, fqf._compute_quantiles(features, taus[:, 1:-1]))
    assert not quantiles_tau.requires_grad

    (again, same_fractions, _), _ = fqf(obs, proposal, fractions=fractions)
    assert torch.equal(again, quantiles) and same_fractions is fractions

    # The proposal reads detached features: its loss must not reach the preprocess net.
    (taus[:, 1:-1] ** 2).sum().backward()
    assert all(p.grad is None for p in body.parameters())
    assert proposal.net.weight.grad is not None
    quantiles.sum().backward()
    assert all(p.grad is not None for p in fqf.parameters())

    fqf.eval()
    (_, _, eval_quantiles_tau), _ = fqf(obs, proposal, fractions=fractions)
    assert eval_quantiles_tau is None


def test_intrinsic_curiosity_module_losses_and_gradients() -> None:
    feature_net = MLP(input_dim=4, output_dim=6, hidden_sizes=[8])
    icm = IntrinsicCuriosityModule(
        feature_net=feature_net, feature_dim=6, action_dim=3, hidden_sizes=[16]
    )
    s1, s2 = np.random.randn(5, 4), np.random.randn(5, 4)
    act = np.array([0, 2, 1, 1, 0])
    mse, act_hat = icm(s1, act, s2)
    assert mse.shape == (5,) and act_hat.shape == (5, 3)
    assert bool((mse >= 0).all())
    phi1, phi2 = feature_net(s1), feature_net(s2)
    phi2_hat = icm.forward_model(torch.cat([phi1, F.one_hot(torch.as_tensor(act), 3)], dim=1))
    assert torch.allclose(mse, 0.5 * ((phi2_hat - phi2) ** 2).sum(1))
    assert torch.allclose(act_hat, icm.inverse_model(torch.cat([phi1, phi2], dim=1)))

    inverse_loss = F.cross_entropy(act_hat, torch.as_tensor(act))
    assert float(inverse_loss.detach()) >= 0
    (mse.mean() + inverse_loss).backward()
    for model in (icm.forward_model, icm.inverse_model, feature_net):
        assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters())


def test_fraction_proposal_taus_stay_monotone_when_the_cumulative_sum_overshoots() -> None:
    """Near-one-hot proposals whose float32 cumulative sum rounds above 1 (it did, by 1.2e-7,
    for a seed the learning tests met) still give non-decreasing fractions in [0, 1]."""
    proposal = FractionProposalNetwork(num_fractions=6, embedding_dim=8)
    torch.manual_seed(0)
    overshoots = 0
    with torch.no_grad():
        for _ in range(200):
            proposal.net.weight.normal_(0.0, 30.0)
            obs = torch.randn(64, 8)
            logits = proposal.net(obs)
            overshoots += int((torch.softmax(logits, 1)[:, :-1].cumsum(1) > 1).any())
            taus, _, _ = proposal(obs)
            assert bool((taus.diff(dim=1) >= 0).all())
            assert bool(((taus >= 0) & (taus <= 1)).all())
    assert overshoots > 0  # the case the clamp guards against did occur
