"""Tests of PPO: surrogate clipping, dual clip, value clip, losses, and learning on gym tasks."""

import numpy as np
import pytest
import torch
from torch.distributions import Independent, Normal

from test.algorithm.modelfree.test_a2c import ValueNet
from test.algorithm.modelfree.test_reinforce import (
    continuous_policy,
    discrete_policy,
    episode_buffer,
)
from tianshou.algorithm.modelfree.a2c import A2C, A2CTrainingStats
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.optim import TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step


def make_ppo(lr: float = 0.0, policy=None, **kwargs) -> PPO:
    torch.manual_seed(0)
    return PPO(
        policy=policy or discrete_policy(),
        critic=ValueNet(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        **kwargs,
    )


class TestSurrogate:
    def test_clipped_surrogate_by_hand(self) -> None:
        ppo = make_ppo(eps_clip=0.2)
        ratio = torch.tensor([0.5, 1.0, 1.5, 0.5])
        adv = torch.tensor([1.0, -1.0, 2.0, -1.0])
        # min(r * A, clip(r) * A): [min(.5, .8), -1, min(3, 2.4), min(-.5, -.8)]
        expected = torch.tensor([0.5, -1.0, 2.4, -0.8])
        assert torch.allclose(ppo.clipped_surrogate(ratio, adv), expected)

    def test_dual_clip_bounds_negative_advantages(self) -> None:
        ppo = make_ppo(eps_clip=0.2, dual_clip=3.0)
        ratio = torch.tensor([5.0, 5.0, 0.5])
        adv = torch.tensor([-1.0, 1.0, -1.0])
        # ratio 5, A = -1: min(-5, -1.2) = -5, raised to 3 * A = -3; positive A is untouched
        expected = torch.tensor([-3.0, 1.2, -0.8])
        assert torch.allclose(ppo.clipped_surrogate(ratio, adv), expected)

    def test_no_gradient_beyond_the_clip_range(self) -> None:
        ppo = make_ppo(eps_clip=0.2)
        ratio = torch.tensor([1.5, 0.5, 1.1], requires_grad=True)
        adv = torch.tensor([1.0, -1.0, 1.0])
        ppo.clipped_surrogate(ratio, adv).sum().backward()
        assert ratio.grad is not None
        assert ratio.grad.tolist() == [0.0, 0.0, 1.0]

    def test_value_clip_takes_the_pessimistic_error(self) -> None:
        ppo = make_ppo(eps_clip=0.2, value_clip=True)
        value = torch.tensor([1.0, 0.0])
        old = torch.tensor([0.0, 0.0])
        returns = torch.tensor([0.0, 1.0])
        # clipped values [0.2, 0.0]: errors max((1)^2, (0.2)^2) = 1, max(1, 1) = 1
        assert ppo.value_loss(value, old, returns).item() == pytest.approx(1.0)
        returns = torch.tensor([2.0, 0.0])
        # value 1 -> error 1; clipped 0.2 -> error 3.24: the larger one counts
        assert ppo.value_loss(value, old, returns).item() == pytest.approx((3.24 + 0.0) / 2)
        unclipped = make_ppo(value_clip=False)
        assert unclipped.value_loss(value, old, returns).item() == pytest.approx(0.5)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [({"dual_clip": 1.0}, "dual_clip"), ({"eps_clip": 0.0}, "eps_clip")],
    )
    def test_invalid_clip_settings(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            make_ppo(**kwargs)


class TestPPOUpdate:
    def test_first_step_loss_matches_hand_computation(self) -> None:
        ppo = make_ppo(
            advantage_normalization=False, vf_coef=0.5, ent_coef=0.01, gamma=0.9, gae_lambda=1.0
        )
        buffer = episode_buffer([1.0, -1.0, 2.0], terminated_at=[2])
        batch, _ = buffer.sample(0)
        with torch.no_grad():
            v_s = ppo.critic(batch.obs).flatten()
            entropy = ppo.policy(batch).dist.entropy().mean()
        returns = torch.tensor([1.0 - 0.9 + 0.81 * 2.0, -1.0 + 0.9 * 2.0, 2.0])
        adv = returns - v_s
        # ratio is exactly 1 on the first step, so the surrogate is the mean advantage
        clip_loss = -adv.mean()
        vf_loss = (returns - v_s).pow(2).mean()
        with policy_within_training_step(ppo.policy):
            stats = ppo.update(buffer, batch_size=None, repeat=1)
        assert isinstance(stats, A2CTrainingStats)
        assert stats.actor_loss.mean == pytest.approx(clip_loss.item(), rel=1e-5)
        assert stats.vf_loss.mean == pytest.approx(vf_loss.item(), rel=1e-5)
        assert stats.ent_loss.mean == pytest.approx(entropy.item(), rel=1e-5)
        total = clip_loss + 0.5 * vf_loss - 0.01 * entropy
        assert stats.loss.mean == pytest.approx(total.item(), rel=1e-5)

    def test_advantage_normalization_centres_the_first_surrogate(self) -> None:
        ppo = make_ppo(advantage_normalization=True)
        buffer = episode_buffer([1.0, -1.0, 2.0, 0.5], terminated_at=[3])
        with policy_within_training_step(ppo.policy):
            stats = ppo.update(buffer, batch_size=None, repeat=1)
        assert stats.actor_loss.mean == pytest.approx(0.0, abs=1e-6)

    def test_old_log_probs_are_stored(self) -> None:
        ppo = make_ppo(max_batchsize=2)
        buffer = episode_buffer([1.0, 0.0, 1.0, 0.0, 1.0], terminated_at=[4])
        batch, indices = buffer.sample(0)
        out = ppo._preprocess_batch(batch, buffer, indices)
        with torch.no_grad():
            expected = ppo.policy(out).dist.log_prob(out.act)
        assert out.logp_old.shape == (5,)
        assert torch.allclose(out.logp_old, expected)

    def test_ratio_clipping_limits_policy_drift(self) -> None:
        buffer = ReplayBuffer(64)
        for t in range(48):
            buffer.add(
                Batch(
                    obs=np.array([1.0, 0.0], dtype=np.float32),
                    act=t % 3,
                    rew=float(t % 3 == 0),
                    terminated=True,
                    truncated=False,
                    obs_next=np.zeros(2, dtype=np.float32),
                    info={},
                )
            )
        obs = Batch(obs=np.array([[1.0, 0.0]], dtype=np.float32), info={})

        def drift(algorithm: A2C) -> float:
            # probability ratio of the rewarded action after many passes over one batch
            before = algorithm.policy(obs).logits[0, 0].item()
            with policy_within_training_step(algorithm.policy):
                algorithm.update(buffer, batch_size=None, repeat=50)
            return algorithm.policy(obs).logits[0, 0].item() / before

        clipped = drift(make_ppo(lr=0.2, eps_clip=0.1, ent_coef=0.0, vf_coef=0.0))
        unclipped = drift(
            A2C(
                policy=discrete_policy(),
                critic=ValueNet(),
                optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.2),
                ent_coef=0.0,
                vf_coef=0.0,
            )
        )
        assert 1.0 < clipped < 1.25
        assert unclipped > 2.0

    def test_recompute_advantage_runs_every_pass(self) -> None:
        ppo = make_ppo(lr=0.1, recompute_advantage=True)
        buffer = episode_buffer([1.0, 0.0, 2.0, 1.0], terminated_at=[1, 3])
        calls = []
        original = ppo._add_returns_and_advantages

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        ppo._add_returns_and_advantages = counting  # type: ignore[method-assign]
        with policy_within_training_step(ppo.policy):
            stats = ppo.update(buffer, batch_size=2, repeat=3)
        assert len(calls) == 3
        assert stats.gradient_steps == 6

    def test_continuous_actions(self) -> None:
        ppo = make_ppo(lr=0.01, policy=continuous_policy(), dual_clip=2.0, value_clip=True)
        buffer = ReplayBuffer(16)
        for t in range(6):
            buffer.add(
                Batch(
                    obs=np.array([t, 1.0], dtype=np.float32),
                    act=np.array([0.1 * t, -0.2], dtype=np.float32),
                    rew=float(t),
                    terminated=False,
                    truncated=t == 5,
                    obs_next=np.array([t + 1, 1.0], dtype=np.float32),
                    info={},
                )
            )
        with policy_within_training_step(ppo.policy):
            stats = ppo.update(buffer, batch_size=3, repeat=2)
        assert stats.gradient_steps == 4
        assert np.isfinite(stats.loss.mean)

    def test_empty_buffer_is_a_clear_error(self) -> None:
        ppo = make_ppo()
        with (
            policy_within_training_step(ppo.policy),
            pytest.raises(ValueError, match="empty buffer"),
        ):
            ppo.update(ReplayBuffer(8), batch_size=None, repeat=1)

    def test_loss_stats_dict_reports_summary_means(self) -> None:
        ppo = make_ppo(lr=0.1)
        buffer = episode_buffer([1.0, 0.0, 2.0, 1.0], terminated_at=[1, 3])
        with policy_within_training_step(ppo.policy):
            stats = ppo.update(buffer, batch_size=2, repeat=2)
        losses = stats.get_loss_stats_dict()
        assert losses["loss"] == stats.loss.mean
        assert losses["vf_loss"] == stats.vf_loss.mean

    def test_nan_loss_is_a_clear_error(self) -> None:
        ppo = make_ppo(lr=0.1)
        buffer = episode_buffer([1.0, float("nan"), 0.0], terminated_at=[2])
        with (
            policy_within_training_step(ppo.policy),
            pytest.raises(FloatingPointError, match=r"not finite \(loss=nan, clip_loss="),
        ):
            ppo.update(buffer, batch_size=None, repeat=1)


# -- learning ------------------------------------------------------------------------------------


def train_ppo(
    task: str,
    seed: int,
    threshold: float | None,
    max_epochs: int,
    num_envs: int = 8,
) -> tuple[PPO, float]:
    """Train PPO on ``task`` with the library's nets and trainer; return it and its best reward.

    :param threshold: stop once the mean test return reaches it (None: run all epochs).
    """
    import gymnasium as gym

    from tianshou.algorithm.modelfree.reinforce import (
        DiscreteActorPolicy,
        ProbabilisticActorPolicy,
    )
    from tianshou.algorithm.optim import AdamOptimizerFactory
    from tianshou.data import Collector, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.trainer import OnPolicyTrainerParams
    from tianshou.utils.net.common import Net
    from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
    from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

    np.random.seed(seed)
    torch.manual_seed(seed)
    env = gym.make(task)
    obs_shape = env.observation_space.shape
    training_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(num_envs)])
    test_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1000)

    def net() -> Net:
        return Net(state_shape=obs_shape, hidden_sizes=[64, 64], activation=torch.nn.Tanh)

    policy: ProbabilisticActorPolicy
    if isinstance(env.action_space, gym.spaces.Discrete):
        actor = DiscreteActor(preprocess_net=net(), action_shape=env.action_space.n)
        critic: torch.nn.Module = DiscreteCritic(preprocess_net=net())
        policy = DiscreteActorPolicy(
            actor=actor,
            dist_fn=torch.distributions.Categorical,
            action_space=env.action_space,
            deterministic_eval=True,
        )
        gamma, ent_coef, return_scaling = 0.99, 0.01, False
    else:
        actor = ContinuousActorProbabilistic(
            preprocess_net=net(), action_shape=env.action_space.shape, unbounded=True
        )
        critic = ContinuousCritic(preprocess_net=net())
        policy = ProbabilisticActorPolicy(
            actor=actor,
            dist_fn=lambda loc_scale: Independent(Normal(*loc_scale), 1),
            action_space=env.action_space,
            deterministic_eval=True,
        )
        gamma, ent_coef, return_scaling = 0.95, 0.0, True
    algorithm = PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=gamma,
        gae_lambda=0.95,
        ent_coef=ent_coef,
        max_grad_norm=0.5,
        return_scaling=return_scaling,
    )
    steps_per_collect = 2048
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(
                algorithm,
                training_envs,
                VectorReplayBuffer(steps_per_collect + num_envs, num_envs),
            ),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=steps_per_collect,
            collection_step_num_env_steps=steps_per_collect,
            update_step_num_repetitions=10,
            batch_size=256,
            test_step_num_episodes=10,
            stop_fn=None if threshold is None else (lambda mean_return: mean_return >= threshold),
            verbose=False,
            show_progress=False,
        )
    )
    return algorithm, result.best_reward


@pytest.fixture
def single_thread():
    """Learning runs are timed and compared on one core; restore the caller's setting after."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.mark.slow
@pytest.mark.usefixtures("single_thread")
def test_ppo_learns_cartpole() -> None:
    _, best = train_ppo("CartPole-v1", seed=0, threshold=195.0, max_epochs=25)
    assert best >= 195.0


@pytest.mark.slow
@pytest.mark.usefixtures("single_thread")
def test_ppo_learns_pendulum() -> None:
    _, best = train_ppo("Pendulum-v1", seed=0, threshold=-250.0, max_epochs=40)
    assert best >= -250.0


@pytest.mark.slow
@pytest.mark.usefixtures("single_thread")
def test_ppo_training_is_deterministic() -> None:
    first, first_best = train_ppo("Pendulum-v1", seed=3, threshold=None, max_epochs=2)
    second, second_best = train_ppo("Pendulum-v1", seed=3, threshold=None, max_epochs=2)
    assert first_best == second_best
    first_state, second_state = first.state_dict(), second.state_dict()
    params = [key for key in first_state if key != "_optimizers"]
    assert params
    for key in params:
        assert torch.equal(first_state[key], second_state[key]), key
