"""Tests of REDQPolicy and the REDQ update: the random-subset target and the ensemble-mean actor
step against deliberately naive loops, the actor delay, learning and determinism."""

import copy
import functools

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Independent, Normal

from tianshou.algorithm.modelfree.ddpg import DDPGTrainingStats
from tianshou.algorithm.modelfree.redq import REDQ, REDQPolicy, REDQTrainingStats
from tianshou.algorithm.modelfree.sac import AutoAlpha, FixedAlpha
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
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLog, TraceLoggerContext
from tianshou.utils.net.common import EnsembleLinear, Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
ACT_DIM = 2
ENSEMBLE = 5
SPACE = gym.spaces.Box(-2.0, 2.0, shape=(ACT_DIM,))
TANH_EPS = float(np.finfo(np.float32).eps)
# the learning test: critic steps per collected step (and per actor step), and its epoch budget
UTD = 1
MAX_EPOCHS = 8


class Actor(nn.Module):
    """Returns ``((mu, sigma), state)`` from a small MLP with a state-dependent log std."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 16), nn.ReLU(), nn.Linear(16, 2 * ACT_DIM))

    def forward(self, obs, state=None, info=None):
        mu, log_std = self.net(torch.as_tensor(obs, dtype=torch.float32)).chunk(2, dim=-1)
        return (mu, log_std.clamp(-5, 1).exp()), state


def ensemble_critic(ensemble_size: int = ENSEMBLE, hidden: int = 16) -> ContinuousCritic:
    """The customary REDQ critic: a ``Net`` and head built from ``EnsembleLinear`` layers."""
    linear = functools.partial(EnsembleLinear, ensemble_size)
    body = Net(
        state_shape=OBS_DIM,
        action_shape=ACT_DIM,
        hidden_sizes=[hidden],
        concat=True,
        linear_layer=linear,
    )
    return ContinuousCritic(preprocess_net=body, linear_layer=linear, flatten_input=False)


def member_q(critic: ContinuousCritic, member: int, obs, act) -> torch.Tensor:
    """Q-values ``(B,)`` of one ensemble member, computed alone with plain matrix products."""
    x = torch.cat(
        [torch.as_tensor(obs, dtype=torch.float32), torch.as_tensor(act, dtype=torch.float32)], 1
    )
    layers = [m for m in critic.modules() if isinstance(m, EnsembleLinear)]
    for index, layer in enumerate(layers):
        x = x @ layer.weight[member] + layer.bias[member]
        if index < len(layers) - 1:
            x = torch.relu(x)
    return x.flatten()


def sgd(lr: float = 0.05) -> TorchOptimizerFactory:
    return TorchOptimizerFactory(torch.optim.SGD, lr=lr)


def make_redq(**kwargs) -> REDQ:
    torch.manual_seed(0)
    policy = REDQPolicy(actor=Actor(), action_space=SPACE)
    torch.manual_seed(1)
    params = {
        "ensemble_size": ENSEMBLE,
        "subset_size": 2,
        "tau": 0.1,
        "gamma": 0.9,
        "alpha": 0.2,
        "actor_delay": 1,
        **kwargs,
    }
    critic = ensemble_critic(params["ensemble_size"])
    return REDQ(policy=policy, policy_optim=sgd(), critic=critic, critic_optim=sgd(), **params)


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
                truncated=t == 7,
                obs_next=rng.normal(size=OBS_DIM).astype(np.float32),
                info={},
            )
        )
    return buffer


class TestPolicy:
    def test_sampled_action_is_squashed_with_the_tanh_corrected_log_prob(self) -> None:
        policy = make_redq().policy
        obs = np.linspace(-1, 1, 6 * OBS_DIM, dtype=np.float32).reshape(6, OBS_DIM)
        torch.manual_seed(5)
        with policy_within_training_step(policy):
            result = policy(Batch(obs=obs))
        (mu, sigma), _ = policy.actor(obs)
        torch.manual_seed(5)
        pre_tanh = mu + sigma * torch.randn_like(mu)
        assert torch.allclose(result.act, torch.tanh(pre_tanh), atol=1e-6)
        expected = Independent(Normal(mu, sigma), 1).log_prob(pre_tanh)[:, None] - torch.log(
            1 - torch.tanh(pre_tanh) ** 2 + TANH_EPS
        ).sum(-1, keepdim=True)
        assert result.log_prob.shape == (6, 1)
        assert torch.allclose(result.log_prob, expected, atol=1e-5)
        assert torch.equal(result.logits[0], mu) and torch.equal(result.logits[1], sigma)

    def test_deterministic_eval_uses_the_mean_outside_training_steps(self) -> None:
        policy = make_redq().policy
        obs = np.ones((4, OBS_DIM), dtype=np.float32)
        (mu, _), _ = policy.actor(obs)
        assert torch.allclose(policy(Batch(obs=obs)).act, torch.tanh(mu))
        with policy_within_training_step(policy):
            assert not torch.allclose(policy(Batch(obs=obs)).act, torch.tanh(mu))

    def test_discrete_space_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="Box"):
            REDQPolicy(actor=Actor(), action_space=gym.spaces.Discrete(2))


def naive_target(redq: REDQ, obs, act, log_prob, subset) -> torch.Tensor:
    """Per sample, the min (or mean) over the subset members of the target critic, minus
    ``alpha * log_prob``: one member and one sample at a time."""
    per_member = torch.stack([member_q(redq.critic_old, m, obs, act) for m in subset])
    values = []
    for i in range(len(obs)):
        members = [float(per_member[k, i]) for k in range(len(subset))]
        best = min(members) if redq.target_mode == "min" else sum(members) / len(members)
        values.append(best - redq.alpha.value * float(log_prob[i, 0]))
    return torch.tensor(values)[:, None]


class TestTarget:
    @pytest.mark.parametrize("target_mode", ["min", "mean"])
    @pytest.mark.parametrize("subset_size", [1, 2, ENSEMBLE])
    def test_random_subset_target_matches_a_naive_loop(
        self, target_mode: str, subset_size: int
    ) -> None:
        redq = make_redq(target_mode=target_mode, subset_size=subset_size)
        rng = np.random.default_rng(3)
        obs = rng.normal(size=(7, OBS_DIM)).astype(np.float32)
        act_batch = Batch(
            act=torch.as_tensor(rng.uniform(-1, 1, size=(7, ACT_DIM)), dtype=torch.float32),
            log_prob=torch.as_tensor(rng.normal(size=(7, 1)), dtype=torch.float32),
        )
        np.random.seed(11)
        subset = np.random.choice(ENSEMBLE, subset_size, replace=False)
        np.random.seed(11)
        with torch.no_grad():
            target = redq._target_q_compute_value(Batch(obs=obs), act_batch)
        expected = naive_target(redq, obs, act_batch.act, act_batch.log_prob, subset)
        assert target.shape == (7, 1)
        assert torch.allclose(target, expected, atol=1e-5)

    def test_subsets_are_distinct_members_and_cover_the_ensemble(self) -> None:
        redq = make_redq(subset_size=3)
        np.random.seed(0)
        drawn = [redq._sample_subset() for _ in range(200)]
        assert all(len(set(s)) == 3 and set(s) <= set(range(ENSEMBLE)) for s in drawn)
        counts = np.bincount(np.concatenate(drawn), minlength=ENSEMBLE)
        assert counts.min() > 0.5 * counts.mean()

    def test_returns_stop_at_terminal_and_bootstrap_at_truncation(self) -> None:
        redq = make_redq(n_step_return_horizon=2)
        redq._target_q_compute_action = lambda obs_batch: Batch()
        redq._target_q_compute_value = lambda obs_batch, act_batch: torch.as_tensor(
            obs_batch.obs[:, :1]
        )
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        returns = redq._preprocess_batch(batch, buffer, indices).returns.flatten()
        rew, obs_next = buffer.rew, buffer.obs_next
        assert returns[0].item() == pytest.approx(rew[0] + 0.9 * rew[1] + 0.81 * obs_next[1, 0])
        # step 4 is terminal: no bootstrap, and step 3's horizon stops there
        assert returns[4].item() == pytest.approx(rew[4], rel=1e-5)
        assert returns[3].item() == pytest.approx(rew[3] + 0.9 * rew[4], rel=1e-5)
        # step 7 is truncated: the episode ends but its next observation is bootstrapped
        assert returns[7].item() == pytest.approx(rew[7] + 0.9 * obs_next[7, 0], rel=1e-5)
        assert returns[6].item() == pytest.approx(
            rew[6] + 0.9 * rew[7] + 0.81 * obs_next[7, 0], rel=1e-5
        )


def reference_update(redq: REDQ, batch: Batch, step_actor: bool) -> None:
    """One REDQ update done naively: member by member for the critic, then the actor on the
    mean of the members' Q-values, SGD by hand, then the Polyak step."""
    lr = 0.05
    returns = torch.as_tensor(batch.returns, dtype=torch.float32).flatten()
    critic_params = list(redq.critic.parameters())
    losses = [
        (member_q(redq.critic, m, batch.obs, batch.act) - returns).pow(2).mean()
        for m in range(redq.ensemble_size)
    ]
    grads = torch.autograd.grad(sum(losses) / redq.ensemble_size, critic_params)
    with torch.no_grad():
        for param, grad in zip(critic_params, grads, strict=True):
            param -= lr * grad
    if step_actor:
        policy = redq.policy
        (mu, sigma), _ = policy.actor(batch.obs)
        pre_tanh = mu + sigma * torch.randn_like(mu)
        new_act = torch.tanh(pre_tanh)
        logp = Independent(Normal(mu, sigma), 1).log_prob(pre_tanh) - torch.log(
            1 - new_act**2 + TANH_EPS
        ).sum(-1)
        members = [member_q(redq.critic, m, batch.obs, new_act) for m in range(redq.ensemble_size)]
        mean_q = sum(members) / redq.ensemble_size
        actor_params = list(policy.parameters())
        grads = torch.autograd.grad((redq.alpha.value * logp - mean_q).mean(), actor_params)
        with torch.no_grad():
            for param, grad in zip(actor_params, grads, strict=True):
                param -= lr * grad
    with torch.no_grad():
        for param, target in zip(critic_params, redq.critic_old.parameters(), strict=True):
            target.mul_(1 - redq.tau).add_(redq.tau * param)


class TestUpdate:
    @pytest.mark.parametrize("actor_delay", [1, 2])
    def test_update_matches_a_naive_reference(self, actor_delay: int) -> None:
        redq = make_redq(actor_delay=actor_delay)
        reference = copy.deepcopy(redq)
        buffer = filled_buffer()
        for step in range(4):
            batch, indices = buffer.sample(0)
            np.random.seed(step)
            torch.manual_seed(step)
            processed = redq._preprocess_batch(batch, buffer, indices)
            with policy_within_training_step(redq.policy):
                stats = redq._update_with_batch(processed)
            torch.manual_seed(step)
            with policy_within_training_step(reference.policy):
                reference_update(reference, processed, step_actor=(step + 1) % actor_delay == 0)
            assert isinstance(stats, REDQTrainingStats)
        for (name, mine), theirs in zip(
            redq.named_parameters(), reference.parameters(), strict=True
        ):
            assert torch.allclose(mine, theirs, atol=1e-5), name

    def test_actor_waits_for_actor_delay_critic_steps(self) -> None:
        redq = make_redq(actor_delay=3, alpha=AutoAlpha(-2.0, 0.0, sgd(0.1)))
        buffer = filled_buffer()
        actor_before = [p.detach().clone() for p in redq.policy.parameters()]
        alpha_before = redq.alpha.value
        with policy_within_training_step(redq.policy):
            first = redq.update(buffer, 8)
            second = redq.update(buffer, 8)
        assert all(
            torch.equal(a, b) for a, b in zip(actor_before, redq.policy.parameters(), strict=True)
        )
        assert redq.alpha.value == alpha_before
        assert first.actor_loss == second.actor_loss == 0.0 and first.alpha_loss is None
        with policy_within_training_step(redq.policy):
            third = redq.update(buffer, 8)
        assert redq.critic_gradient_step == 3
        assert not all(
            torch.equal(a, b) for a, b in zip(actor_before, redq.policy.parameters(), strict=True)
        )
        assert third.actor_loss != 0.0 and third.alpha_loss is not None
        assert redq.alpha.value != alpha_before

    def test_stats_and_td_weights(self) -> None:
        redq = make_redq(alpha=FixedAlpha(0.1))
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = redq._preprocess_batch(batch, buffer, indices)
        returns = processed.returns.flatten()
        with torch.no_grad():
            td = torch.stack(
                [member_q(redq.critic, m, batch.obs, batch.act) - returns for m in range(ENSEMBLE)]
            )
        with policy_within_training_step(redq.policy):
            stats = redq._update_with_batch(processed)
        assert isinstance(stats, DDPGTrainingStats)
        assert stats.critic_loss == pytest.approx(float(td.pow(2).mean()), rel=1e-5)
        assert torch.allclose(processed.weight, td.mean(0), atol=1e-5)
        assert stats.alpha == pytest.approx(0.1) and stats.alpha_loss is None
        assert all(isinstance(v, float) for v in stats.get_loss_stats_dict().values())

    def test_prioritized_buffer_receives_td_errors(self) -> None:
        buffer = filled_buffer(PrioritizedReplayBuffer(32, alpha=0.6, beta=0.4))
        before = buffer.weight[np.arange(16)].copy()
        redq = make_redq()
        with policy_within_training_step(redq.policy):
            redq.update(buffer, 8)
        assert not np.allclose(buffer.weight[np.arange(16)], before)

    def test_critic_stays_trainable_after_the_actor_step(self) -> None:
        redq = make_redq()
        with policy_within_training_step(redq.policy):
            redq.update(filled_buffer(), 4)
        assert all(p.requires_grad for p in redq.critic.parameters())

    def test_auto_alpha_and_its_optimizer_are_checkpointed(self) -> None:
        redq = make_redq(alpha=AutoAlpha(-2.0, 0.0, sgd(0.1)))
        assert "alpha._log_alpha" in redq.state_dict()

    def test_nan_loss_raises(self) -> None:
        redq = make_redq()
        buffer = filled_buffer()
        buffer.rew[3] = np.nan
        with (
            pytest.raises(FloatingPointError, match="not finite"),
            policy_within_training_step(redq.policy),
        ):
            redq.update(buffer, 0)

    def test_a_critic_without_ensemble_dimension_is_refused(self) -> None:
        torch.manual_seed(0)
        single = ContinuousCritic(
            preprocess_net=Net(state_shape=OBS_DIM, action_shape=ACT_DIM, concat=True)
        )
        redq = REDQ(
            policy=REDQPolicy(actor=Actor(), action_space=SPACE),
            policy_optim=sgd(),
            critic=single,
            critic_optim=sgd(),
        )
        with (
            pytest.raises(ValueError, match=r"ensemble_size=10, batch_size, 1\), got \(16, 1\)"),
            policy_within_training_step(redq.policy),
        ):
            redq.update(filled_buffer(), 0)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"subset_size": 0}, "subset_size"),
            ({"subset_size": ENSEMBLE + 1}, "subset_size"),
            ({"target_mode": "max"}, "target_mode"),
            ({"actor_delay": 0}, "actor_delay"),
            ({"tau": 1.5}, "tau"),
            ({"gamma": -0.1}, "gamma"),
            ({"n_step_return_horizon": 0}, "n_step"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_redq(**kwargs)


def train_pendulum(
    seed: int, max_epochs: int, epoch_num_steps: int, stop_at: float | None
) -> tuple[InfoStats, TraceLog]:
    """REDQ (10 critics, subsets of 2, learned alpha) on Pendulum-v1 with 64x64 networks; returns
    the training result and the trace of the run."""
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
    linear = functools.partial(EnsembleLinear, 10)
    body = Net(
        state_shape=3, action_shape=1, hidden_sizes=[64, 64], concat=True, linear_layer=linear
    )
    algorithm = REDQ(
        policy=REDQPolicy(actor=actor, action_space=env.action_space),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=ContinuousCritic(preprocess_net=body, linear_layer=linear, flatten_input=False),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        ensemble_size=10,
        subset_size=2,
        actor_delay=UTD,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
    )
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 4), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    training_collector.reset()
    test_collector.reset()
    params = OffPolicyTrainerParams(
        training_collector=training_collector,
        test_collector=test_collector,
        max_epochs=max_epochs,
        epoch_num_steps=epoch_num_steps,
        collection_step_num_env_steps=8,
        test_step_num_episodes=10,
        batch_size=128,
        update_step_num_gradient_steps_per_sample=UTD,
        stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
        show_progress=False,
        verbose=False,
    )
    with TraceLoggerContext() as trace:
        result = algorithm.run_training(params)
    return result, trace.get_log()


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_redq_learns_pendulum() -> None:
    result, _ = train_pendulum(seed=0, max_epochs=MAX_EPOCHS, epoch_num_steps=1000, stop_at=-250.0)
    assert result.best_reward >= -250.0
    assert result.train_step <= MAX_EPOCHS * 1000


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_redq_training_is_deterministic(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    _, first = train_pendulum(seed=3, max_epochs=1, epoch_num_steps=100, stop_at=None)
    snapshot.check(first, "redq", create_reference_result=True)
    _, second = train_pendulum(seed=3, max_epochs=1, epoch_num_steps=100, stop_at=None)
    result = snapshot.check(second, "redq")
    assert result.success and result.first_difference is None
    assert len(first.filter_messages(required_messages=["update on"]).log_lines) >= 2
