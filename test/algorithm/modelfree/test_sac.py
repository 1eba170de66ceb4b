"""Tests of SACPolicy and the SAC update (against a naive reference)."""

import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Independent, Normal

from tianshou.algorithm.modelfree.sac import (
    SAC,
    AutoAlpha,
    SACPolicy,
    SACTrainingStats,
    correct_log_prob_gaussian_tanh,
)
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import (
    Batch,
    Collector,
    InfoStats,
    PrioritizedReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.env import DummyVectorEnv
from tianshou.exploration import GaussianNoise
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
ACT_DIM = 2
SPACE = gym.spaces.Box(-2.0, 2.0, shape=(ACT_DIM,))
TANH_EPS = float(np.finfo(np.float32).eps)


class Actor(nn.Module):
    """Returns ``((mu, sigma), state)`` from a small MLP with a state-dependent log std."""

    def __init__(self, act_dim: int = ACT_DIM) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 16), nn.ReLU(), nn.Linear(16, 2 * act_dim))

    def forward(self, obs, state=None, info=None):
        mu, log_std = self.net(torch.as_tensor(obs, dtype=torch.float32)).chunk(2, dim=-1)
        return (mu, log_std.clamp(-5, 1).exp()), state


class Critic(nn.Module):
    """Q(s, a) from a small MLP over the concatenated observation and action."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM + ACT_DIM, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, obs, act=None, info=None):
        obs = torch.as_tensor(obs, dtype=torch.float32)
        act = torch.as_tensor(act, dtype=torch.float32)
        return self.net(torch.cat([obs, act], dim=-1))


def make_policy(**kwargs) -> SACPolicy:
    torch.manual_seed(0)
    return SACPolicy(actor=Actor(), action_space=SPACE, **kwargs)


def sgd(lr: float = 0.05) -> TorchOptimizerFactory:
    return TorchOptimizerFactory(torch.optim.SGD, lr=lr)


def make_sac(**kwargs) -> SAC:
    policy = make_policy()
    torch.manual_seed(1)
    params = {"tau": 0.1, "gamma": 0.9, "alpha": 0.2, **kwargs}
    return SAC(
        policy=policy,
        policy_optim=sgd(),
        critic=Critic(),
        critic_optim=sgd(),
        critic2=Critic(),
        critic2_optim=sgd(),
        **params,
    )


def filled_buffer(buffer: ReplayBuffer | None = None, steps: int = 16) -> ReplayBuffer:
    buffer = buffer if buffer is not None else ReplayBuffer(32)
    rng = np.random.default_rng(0)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=rng.normal(size=OBS_DIM).astype(np.float32),
                act=rng.uniform(-1, 1, size=ACT_DIM).astype(np.float32),
                rew=float(rng.normal()),
                terminated=t % 5 == 4,
                truncated=False,
                obs_next=rng.normal(size=OBS_DIM).astype(np.float32),
                info={},
            )
        )
    return buffer


def obs_batch(n: int = 6) -> Batch:
    return Batch(obs=np.linspace(-1, 1, n * OBS_DIM, dtype=np.float32).reshape(n, OBS_DIM))


class TestPolicy:
    def test_sampled_action_is_squashed_with_the_tanh_corrected_log_prob(self) -> None:
        policy = make_policy()
        batch = obs_batch()
        torch.manual_seed(5)
        with policy_within_training_step(policy):
            result = policy(batch)
        (mu, sigma), _ = policy.actor(batch.obs)
        torch.manual_seed(5)
        pre_tanh = mu + sigma * torch.randn_like(mu)
        assert torch.allclose(result.act, torch.tanh(pre_tanh), atol=1e-6)
        expected = Independent(Normal(mu, sigma), 1).log_prob(pre_tanh)[:, None] - torch.log(
            1 - torch.tanh(pre_tanh) ** 2 + TANH_EPS
        ).sum(-1, keepdim=True)
        assert result.log_prob.shape == (6, 1)
        assert torch.allclose(result.log_prob, expected, atol=1e-5)
        assert torch.equal(result.logits[0], mu) and torch.equal(result.logits[1], sigma)
        assert torch.allclose(result.dist.mean, mu)

    def test_deterministic_eval_uses_the_mean_outside_training_steps(self) -> None:
        policy = make_policy()
        batch = obs_batch()
        (mu, sigma), _ = policy.actor(batch.obs)
        evaluated = policy(batch)
        assert torch.allclose(evaluated.act, torch.tanh(mu))
        expected = Independent(Normal(mu, sigma), 1).log_prob(mu)[:, None] - torch.log(
            1 - torch.tanh(mu) ** 2 + TANH_EPS
        ).sum(-1, keepdim=True)
        assert torch.allclose(evaluated.log_prob, expected, atol=1e-5)
        with policy_within_training_step(policy):
            assert not torch.allclose(policy(batch).act, evaluated.act)
        stochastic = make_policy(deterministic_eval=False)
        assert not torch.allclose(stochastic(batch).act, stochastic(batch).act)

    def test_map_action_rescales_without_squashing_again(self) -> None:
        policy = make_policy()
        act = np.array([[-1.0, 0.5], [0.0, 1.0]], dtype=np.float32)
        assert np.allclose(policy.map_action(act), 2.0 * act)
        assert policy.action_bound_method == "clip"
        assert np.allclose(policy.map_action_inverse(policy.map_action(act)), act)

    def test_wrong_action_dimension_names_the_shapes(self) -> None:
        policy = SACPolicy(actor=Actor(act_dim=3), action_space=SPACE)
        with pytest.raises(ValueError, match=r"\(6, 3\).*\(batch_size, \*\(2,\)\)"):
            policy(obs_batch())

    def test_actor_must_return_mean_and_std(self) -> None:
        class MeanOnly(Actor):
            def forward(self, obs, state=None, info=None):
                return super().forward(obs)[0][0], state

        policy = SACPolicy(actor=MeanOnly(), action_space=SPACE)
        with pytest.raises(TypeError, match=r"\(\(mu, sigma\), hidden_state\)"):
            policy(obs_batch())

    def test_discrete_space_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="Box"):
            SACPolicy(actor=Actor(), action_space=gym.spaces.Discrete(2))

    def test_exploration_noise_is_none_by_default_and_accepts_default(self) -> None:
        assert make_policy().exploration_noise is None
        policy = make_policy(exploration_noise="default")
        assert isinstance(policy.exploration_noise, GaussianNoise)
        act = np.zeros((2_000, ACT_DIM))
        np.random.seed(0)
        noisy = policy.add_exploration_noise(act, Batch())
        assert abs(noisy.std() - 0.1) < 0.01


class TestTanhCorrection:
    def test_matches_the_change_of_variables_dimension_by_dimension(self) -> None:
        torch.manual_seed(0)
        pre_tanh = torch.randn(5, 3) * 2
        act = torch.tanh(pre_tanh)
        log_prob = torch.randn(5, 1)
        expected = log_prob.clone()
        for row in range(5):
            for dim in range(3):
                derivative = 1.0 - math.tanh(pre_tanh[row, dim].item()) ** 2
                expected[row, 0] -= math.log(derivative + float(np.finfo(np.float32).eps))
        corrected = correct_log_prob_gaussian_tanh(log_prob, act)
        assert corrected.shape == (5, 1)
        assert torch.allclose(corrected, expected, atol=1e-4)

    def test_flat_log_probs_keep_their_shape(self) -> None:
        act = torch.full((4, 2), 0.5)
        flat = correct_log_prob_gaussian_tanh(torch.zeros(4), act, eps=0.0)
        assert flat.shape == (4,)
        assert torch.allclose(flat, torch.full((4,), -2 * math.log(0.75)))

    def test_saturated_actions_stay_finite(self) -> None:
        corrected = correct_log_prob_gaussian_tanh(torch.zeros(1, 1), torch.ones(1, 2))
        assert torch.isfinite(corrected).all()


def reference_sac_update(sac: SAC, batch: Batch, lr: float = 0.05) -> None:
    """A naive SAC step with plain autograd and SGD, written independently of SAC's code:
    soft twin-Q target, two critic steps, an actor step through the critics, Polyak."""
    policy, gamma, alpha = sac.policy, sac.gamma, sac.alpha.value
    obs = torch.as_tensor(batch.obs)
    act = torch.as_tensor(batch.act)
    with torch.no_grad():
        (mu, sigma), _ = policy.actor(batch.obs_next)
        pre = mu + sigma * torch.randn_like(mu)
        act_next = torch.tanh(pre)
        logp = Independent(Normal(mu, sigma), 1).log_prob(pre) - torch.log(
            1 - act_next**2 + TANH_EPS
        ).sum(-1)
        q_next = torch.min(
            sac.critic_old(batch.obs_next, act_next), sac.critic2_old(batch.obs_next, act_next)
        ).flatten()
        not_done = 1.0 - torch.as_tensor(batch.terminated, dtype=torch.float32)
        target = torch.as_tensor(batch.rew, dtype=torch.float32) + gamma * not_done * (
            q_next - alpha * logp
        )
    for critic in (sac.critic, sac.critic2):
        critic.zero_grad()
        ((critic(obs, act).flatten() - target) ** 2).mean().backward()
        with torch.no_grad():
            for param in critic.parameters():
                param -= lr * param.grad
    policy.zero_grad()
    (mu, sigma), _ = policy.actor(batch.obs)
    pre = mu + sigma * torch.randn_like(mu)
    new_act = torch.tanh(pre)
    logp = Independent(Normal(mu, sigma), 1).log_prob(pre) - torch.log(
        1 - new_act**2 + TANH_EPS
    ).sum(-1)
    q = torch.min(sac.critic(obs, new_act), sac.critic2(obs, new_act)).flatten()
    (alpha * logp - q).mean().backward()
    with torch.no_grad():
        for param in policy.parameters():
            param -= lr * param.grad
        for source, target_net in ((sac.critic, sac.critic_old), (sac.critic2, sac.critic2_old)):
            for param, target_param in zip(
                source.parameters(), target_net.parameters(), strict=True
            ):
                target_param.mul_(1 - sac.tau).add_(sac.tau * param)


class TestUpdate:
    def test_update_matches_a_naive_reference(self) -> None:
        sac = make_sac()
        reference = copy.deepcopy(sac)
        buffer = filled_buffer()
        for step in range(3):
            batch, _ = buffer.sample(0)
            torch.manual_seed(step)
            with policy_within_training_step(sac.policy):
                stats = sac.update(buffer, 0)
            torch.manual_seed(step)
            with policy_within_training_step(reference.policy):
                reference_sac_update(reference, batch)
            assert isinstance(stats, SACTrainingStats)
        for (name, mine), theirs in zip(
            sac.named_parameters(), reference.parameters(), strict=True
        ):
            assert torch.allclose(mine, theirs, atol=1e-5), name

    def test_stats_and_td_weights(self) -> None:
        sac = make_sac(alpha=AutoAlpha(-2.0, 0.0, sgd(0.1)))
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = sac._preprocess_batch(batch, buffer, indices)
        returns = processed.returns.flatten()
        with torch.no_grad():
            q1 = sac.critic(batch.obs, batch.act).flatten()
            q2 = sac.critic2(batch.obs, batch.act).flatten()
        with policy_within_training_step(sac.policy):
            stats = sac._update_with_batch(processed)
        assert stats.critic1_loss == pytest.approx(float(((q1 - returns) ** 2).mean()), rel=1e-5)
        assert stats.critic2_loss == pytest.approx(float(((q2 - returns) ** 2).mean()), rel=1e-5)
        assert torch.allclose(processed.weight, ((q1 - returns) + (q2 - returns)) / 2, atol=1e-5)
        assert stats.alpha == pytest.approx(sac.alpha.value)
        assert stats.alpha_loss is not None and stats.alpha != 1.0
        assert all(isinstance(v, float) for v in stats.get_loss_stats_dict().values())

    def test_n_step_targets_bootstrap_from_the_last_rows_next_observation(self) -> None:
        sac = make_sac(n_step_return_horizon=2)
        sac._target_q_compute_action = lambda obs_batch: Batch()
        sac._target_q_compute_value = lambda obs_batch, act_batch: torch.as_tensor(
            obs_batch.obs[:, :1]
        )
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        returns = sac._preprocess_batch(batch, buffer, indices).returns.flatten()
        rew, obs_next = buffer.rew, buffer.obs_next
        # steps 0 and 1 continue the episode; step 3 is followed by the terminal step 4
        expected0 = rew[0] + 0.9 * rew[1] + 0.81 * obs_next[1, 0]
        assert returns[0].item() == pytest.approx(expected0, rel=1e-5)
        assert returns[3].item() == pytest.approx(rew[3] + 0.9 * rew[4], rel=1e-5)
        assert returns[4].item() == pytest.approx(rew[4], rel=1e-5)

    def test_fixed_alpha_reports_no_alpha_loss(self) -> None:
        sac = make_sac(alpha=0.1)
        with policy_within_training_step(sac.policy):
            stats = sac.update(filled_buffer(), 4)
        assert stats.alpha == pytest.approx(0.1)
        assert stats.alpha_loss is None

    def test_polyak_update_of_the_target_critics(self) -> None:
        sac = make_sac()
        target_before = [p.detach().clone() for p in sac.critic2_old.parameters()]
        with policy_within_training_step(sac.policy):
            sac.update(filled_buffer(), 4)
        for old, new, source in zip(
            target_before, sac.critic2_old.parameters(), sac.critic2.parameters(), strict=True
        ):
            assert torch.allclose(new, 0.9 * old + 0.1 * source, atol=1e-6)

    def test_default_critic2_is_an_independent_copy(self) -> None:
        policy = make_policy()
        critic = Critic()
        sac = SAC(policy=policy, policy_optim=sgd(), critic=critic, critic_optim=sgd())
        assert type(sac.critic2) is Critic and sac.critic2 is not critic
        assert not torch.equal(sac.critic2.net[0].weight, critic.net[0].weight)
        assert sac.critic2_optim is not sac.critic_optim

    def test_critics_stay_trainable_after_the_actor_step(self) -> None:
        sac = make_sac()
        with policy_within_training_step(sac.policy):
            sac.update(filled_buffer(), 4)
        assert all(p.requires_grad for p in sac.critic.parameters())
        assert all(p.requires_grad for p in sac.critic2.parameters())

    def test_prioritized_buffer_receives_td_errors(self) -> None:
        buffer = filled_buffer(PrioritizedReplayBuffer(32, alpha=0.6, beta=0.4))
        before = buffer.weight[np.arange(16)].copy()
        sac = make_sac()
        with policy_within_training_step(sac.policy):
            sac.update(buffer, 8)
        assert not np.allclose(buffer.weight[np.arange(16)], before)

    def test_nan_loss_raises(self) -> None:
        sac = make_sac()
        buffer = filled_buffer()
        buffer.rew[3] = np.nan
        with (
            pytest.raises(FloatingPointError, match="not finite"),
            policy_within_training_step(sac.policy),
        ):
            sac.update(buffer, 0)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"tau": 1.5}, "tau"),
            ({"gamma": -0.1}, "gamma"),
            ({"n_step_return_horizon": 0}, "n_step"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_sac(**kwargs)


def test_checkpoint_of_another_algorithm_is_rejected_untouched() -> None:
    """A DQN checkpoint loaded into SAC: a clear error, and SAC keeps its parameters."""
    from tianshou.algorithm import DQN
    from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy

    sac = make_sac()
    dqn = DQN(
        policy=DiscreteQLearningPolicy(
            model=Net(state_shape=OBS_DIM, action_shape=2, hidden_sizes=[8]),
            action_space=gym.spaces.Discrete(2),
        ),
        optim=AdamOptimizerFactory(),
    )
    before = copy.deepcopy(sac.state_dict())
    with pytest.raises(RuntimeError, match="another algorithm"):
        sac.load_state_dict(dqn.state_dict())
    after = sac.state_dict()
    for key, value in before.items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(after[key], value), key


def train_pendulum(
    seed: int, max_epochs: int, epoch_num_steps: int, stop_at: float | None
) -> tuple[InfoStats, SAC]:
    """SAC with a learned alpha on Pendulum-v1 (4 training envs, 64x64 networks)."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    task = "Pendulum-v1"
    env = gym.make(task)
    training_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(4)])
    test_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=[64, 64]),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )

    def critic() -> ContinuousCritic:
        body = Net(state_shape=3, action_shape=1, hidden_sizes=[64, 64], concat=True)
        return ContinuousCritic(preprocess_net=body)

    algorithm = SAC(
        policy=SACPolicy(actor=actor, action_space=env.action_space),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.99,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
    )
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 4), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    training_collector.reset()
    test_collector.reset()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=max_epochs,
            epoch_num_steps=epoch_num_steps,
            collection_step_num_env_steps=8,
            test_step_num_episodes=10,
            batch_size=128,
            update_step_num_gradient_steps_per_sample=1.0,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )
    return result, algorithm


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_sac_learns_pendulum() -> None:
    result, _ = train_pendulum(seed=0, max_epochs=12, epoch_num_steps=1000, stop_at=-250.0)
    assert result.best_reward >= -250.0
    assert result.train_step <= 12 * 1000


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_sac_training_is_deterministic() -> None:
    _, first = train_pendulum(seed=3, max_epochs=1, epoch_num_steps=200, stop_at=None)
    _, second = train_pendulum(seed=3, max_epochs=1, epoch_num_steps=200, stop_at=None)
    first_state, second_state = first.state_dict(), second.state_dict()
    tensors = [key for key, value in first_state.items() if isinstance(value, torch.Tensor)]
    assert "alpha._log_alpha" in tensors
    for key in tensors:
        assert torch.equal(first_state[key], second_state[key]), key
