"""Tests of the stochastic actor policies, discounted returns and REINFORCE."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from tianshou.algorithm.modelfree.reinforce import (
    DiscountedReturnComputation,
    DiscreteActorPolicy,
    LossSequenceTrainingStats,
    ProbabilisticActorPolicy,
    Reinforce,
    SimpleLossTrainingStats,
)
from tianshou.algorithm.optim import TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer, SequenceSummaryStats
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, dist_fn_categorical_from_logits
from tianshou.utils.torch_utils import policy_within_training_step


class ProbsActor(nn.Module):
    """A linear softmax actor following the ``(obs, state, info) -> (probs, state)`` protocol."""

    def __init__(self, obs_dim: int = 2, num_actions: int = 3) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_dim, num_actions), nn.Softmax(dim=-1))

    def forward(self, obs, state=None, info=None):
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), state


class GaussianActor(nn.Module):
    """Linear mean with a state-independent log std; returns ``((mu, sigma), state)``."""

    def __init__(self, obs_dim: int = 2, act_dim: int = 2) -> None:
        super().__init__()
        self.mu = nn.Linear(obs_dim, act_dim)
        self.log_std = nn.Parameter(torch.zeros(act_dim))

    def forward(self, obs, state=None, info=None):
        mu = self.mu(torch.as_tensor(obs, dtype=torch.float32))
        return (mu, self.log_std.exp().expand_as(mu)), state


def gaussian(loc_scale: tuple[torch.Tensor, torch.Tensor]) -> Distribution:
    loc, scale = loc_scale
    return Independent(Normal(loc, scale), 1)


def discrete_policy(**kwargs) -> DiscreteActorPolicy:
    torch.manual_seed(0)
    return DiscreteActorPolicy(
        actor=ProbsActor(), dist_fn=Categorical, action_space=gym.spaces.Discrete(3), **kwargs
    )


def continuous_policy(**kwargs) -> ProbabilisticActorPolicy:
    torch.manual_seed(0)
    space = gym.spaces.Box(-2.0, 2.0, shape=(2,))
    return ProbabilisticActorPolicy(
        actor=GaussianActor(), dist_fn=gaussian, action_space=space, **kwargs
    )


def obs_batch(n: int = 5) -> Batch:
    return Batch(obs=np.linspace(-1, 1, 2 * n, dtype=np.float32).reshape(n, 2), info={})


def episode_buffer(rews: list[float], terminated_at: list[int], size: int = 20) -> ReplayBuffer:
    """A buffer with one transition per reward; episodes end (terminated) at the given steps.

    ``obs_next`` of step t equals ``obs`` of step t + 1, as in a real rollout.
    """
    buffer = ReplayBuffer(size)
    for t, rew in enumerate(rews):
        obs = np.array([t, 1.0], dtype=np.float32)
        buffer.add(
            Batch(
                obs=obs,
                act=t % 3,
                rew=rew,
                terminated=t in terminated_at,
                truncated=False,
                obs_next=np.array([t + 1, 1.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


class TestProbabilisticActorPolicy:
    def test_discrete_forward_returns_act_dist_logits_state(self) -> None:
        policy = discrete_policy()
        result = policy(obs_batch())
        assert result.act.shape == (5,)
        assert isinstance(result.dist, Categorical)
        assert result.logits.shape == (5, 3)
        assert torch.allclose(result.logits.sum(-1), torch.ones(5))
        assert result.state is None
        assert policy.action_type == "discrete"

    def test_deterministic_eval_takes_argmax_only_outside_training(self) -> None:
        policy = discrete_policy(deterministic_eval=True)
        batch = obs_batch(50)
        expected = policy(batch).logits.argmax(-1)
        for _ in range(3):
            assert torch.equal(policy(batch).act, expected)
        torch.manual_seed(1)
        with policy_within_training_step(policy):
            sampled = torch.stack([policy(batch).act for _ in range(10)])
        assert not (sampled == expected).all()

    def test_continuous_forward_and_deterministic_mean(self) -> None:
        policy = continuous_policy(deterministic_eval=True)
        batch = obs_batch(4)
        result = policy(batch)
        mu, sigma = result.logits
        assert torch.equal(result.act, mu)
        assert result.dist.log_prob(result.act).shape == (4,)
        assert torch.allclose(sigma, torch.ones(4, 2))
        with policy_within_training_step(policy):
            assert not torch.equal(policy(batch).act, mu)

    def test_update_dist_is_forwards_dist_without_drawing_an_action(self) -> None:
        policy = continuous_policy()
        batch = obs_batch(4)
        torch.manual_seed(0)
        dist = policy._update_dist(batch)
        untouched = torch.rand(1)
        torch.manual_seed(0)
        assert torch.equal(torch.rand(1), untouched)  # no random numbers were drawn
        expected = policy(batch).dist
        act = torch.zeros(4, 2)
        assert torch.equal(dist.log_prob(act), expected.log_prob(act))
        assert torch.equal(dist.entropy(), expected.entropy())

    def test_update_dist_honours_an_overridden_forward(self) -> None:
        class Tempered(DiscreteActorPolicy):
            def forward(self, batch, state=None, **kwargs):
                result = super().forward(batch, state, **kwargs)
                result.dist = Categorical(logits=result.dist.logits / 2)
                return result

        torch.manual_seed(0)  # the actor of discrete_policy()
        policy = Tempered(
            actor=ProbsActor(), dist_fn=Categorical, action_space=gym.spaces.Discrete(3)
        )
        batch = obs_batch()
        assert torch.allclose(policy._update_dist(batch).probs, policy(batch).dist.probs)
        assert not torch.allclose(
            policy._update_dist(batch).probs, discrete_policy()._update_dist(batch).probs
        )

    def test_continuous_actions_are_mapped_to_the_box(self) -> None:
        policy = continuous_policy()
        assert policy.action_scaling
        mapped = policy.map_action(np.array([[-5.0, 0.5]]))
        np.testing.assert_allclose(mapped, [[-2.0, 1.0]])

    def test_wrong_action_shape_is_a_clear_error(self) -> None:
        space = gym.spaces.Box(-1.0, 1.0, shape=(3,))
        policy = ProbabilisticActorPolicy(
            actor=GaussianActor(), dist_fn=gaussian, action_space=space
        )
        with pytest.raises(ValueError, match=r"shape \(5, 2\).*needs \(5, 3\)"):
            policy(obs_batch())

    def test_wrong_number_of_categories_is_a_clear_error(self) -> None:
        policy = DiscreteActorPolicy(actor=ProbsActor(), action_space=gym.spaces.Discrete(4))
        with pytest.raises(
            ValueError, match=r"outputs 3 action probabilities \(or logits\).*has 4"
        ):
            policy(obs_batch())

    def test_actor_must_return_a_pair(self) -> None:
        class BareActor(nn.Module):
            def forward(self, obs, state=None, info=None):
                return torch.ones(len(obs), 3) / 3

        policy = DiscreteActorPolicy(actor=BareActor(), action_space=gym.spaces.Discrete(3))
        with pytest.raises(TypeError, match="pair"):
            policy(obs_batch())

    def test_discrete_policy_rejects_box_and_uncallable_dist_fn(self) -> None:
        with pytest.raises(ValueError, match="discrete action space"):
            DiscreteActorPolicy(actor=ProbsActor(), action_space=gym.spaces.Box(-1, 1, (2,)))
        with pytest.raises(TypeError, match="dist_fn must be callable"):
            ProbabilisticActorPolicy(
                actor=ProbsActor(),
                dist_fn=3,
                action_space=gym.spaces.Discrete(3),  # type: ignore[arg-type]
            )

    def test_discrete_policy_reads_the_actor_output_as_logits_by_default(self) -> None:
        torch.manual_seed(0)
        actor = DiscreteActor(
            preprocess_net=Net(state_shape=2, hidden_sizes=[8]),
            action_shape=3,
            softmax_output=False,
        )
        policy = DiscreteActorPolicy(actor=actor, action_space=gym.spaces.Discrete(3))
        assert policy.dist_fn is dist_fn_categorical_from_logits
        result = policy(obs_batch())
        assert (result.logits < 0).any()  # not probabilities: Categorical(probs=...) rejects them
        assert torch.allclose(result.dist.probs, torch.softmax(result.logits, -1))

    def test_probability_actor_with_the_logits_default_warns(self) -> None:
        actor = DiscreteActor(preprocess_net=Net(state_shape=2, hidden_sizes=[8]), action_shape=3)
        with pytest.warns(UserWarning, match="softmax_output"):
            DiscreteActorPolicy(actor=actor, action_space=gym.spaces.Discrete(3))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            DiscreteActorPolicy(
                actor=actor, dist_fn=Categorical, action_space=gym.spaces.Discrete(3)
            )

    def test_compute_action_for_one_observation(self) -> None:
        policy = continuous_policy(deterministic_eval=True)
        act = policy.compute_action(np.array([0.5, -0.5], dtype=np.float32))
        assert act.shape == (2,)
        assert np.all(np.abs(act) <= 2.0)


class TestDiscountedReturns:
    def test_monte_carlo_returns_by_hand(self) -> None:
        buffer = episode_buffer([1.0, 2.0, 3.0, 4.0], terminated_at=[1])
        batch, indices = buffer.sample(0)
        batch = DiscountedReturnComputation(gamma=0.5).add_discounted_returns(
            batch, buffer, indices
        )
        # episode 1: [1 + 0.5 * 2, 2]; episode 2 is still running: [3 + 0.5 * 4, 4]
        np.testing.assert_allclose(batch.returns, [2.0, 2.0, 5.0, 4.0])

    def test_standardization_uses_running_statistics(self) -> None:
        buffer = episode_buffer([1.0, 2.0, 3.0, 4.0], terminated_at=[1, 3])
        computation = DiscountedReturnComputation(gamma=0.5, return_standardization=True)
        batch, indices = buffer.sample(0)
        first = computation.add_discounted_returns(batch, buffer, indices).returns
        # first call: mean 0, var 1 (the initial estimates) -> unchanged returns
        np.testing.assert_allclose(first, [2.0, 2.0, 5.0, 4.0], rtol=1e-6)
        raw = np.array([2.0, 2.0, 5.0, 4.0])
        np.testing.assert_allclose(computation.ret_rms.mean, raw.mean())
        second = computation.add_discounted_returns(batch, buffer, indices).returns
        np.testing.assert_allclose(second, (raw - raw.mean()) / np.sqrt(raw.var() + 1e-8))

    def test_gamma_out_of_range(self) -> None:
        with pytest.raises(ValueError, match="gamma"):
            DiscountedReturnComputation(gamma=1.5)


def make_reinforce(lr: float = 0.1, **kwargs) -> Reinforce:
    return Reinforce(
        policy=discrete_policy(), optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr), **kwargs
    )


class TestReinforce:
    def test_loss_matches_hand_computation(self) -> None:
        algorithm = make_reinforce()
        buffer = episode_buffer([1.0, 0.0, 2.0], terminated_at=[2])
        batch, _ = buffer.sample(0)
        with torch.no_grad():
            log_probs = algorithm.policy(batch).dist.log_prob(torch.as_tensor(batch.act))
        returns = torch.tensor([1.0 + 0.99**2 * 2.0, 0.99 * 2.0, 2.0])
        expected = -(log_probs * returns).mean().item()
        with policy_within_training_step(algorithm.policy):
            stats = algorithm.update(buffer, batch_size=None, repeat=1)
        assert isinstance(stats, LossSequenceTrainingStats)
        assert stats.loss.mean == pytest.approx(expected, rel=1e-5)
        assert stats.loss.std == 0.0

    def test_update_raises_probability_of_rewarded_action(self) -> None:
        algorithm = make_reinforce(lr=0.5)
        buffer = ReplayBuffer(64)
        for t in range(32):
            act = t % 3
            buffer.add(
                Batch(
                    obs=np.array([1.0, 0.0], dtype=np.float32),
                    act=act,
                    rew=float(act == 2),
                    terminated=True,
                    truncated=False,
                    obs_next=np.zeros(2, dtype=np.float32),
                    info={},
                )
            )
        obs = Batch(obs=np.array([[1.0, 0.0]], dtype=np.float32), info={})
        before = algorithm.policy(obs).logits[0, 2].item()
        with policy_within_training_step(algorithm.policy):
            stats = algorithm.update(buffer, batch_size=8, repeat=3)
        assert algorithm.policy(obs).logits[0, 2].item() > before + 0.1
        assert len([stats.loss.mean]) == 1 and stats.loss.max >= stats.loss.min

    def test_nan_loss_is_a_clear_error(self) -> None:
        algorithm = make_reinforce()
        buffer = episode_buffer([1.0, float("nan"), 2.0], terminated_at=[2])
        with (
            policy_within_training_step(algorithm.policy),
            pytest.raises(FloatingPointError, match=r"not finite \(loss=nan\)"),
        ):
            algorithm.update(buffer, batch_size=None, repeat=1)

    def test_empty_buffer_is_a_clear_error(self) -> None:
        algorithm = make_reinforce()
        with (
            policy_within_training_step(algorithm.policy),
            pytest.raises(ValueError, match="empty buffer"),
        ):
            algorithm.update(ReplayBuffer(8), batch_size=None, repeat=1)

    def test_update_outside_training_step_is_refused(self) -> None:
        algorithm = make_reinforce()
        with pytest.raises(RuntimeError):
            algorithm.update(episode_buffer([1.0], terminated_at=[0]), batch_size=None, repeat=1)

    def test_batch_size_zero_updates_like_none_on_everything_at_once(self) -> None:
        buffer = episode_buffer([1.0, 2.0, 0.5], terminated_at=[2])
        params = []
        for batch_size in (0, None, 1):
            algorithm = make_reinforce()
            with policy_within_training_step(algorithm.policy):
                algorithm.update(buffer, batch_size=batch_size, repeat=1)
            params.append(torch.cat([p.flatten() for p in algorithm.policy.parameters()]))
        assert torch.allclose(params[0], params[1])  # the same rows, summed in another order
        assert not torch.allclose(params[0], params[2])

    def test_bad_batch_size_and_repeat(self) -> None:
        algorithm = make_reinforce()
        buffer = episode_buffer([1.0, 2.0], terminated_at=[1])
        with policy_within_training_step(algorithm.policy):
            with pytest.raises(ValueError, match="batch_size"):
                algorithm.update(buffer, batch_size=-1, repeat=1)
            with pytest.raises(ValueError, match="repeat"):
                algorithm.update(buffer, batch_size=None, repeat=0)

    def test_stats_dataclasses(self) -> None:
        stats = SimpleLossTrainingStats(loss=1.5)
        assert stats.loss == 1.5
        summary = SequenceSummaryStats.from_sequence([1.0, 3.0])
        assert LossSequenceTrainingStats(loss=summary).loss.mean == 2.0
