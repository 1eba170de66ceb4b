"""Continuous actor and critic heads against direct computations on their sub-networks."""

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from tianshou.utils.net.common import MLP, ModuleWithVectorOutput, Net
from tianshou.utils.net.continuous import (
    SIGMA_MAX,
    SIGMA_MIN,
    VAE,
    AbstractContinuousCritic,
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
    Perturbation,
    RecurrentActorProb,
    RecurrentCritic,
)


def test_deterministic_actor_is_scaled_tanh_of_head() -> None:
    body = Net(state_shape=4, hidden_sizes=[16])
    actor = ContinuousActorDeterministic(
        preprocess_net=body, action_shape=(2,), hidden_sizes=[8], max_action=2.5
    )
    obs = torch.randn(6, 4) * 10
    actions, state = actor(obs)
    assert actions.shape == (6, 2) and state is None and actor.output_dim == 2
    expected = 2.5 * torch.tanh(actor.last(body(obs)[0]))
    assert torch.allclose(actions, expected)
    assert actions.abs().max() <= 2.5
    assert actor.get_preprocess_net() is body


def test_probabilistic_actor_free_sigma() -> None:
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=[8]), action_shape=(2, 2), max_action=0.5
    )
    assert actor.sigma_param.shape == (4, 1)
    nn.init.constant_(actor.sigma_param, -0.5)
    with torch.no_grad():
        actor.sigma_param[0] = 1.0
    (mu, sigma), _ = actor(np.random.randn(5, 3) * 100)
    assert mu.shape == sigma.shape == (5, 4)
    assert mu.abs().max() <= 0.5
    expected_sigma = torch.tensor([1.0, -0.5, -0.5, -0.5]).exp().expand(5, 4)
    assert torch.allclose(sigma, expected_sigma)
    (mu.sum() + sigma.sum()).backward()
    assert actor.sigma_param.grad is not None and actor.sigma_param.grad.abs().sum() > 0


def test_probabilistic_actor_unbounded_mean_and_conditioned_sigma() -> None:
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=[8]),
        action_shape=2,
        unbounded=True,
        conditioned_sigma=True,
    )
    assert not hasattr(actor, "sigma_param")
    with torch.no_grad():
        actor.mu.model[0].bias.fill_(7.0)
        actor.sigma.model[0].bias.copy_(torch.tensor([50.0, -1.0]))
        actor.sigma.model[0].weight.zero_()
    (mu, sigma), _ = actor(torch.randn(4, 3))
    assert mu.min() > 1.0
    assert torch.allclose(sigma[:, 0], torch.full((4,), float(np.exp(SIGMA_MAX))))
    assert torch.allclose(sigma[:, 1], torch.full((4,), float(np.exp(-1.0))))


def test_critic_q_and_v() -> None:
    body = Net(state_shape=3, action_shape=2, hidden_sizes=[8], concat=True)
    critic = ContinuousCritic(preprocess_net=body, hidden_sizes=[4])
    obs, act = torch.randn(5, 3), torch.randn(5, 2)
    q = critic(obs.numpy(), act.numpy())
    assert q.shape == (5, 1) and q.dtype == torch.float32
    assert torch.allclose(q, critic.last(body(torch.cat([obs, act], 1))[0]))
    v_critic = ContinuousCritic(preprocess_net=Net(state_shape=(3,), hidden_sizes=[8]))
    assert v_critic(obs).shape == (5, 1)


def test_critic_gradients_and_bad_shapes() -> None:
    critic = ContinuousCritic(
        preprocess_net=Net(state_shape=3, action_shape=2, hidden_sizes=[8], concat=True)
    )
    critic(torch.randn(5, 3), torch.randn(5, 2)).sum().backward()
    assert all(p.grad is not None for p in critic.parameters())
    with pytest.raises(ValueError, match=r"obs of shape \(5, 3\) and act of shape \(4, 2\)"):
        critic(np.zeros((5, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"state_shape \(3,\) concatenated with action_shape"):
        critic(np.zeros((5, 3)), np.zeros((5, 3)))


class _ImageBody(ModuleWithVectorOutput):
    """Averages an image per channel; declares room for two action entries after it."""

    def __init__(self) -> None:
        super().__init__(output_dim=3 + 2)
        self.seen_shape: tuple[int, ...] = ()

    def forward(self, obs: torch.Tensor, state: Any = None) -> tuple[torch.Tensor, Any]:
        self.seen_shape = tuple(obs.shape)
        return obs.mean(dim=(2, 3)), state


def test_critic_preprocess_on_obs_only() -> None:
    body = _ImageBody()
    critic = ContinuousCritic(preprocess_net=body, apply_preprocess_net_to_obs_only=True)
    obs, act = torch.randn(4, 3, 5, 5), torch.randn(4, 2)
    q = critic(obs, act)
    assert body.seen_shape == (4, 3, 5, 5) and q.shape == (4, 1)
    assert torch.allclose(q, critic.last(torch.cat([obs.mean(dim=(2, 3)), act], 1)))


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    """Reproducible test inputs without touching torch's global random state."""
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _assert_all_parameters_get_gradient(module: nn.Module) -> None:
    for name, param in module.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_recurrent_actor_shapes_single_step_and_sequence() -> None:
    actor = RecurrentActorProb(
        layer_num=2, state_shape=(3,), action_shape=(2,), hidden_layer_size=8, max_action=0.5
    )
    assert actor.output_dim == 2 and actor.get_preprocess_net().output_dim == 2
    for obs in (_randn(4, 3) * 100, _randn(4, 5, 3).numpy() * 100):
        (mu, sigma), state = actor(obs)
        assert mu.shape == sigma.shape == (4, 2)
        assert set(state) == {"hidden", "cell"}
        assert state["hidden"].shape == state["cell"].shape == (4, 2, 8)
        assert not state["hidden"].requires_grad and not state["cell"].requires_grad
        assert mu.abs().max() <= 0.5
        assert torch.equal(sigma, torch.ones(4, 2))


def test_recurrent_actor_output_is_head_on_last_lstm_step() -> None:
    actor = RecurrentActorProb(
        layer_num=1, state_shape=3, action_shape=2, hidden_layer_size=8, max_action=2.0
    )
    obs = _randn(3, 4, 3)
    (mu, _), state = actor(obs)
    out, (hidden, cell) = actor.nn(obs)
    assert torch.allclose(mu, 2.0 * torch.tanh(actor.mu(out[:, -1])))
    assert torch.allclose(state["hidden"], hidden.transpose(0, 1))
    assert torch.allclose(state["cell"], cell.transpose(0, 1))


def test_recurrent_actor_state_fed_back_equals_whole_sequence() -> None:
    actor = RecurrentActorProb(
        layer_num=2, state_shape=3, action_shape=2, hidden_layer_size=8, conditioned_sigma=True
    )
    obs = _randn(3, 6, 3)
    (mu_seq, sigma_seq), state_seq = actor(obs)
    state = None
    for t in range(obs.shape[1]):
        (mu, sigma), state = actor(obs[:, t], state)
    assert state is not None
    assert torch.allclose(mu, mu_seq, atol=1e-6) and torch.allclose(sigma, sigma_seq, atol=1e-6)
    for key in ("hidden", "cell"):
        assert torch.allclose(state[key], state_seq[key], atol=1e-6)
    (mu_without_history, _), _ = actor(obs[:, -1])
    assert not torch.allclose(mu_without_history, mu_seq)


def test_recurrent_actor_unbounded_mean_and_conditioned_sigma_clamp() -> None:
    actor = RecurrentActorProb(
        layer_num=1,
        state_shape=3,
        action_shape=3,
        hidden_layer_size=8,
        unbounded=True,
        conditioned_sigma=True,
    )
    assert not hasattr(actor, "sigma_param")
    with torch.no_grad():
        actor.mu.weight.zero_()
        actor.mu.bias.fill_(7.0)
        actor.sigma.weight.zero_()
        actor.sigma.bias.copy_(torch.tensor([50.0, -50.0, -1.0]))
    (mu, sigma), _ = actor(_randn(4, 3))
    assert torch.allclose(mu, torch.full((4, 3), 7.0))
    expected_sigma = torch.tensor([SIGMA_MAX, SIGMA_MIN, -1.0]).exp().expand(4, 3)
    assert torch.allclose(sigma, expected_sigma)


@pytest.mark.parametrize("conditioned_sigma", [False, True])
def test_recurrent_actor_gradient_reaches_all_parameters(conditioned_sigma: bool) -> None:
    actor = RecurrentActorProb(
        layer_num=2,
        state_shape=3,
        action_shape=2,
        hidden_layer_size=8,
        conditioned_sigma=conditioned_sigma,
    )
    (mu, sigma), _ = actor(_randn(4, 3, 3))
    (mu.sum() + sigma.sum()).backward()
    _assert_all_parameters_get_gradient(actor)


def test_recurrent_actor_rejects_bad_obs_and_state() -> None:
    actor = RecurrentActorProb(layer_num=2, state_shape=3, action_shape=2, hidden_layer_size=8)
    with pytest.raises(ValueError, match=r"obs of shape \(batch, 3\).*got \(4, 5\)"):
        actor(np.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"got \(4, 2, 2, 3\)"):
        actor(np.zeros((4, 2, 2, 3)))
    _, state = actor(np.zeros((4, 3)))
    bad_state = {"hidden": state["hidden"].transpose(0, 1), "cell": state["cell"]}
    with pytest.raises(ValueError, match=r"state\['hidden'\].*\(4, 2, 8\), got \(2, 4, 8\)"):
        actor(np.zeros((4, 3)), bad_state)
    with pytest.raises(ValueError, match=r"state\['cell'\].*got missing"):
        actor(np.zeros((4, 3)), {"hidden": state["hidden"]})


def test_recurrent_critic_q_and_v() -> None:
    critic = RecurrentCritic(layer_num=2, state_shape=(3,), action_shape=(2,), hidden_layer_size=8)
    obs, act = _randn(5, 4, 3), _randn(5, 2, seed=1)
    q = critic(obs.numpy(), act.numpy())
    assert q.shape == (5, 1) and critic.output_dim == 1
    out, _ = critic.nn(obs)
    assert torch.allclose(q, critic.fc2(torch.cat([out[:, -1], act], dim=1)))
    assert critic(obs[:, 0], act).shape == (5, 1)
    v_critic = RecurrentCritic(layer_num=1, state_shape=3, hidden_layer_size=8)
    assert v_critic.fc2.in_features == 8
    assert v_critic(obs).shape == (5, 1)


def test_recurrent_critic_takes_positional_arguments_in_the_published_order() -> None:
    critic = RecurrentCritic(2, 3, 4, 8)
    assert critic.nn.num_layers == 2 and critic.nn.input_size == 3
    assert critic.action_dim == 4 and critic.nn.hidden_size == 8
    assert critic.fc2.in_features == 8 + 4


def test_recurrent_critic_gradients_and_bad_input() -> None:
    critic = RecurrentCritic(layer_num=2, state_shape=3, action_shape=2, hidden_layer_size=8)
    critic(_randn(5, 4, 3), _randn(5, 2, seed=1)).sum().backward()
    _assert_all_parameters_get_gradient(critic)
    with pytest.raises(ValueError, match="width 2, so act must be given"):
        critic(np.zeros((5, 4, 3)))
    with pytest.raises(ValueError, match=r"act of shape \(5, 2\), got \(4, 2\)"):
        critic(np.zeros((5, 4, 3)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match=r"obs of shape \(batch, 3\)"):
        critic(np.zeros((5, 4, 2)), np.zeros((5, 2)))
    v_critic = RecurrentCritic(layer_num=1, state_shape=3, hidden_layer_size=8)
    with pytest.raises(ValueError, match="width 0, so act must be None"):
        v_critic(np.zeros((5, 3)), np.zeros((5, 2)))


def _perturbation(max_action: float, phi: float) -> Perturbation:
    net = Net(state_shape=3 + 2, action_shape=2, hidden_sizes=[16])
    return Perturbation(preprocess_net=net, max_action=max_action, phi=phi)


def test_perturbation_matches_formula_and_stays_near_action() -> None:
    perturb = _perturbation(max_action=2.0, phi=0.05)
    state, action = _randn(64, 3) * 10, _randn(64, 2, seed=1).tanh()
    out = perturb(state, action)
    logits, _ = perturb.preprocess_net(torch.cat([state, action], -1))
    assert out.shape == (64, 2)
    assert torch.allclose(out, action + 0.05 * 2.0 * torch.tanh(logits))
    assert (out - action).abs().max() <= 0.05 * 2.0 + 1e-6


def test_perturbation_clamps_to_max_action_and_gets_gradient() -> None:
    perturb = _perturbation(max_action=1.0, phi=10.0)
    state = _randn(64, 3) * 10
    action = torch.full((64, 2), 0.99)
    out = perturb(state, action)
    assert out.abs().max() <= 1.0
    assert (out.abs() == 1.0).any()
    perturb(state, torch.zeros(64, 2)).sum().backward()
    _assert_all_parameters_get_gradient(perturb)


def test_perturbation_rejects_net_of_wrong_width() -> None:
    net = Net(state_shape=3 + 2, action_shape=1, hidden_sizes=[8])
    perturb = Perturbation(preprocess_net=net, max_action=1.0)
    with pytest.raises(ValueError, match=r"action's shape \(4, 2\), got \(4, 1\)"):
        perturb(torch.zeros(4, 3), torch.zeros(4, 2))


class _RecordingDecoder(nn.Module):
    """A linear decoder that remembers its last input."""

    def __init__(self, input_dim: int, output_dim: int) -> None:
        super().__init__()
        self.linear = nn.Linear(input_dim, output_dim)
        self.last_input = torch.empty(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.last_input = x
        return self.linear(x)


def _vae(max_action: float = 1.0) -> VAE:
    return VAE(
        encoder=MLP(input_dim=3 + 2, hidden_sizes=[16]),
        decoder=MLP(input_dim=3 + 4, output_dim=2, hidden_sizes=[16]),
        hidden_dim=16,
        latent_dim=4,
        max_action=max_action,
    )


def test_vae_forward_shapes_and_gradient() -> None:
    vae = _vae()
    state, action = _randn(8, 3), _randn(8, 2, seed=1).tanh()
    reconstruction, mean, std = vae(state, action)
    assert reconstruction.shape == (8, 2)
    assert mean.shape == std.shape == (8, 4)
    assert (std > 0).all()
    kl = -0.5 * (1 + torch.log(std.pow(2)) - mean.pow(2) - std.pow(2)).mean()
    ((reconstruction - action).pow(2).mean() + kl).backward()
    _assert_all_parameters_get_gradient(vae)


def test_vae_log_std_clamp() -> None:
    vae = _vae()
    with torch.no_grad():
        vae.log_std.weight.zero_()
        vae.log_std.bias.copy_(torch.tensor([100.0, -100.0, 0.0, 15.0]))
    _, _, std = vae(_randn(3, 3), _randn(3, 2, seed=1))
    assert torch.allclose(std, torch.tensor([15.0, -4.0, 0.0, 15.0]).exp().expand(3, 4))


def test_vae_decode_bounded_with_clamped_prior_latent() -> None:
    decoder = _RecordingDecoder(3 + 4, 2)
    with torch.no_grad():
        decoder.linear.bias.fill_(100.0)
    vae = VAE(
        encoder=MLP(input_dim=3 + 2, hidden_sizes=[16]),
        decoder=decoder,
        hidden_dim=16,
        latent_dim=4,
        max_action=1.5,
    )
    state = _randn(2, 500, 3)
    actions = vae.decode(state)
    assert actions.shape == (2, 500, 2)
    assert actions.abs().max() <= 1.5 and torch.allclose(actions, torch.full_like(actions, 1.5))
    assert torch.equal(decoder.last_input[..., :3], state)
    latent = decoder.last_input[..., 3:]
    assert latent.shape == (2, 500, 4)
    assert latent.abs().max() <= 0.5 and (latent.abs() == 0.5).any()


def test_vae_decode_with_given_latent() -> None:
    vae = _vae(max_action=2.0)
    state, latent = _randn(6, 3), _randn(6, 4, seed=1) * 3
    expected = 2.0 * torch.tanh(vae.decoder(torch.cat([state, latent], -1)))
    assert torch.allclose(vae.decode(state, latent), expected)


def test_vae_rejects_hidden_dim_not_matching_encoder() -> None:
    with pytest.raises(ValueError, match=r"hidden_dim \(8\) must equal the encoder's output_dim"):
        VAE(
            encoder=MLP(input_dim=5, hidden_sizes=[16]),
            decoder=MLP(input_dim=7, output_dim=2),
            hidden_dim=8,
            latent_dim=4,
            max_action=1.0,
        )


def test_abstract_critic_declares_forward_with_obs_act_info() -> None:
    class NoForward(AbstractContinuousCritic):
        pass

    with pytest.raises(TypeError, match="forward"):
        NoForward(output_dim=1)  # type: ignore[abstract]

    class Constant(AbstractContinuousCritic):
        def forward(self, obs: Any, act: Any = None, info: Any = None) -> torch.Tensor:
            return torch.full((len(obs), 1), 2.0 if act is None else 3.0)

    critic = Constant(output_dim=1)
    assert critic(obs=np.zeros((4, 2)), act=np.zeros((4, 1)), info={}).tolist() == [[3.0]] * 4
    assert critic(np.zeros((2, 2))).tolist() == [[2.0]] * 2
