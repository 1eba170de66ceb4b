"""Tests of the actor-critic base (values, GAE, return scaling) and of A2C's loss."""

import copy
import io
from collections import OrderedDict

import numpy as np
import pytest
import torch
from torch import nn

from test.algorithm.modelfree.test_reinforce import discrete_policy, episode_buffer
from tianshou.algorithm.modelfree.a2c import A2C, A2CTrainingStats, ActorCriticOnPolicyAlgorithm
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.utils.torch_utils import policy_within_training_step


class ValueNet(nn.Module):
    """A linear critic ``obs -> (B, 1)``."""

    def __init__(self, obs_dim: int = 2) -> None:
        super().__init__()
        self.net = nn.Linear(obs_dim, 1)

    def forward(self, obs, state=None, info=None):
        return self.net(torch.as_tensor(obs, dtype=torch.float32))


def make_a2c(lr: float = 0.0, **kwargs) -> A2C:
    torch.manual_seed(0)
    return A2C(
        policy=discrete_policy(),
        critic=ValueNet(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        **kwargs,
    )


def naive_gae(rew, v_s, v_s_, ends, gamma, lam):
    """GAE by the textbook recursion, for episodes that all terminate at ``ends``."""
    adv = np.zeros(len(rew))
    running = 0.0
    for t in reversed(range(len(rew))):
        bootstrap = 0.0 if ends[t] else gamma * v_s_[t]
        delta = rew[t] + bootstrap - v_s[t]
        running = delta + (0.0 if ends[t] else gamma * lam * running)
        adv[t] = running
    return adv


def test_advantages_and_returns_by_hand() -> None:
    algorithm = make_a2c(gamma=0.9, gae_lambda=0.8)
    buffer = episode_buffer([1.0, -1.0, 2.0], terminated_at=[2])
    batch, indices = buffer.sample(0)
    with torch.no_grad():
        v_s = algorithm.critic(batch.obs).flatten().numpy()
        v_s_ = algorithm.critic(batch.obs_next).flatten().numpy()
    out = algorithm._add_returns_and_advantages(batch, buffer, indices)
    adv = naive_gae(batch.rew, v_s, v_s_, [False, False, True], 0.9, 0.8)
    np.testing.assert_allclose(out.adv.numpy(), adv, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.returns.numpy(), adv + v_s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.v_s.numpy(), v_s, rtol=1e-6)
    assert out.adv.dtype == out.returns.dtype == torch.float32


def test_values_are_computed_in_chunks() -> None:
    algorithm = make_a2c(max_batchsize=2)
    buffer = episode_buffer([1.0, 0.0, 1.0, 0.0, 1.0], terminated_at=[4])
    batch, indices = buffer.sample(0)
    out = algorithm._add_returns_and_advantages(batch, buffer, indices)
    with torch.no_grad():
        expected = algorithm.critic(batch.obs).flatten()
    assert torch.allclose(out.v_s, expected)


def test_loss_matches_hand_computation() -> None:
    algorithm = make_a2c(vf_coef=0.25, ent_coef=0.1, gamma=0.9, gae_lambda=1.0)
    buffer = episode_buffer([1.0, -1.0, 2.0], terminated_at=[2])
    batch, _ = buffer.sample(0)
    with torch.no_grad():
        v_s = algorithm.critic(batch.obs).flatten()
        dist = algorithm.policy(batch).dist
        log_prob = dist.log_prob(torch.as_tensor(batch.act))
        entropy = dist.entropy().mean()
    returns = torch.tensor([1.0 - 0.9 + 0.81 * 2.0, -1.0 + 0.9 * 2.0, 2.0])
    adv = returns - v_s
    actor_loss = -(log_prob * adv).mean()
    vf_loss = (returns - v_s).pow(2).mean()
    with policy_within_training_step(algorithm.policy):
        stats = algorithm.update(buffer, batch_size=None, repeat=1)
    assert isinstance(stats, A2CTrainingStats)
    assert stats.gradient_steps == 1
    assert stats.actor_loss.mean == pytest.approx(actor_loss.item(), rel=1e-5)
    assert stats.vf_loss.mean == pytest.approx(vf_loss.item(), rel=1e-5)
    assert stats.ent_loss.mean == pytest.approx(entropy.item(), rel=1e-5)
    total = actor_loss + 0.25 * vf_loss - 0.1 * entropy
    assert stats.loss.mean == pytest.approx(total.item(), rel=1e-5)


def test_minibatches_and_repeats_count_gradient_steps() -> None:
    algorithm = make_a2c(lr=0.01)
    buffer = episode_buffer([1.0] * 10, terminated_at=[4, 9])
    with policy_within_training_step(algorithm.policy):
        stats = algorithm.update(buffer, batch_size=4, repeat=3)
    # 10 rows in minibatches of 4: the short last one is merged -> 2 steps per pass
    assert stats.gradient_steps == 6
    assert stats.loss.min <= stats.loss.mean <= stats.loss.max


def test_return_scaling_divides_by_running_std() -> None:
    algorithm = make_a2c(return_scaling=True, gamma=0.5, gae_lambda=1.0)
    buffer = episode_buffer([1.0, 2.0, 3.0, 4.0], terminated_at=[1, 3])
    batch, indices = buffer.sample(0)
    with torch.no_grad():
        v_s = algorithm.critic(batch.obs).flatten().numpy().astype(np.float64)
    first = algorithm._add_returns_and_advantages(batch, buffer, indices)
    raw = np.array([2.0, 2.0, 5.0, 4.0])  # MC returns (lambda = 1) of the two episodes
    np.testing.assert_allclose(first.returns.numpy(), raw / np.sqrt(1.0 + 1e-8), rtol=1e-5)
    assert algorithm.ret_rms.count == 4
    np.testing.assert_allclose(algorithm.ret_rms.var, raw.var())
    second = algorithm._add_returns_and_advantages(batch, buffer, indices)
    # values are un-scaled before bootstrapping, so the raw returns only depend on rewards
    scale = np.sqrt(raw.var() + 1e-8)
    np.testing.assert_allclose(second.returns.numpy(), raw / scale, rtol=1e-5)
    np.testing.assert_allclose(second.adv.numpy(), raw - v_s * scale, rtol=1e-4, atol=1e-5)


def test_a_checkpoint_keeps_the_return_statistics() -> None:
    # without them a resumed run's critic targets change scale at once
    source = make_a2c(return_scaling=True)
    buffer = episode_buffer([1.0, 2.0, 3.0, 4.0], terminated_at=[1, 3])
    batch, indices = buffer.sample(0)
    source._add_returns_and_advantages(batch, buffer, indices)
    stream = io.BytesIO()
    torch.save(source.state_dict(), stream)
    stream.seek(0)
    resumed = make_a2c(return_scaling=True)
    resumed.load_state_dict(torch.load(stream, weights_only=True))  # tensors only
    assert resumed.ret_rms.count == source.ret_rms.count == 4
    np.testing.assert_allclose(resumed.ret_rms.mean, source.ret_rms.mean)
    np.testing.assert_allclose(resumed.ret_rms.var, source.ret_rms.var)
    again = resumed._add_returns_and_advantages(batch, buffer, indices)
    expected = source._add_returns_and_advantages(batch, buffer, indices)
    np.testing.assert_allclose(again.returns.numpy(), expected.returns.numpy())


def test_a_checkpoint_holds_only_published_keys_and_the_statistics_in_its_metadata() -> None:
    algorithm = make_a2c()
    algorithm.ret_rms.update(np.array([1.0, 5.0]))
    state = algorithm.state_dict()
    assert not [k for k in state if "_running_stats" in k or "_counters" in k]
    extras = state._metadata[""]["tianshou_extra_state"]  # type: ignore[attr-defined]
    assert sorted(extras["running_stats"]["ret_rms"]) == ["count", "mean", "var"]
    assert extras["running_stats"]["ret_rms"]["count"].item() == 2


def test_a_checkpoint_without_return_statistics_leaves_them_as_they_are() -> None:
    # the published library's checkpoints, and ours with the metadata dropped, have none
    state = dict(make_a2c().state_dict())
    algorithm = make_a2c()
    algorithm.ret_rms.update(np.array([1.0, 5.0]))
    algorithm.load_state_dict(state)
    assert algorithm.ret_rms.count == 2


def test_a_checkpoint_of_the_older_layout_still_loads() -> None:
    # earlier versions wrote the statistics as "_running_stats.*" entries, as state_dict still
    # does for a destination without metadata
    source = make_a2c()
    source.ret_rms.update(np.array([1.0, 5.0, 9.0]))
    state = source.state_dict(destination={})
    assert state["_running_stats.ret_rms.count"].item() == 3
    resumed = make_a2c()
    resumed.load_state_dict(state)
    assert resumed.ret_rms.count == 3
    np.testing.assert_allclose(resumed.ret_rms.var, source.ret_rms.var)


def test_running_statistics_of_another_algorithm_are_rejected_untouched() -> None:
    state = make_a2c().state_dict()
    changed = OrderedDict(
        (k, v + 1 if isinstance(v, torch.Tensor) else v) for k, v in state.items()
    )
    changed._metadata = copy.deepcopy(state._metadata)  # type: ignore[attr-defined]
    extras = changed._metadata[""]["tianshou_extra_state"]  # type: ignore[attr-defined]
    extras["running_stats"]["obs_rms"] = extras["running_stats"]["ret_rms"]
    algorithm = make_a2c()
    before = [p.detach().clone() for p in algorithm.parameters()]
    with pytest.raises(RuntimeError, match="obs_rms"):
        algorithm.load_state_dict(changed)
    assert all(torch.equal(a, b) for a, b in zip(before, algorithm.parameters(), strict=True))


def test_shared_parameters_are_optimized_once() -> None:
    torch.manual_seed(0)
    shared = nn.Linear(2, 2)

    class Actor(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared, self.head = shared, nn.Linear(2, 3)

        def forward(self, obs, state=None, info=None):
            hidden = self.shared(torch.as_tensor(obs, dtype=torch.float32))
            return torch.softmax(self.head(hidden), -1), state

    class Critic(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.shared, self.head = shared, nn.Linear(2, 1)

        def forward(self, obs, state=None, info=None):
            return self.head(self.shared(torch.as_tensor(obs, dtype=torch.float32)))

    import gymnasium as gym

    from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy

    policy = DiscreteActorPolicy(
        actor=Actor(), dist_fn=torch.distributions.Categorical, action_space=gym.spaces.Discrete(3)
    )
    algorithm = A2C(policy=policy, critic=Critic(), optim=AdamOptimizerFactory(lr=1e-3))
    with policy_within_training_step(policy):
        algorithm.update(episode_buffer([1.0, 2.0], terminated_at=[1]), batch_size=None, repeat=1)
    # shared weight + bias, actor head weight + bias, critic head weight + bias
    assert len(algorithm.optim.state_dict()["state"]) == 6


def test_gradient_clipping_bounds_the_step() -> None:
    algorithm = make_a2c(lr=1.0, max_grad_norm=1e-3)
    before = [p.detach().clone() for p in algorithm.parameters()]
    buffer = episode_buffer([100.0, -50.0, 30.0], terminated_at=[2])
    with policy_within_training_step(algorithm.policy):
        algorithm.update(buffer, batch_size=None, repeat=1)
    delta = torch.cat(
        [(p.detach() - b).flatten() for p, b in zip(algorithm.parameters(), before, strict=True)]
    )
    assert 0.0 < delta.norm().item() <= 1e-3 + 1e-6


def test_critic_with_wrong_output_shape_is_a_clear_error() -> None:
    class WideCritic(nn.Module):
        def forward(self, obs, state=None, info=None):
            return torch.zeros(len(obs), 3)

    algorithm = A2C(
        policy=discrete_policy(), critic=WideCritic(), optim=AdamOptimizerFactory(lr=1e-3)
    )
    buffer = episode_buffer([1.0, 2.0], terminated_at=[1])
    with (
        policy_within_training_step(algorithm.policy),
        pytest.raises(ValueError, match=r"one value per observation.*\(2, 3\)"),
    ):
        algorithm.update(buffer, batch_size=None, repeat=1)


def test_nan_reward_gives_clear_loss_error() -> None:
    algorithm = make_a2c(lr=0.1)
    buffer = episode_buffer([1.0, float("nan"), 1.0], terminated_at=[2])
    before = [p.detach().clone() for p in algorithm.parameters()]
    with (
        policy_within_training_step(algorithm.policy),
        pytest.raises(FloatingPointError, match=r"not finite \(loss=nan, actor_loss="),
    ):
        algorithm.update(buffer, batch_size=None, repeat=1)
    for param, old in zip(algorithm.parameters(), before, strict=True):
        assert torch.equal(param, old), "a NaN loss must not reach the parameters"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gae_lambda": 1.5}, "gae_lambda"),
        ({"gamma": -0.1}, "gamma"),
        ({"max_batchsize": 0}, "max_batchsize"),
    ],
)
def test_invalid_hyper_parameters(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_a2c(**kwargs)


def test_actor_critic_base_is_abstract_and_exported() -> None:
    assert issubclass(A2C, ActorCriticOnPolicyAlgorithm)
    state = make_a2c().state_dict()
    assert any(key.startswith("critic.") for key in state)
    assert any(key.startswith("policy.actor.") for key in state)
