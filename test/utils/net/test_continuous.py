"""Continuous actor and critic heads against direct computations on their sub-networks."""

from typing import Any

import numpy as np
import pytest
import torch
from torch import nn

from tianshou.utils.net.common import ModuleWithVectorOutput, Net
from tianshou.utils.net.continuous import (
    SIGMA_MAX,
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
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
