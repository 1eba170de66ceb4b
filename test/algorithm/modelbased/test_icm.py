"""Tests of the ICM wrappers: intrinsic reward and losses against a naive reference, reward
restoration, the wrapped update, bad input, and learning CartPole with DQN and PPO."""

import copy
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from test.algorithm.modelfree.cartpole_q_learning import (
    assert_training_repeats_its_trace,
    train_on_cartpole,
)
from tianshou.algorithm._training_stats import SimpleLossTrainingStats
from tianshou.algorithm.modelbased.icm import (
    ICMOffPolicyWrapper,
    ICMOnPolicyWrapper,
    ICMTrainingStats,
)
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy, ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, InfoStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLoggerContext
from tianshou.utils.net.common import MLP, Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic, IntrinsicCuriosityModule
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 2
NUM_ACTIONS = 3
FEATURE_DIM = 4
SPACE = gym.spaces.Discrete(NUM_ACTIONS)


def make_icm(action_dim: int = NUM_ACTIONS, obs_dim: int = OBS_DIM) -> IntrinsicCuriosityModule:
    """An ICM whose feature net, forward and inverse models are single linear layers."""
    torch.manual_seed(1)
    return IntrinsicCuriosityModule(
        feature_net=nn.Linear(obs_dim, FEATURE_DIM), feature_dim=FEATURE_DIM, action_dim=action_dim
    )


def make_dqn() -> DQN:
    torch.manual_seed(0)
    net = Net(state_shape=OBS_DIM, action_shape=NUM_ACTIONS, hidden_sizes=[8])
    return DQN(
        policy=DiscreteQLearningPolicy(model=net, action_space=SPACE),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.01),
        gamma=0.9,
    )


def make_ppo(space: gym.Space = SPACE) -> PPO:
    torch.manual_seed(0)
    if isinstance(space, gym.spaces.Box):
        actor = ContinuousActorProbabilistic(
            preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=[8]), action_shape=space.shape
        )
        policy: ProbabilisticActorPolicy = ProbabilisticActorPolicy(
            actor=actor,
            dist_fn=lambda loc_scale: torch.distributions.Independent(
                torch.distributions.Normal(*loc_scale), 1
            ),
            action_space=space,
        )
    else:
        actor = DiscreteActor(
            preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=[8]), action_shape=NUM_ACTIONS
        )
        policy = DiscreteActorPolicy(
            actor=actor, dist_fn=torch.distributions.Categorical, action_space=space
        )
    critic = DiscreteCritic(preprocess_net=Net(state_shape=OBS_DIM, hidden_sizes=[8]))
    return PPO(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=1e-3), gamma=0.9)


ICM_PARAMS = {"lr_scale": 0.5, "reward_scale": 0.1, "forward_loss_weight": 0.2}


def wrap_dqn(**kwargs: float) -> ICMOffPolicyWrapper:
    return ICMOffPolicyWrapper(
        wrapped_algorithm=make_dqn(),
        model=make_icm(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        **{**ICM_PARAMS, **kwargs},
    )


def wrap_ppo(**kwargs: float) -> ICMOnPolicyWrapper:
    return ICMOnPolicyWrapper(
        wrapped_algorithm=make_ppo(),
        model=make_icm(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        **{**ICM_PARAMS, **kwargs},
    )


def filled_buffer(steps: int = 10) -> ReplayBuffer:
    """Episodes of 5 steps (the last one terminated); obs ``[t, sin t]``, rewards ``t + 1``."""
    buffer = ReplayBuffer(32)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=np.array([t, np.sin(t)], dtype=np.float32),
                act=(t * 2) % NUM_ACTIONS,
                rew=float(t + 1),
                terminated=t % 5 == 4,
                truncated=False,
                obs_next=np.array([t + 1, np.sin(t + 1)], dtype=np.float32),
                info={},
            )
        )
    return buffer


def linear(module: nn.Module) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias of the only linear layer of ``module``, as float64 arrays."""
    (layer,) = [m for m in module.modules() if isinstance(m, nn.Linear)]
    return layer.weight.detach().double().numpy(), layer.bias.detach().double().numpy()


def naive_icm(
    icm: IntrinsicCuriosityModule, batch: Batch
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per transition, in float64: the forward error ``0.5 * ||phi_hat(s') - phi(s')||^2``, the
    inverse model's cross-entropy and its logits."""
    w_f, b_f = linear(icm.feature_net)
    w_fwd, b_fwd = linear(icm.forward_model)
    w_inv, b_inv = linear(icm.inverse_model)
    errors, cross_entropies, logits_rows = [], [], []
    for obs, act, obs_next in zip(batch.obs, batch.act, batch.obs_next, strict=True):
        phi1 = w_f @ np.asarray(obs, np.float64) + b_f
        phi2 = w_f @ np.asarray(obs_next, np.float64) + b_f
        one_hot = np.eye(NUM_ACTIONS)[int(act)]
        phi2_hat = w_fwd @ np.concatenate([phi1, one_hot]) + b_fwd
        errors.append(0.5 * np.sum((phi2_hat - phi2) ** 2))
        logits = w_inv @ np.concatenate([phi1, phi2]) + b_inv
        log_z = np.log(np.sum(np.exp(logits - logits.max()))) + logits.max()
        cross_entropies.append(log_z - logits[int(act)])
        logits_rows.append(logits)
    return np.array(errors), np.array(cross_entropies), np.array(logits_rows)


def naive_icm_loss(wrapper: ICMOffPolicyWrapper | ICMOnPolicyWrapper, batch: Batch) -> float:
    errors, cross_entropies, _ = naive_icm(wrapper.model, batch)
    weight = wrapper.forward_loss_weight
    return wrapper.lr_scale * ((1 - weight) * cross_entropies.mean() + weight * errors.mean())


class TestIntrinsicReward:
    @pytest.mark.parametrize("wrap", [wrap_dqn, wrap_ppo])
    def test_reward_gets_the_scaled_forward_error(self, wrap) -> None:
        wrapper = wrap(reward_scale=0.3)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        errors, _, logits = naive_icm(wrapper.model, batch)
        processed = wrapper._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        np.testing.assert_allclose(processed.rew, batch.rew + 0.3 * errors, rtol=1e-5)
        np.testing.assert_allclose(processed.icm.orig_rew, batch.rew)
        np.testing.assert_allclose(processed.icm.mse_loss.detach(), errors, rtol=1e-5)
        np.testing.assert_allclose(processed.icm.act_hat.detach(), logits, rtol=1e-5, atol=1e-6)
        assert errors.min() > 1e-3  # every transition gets a bonus

    def test_on_policy_returns_are_computed_from_the_augmented_rewards(self) -> None:
        wrapper = wrap_ppo(reward_scale=0.5)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        errors, _, _ = naive_icm(wrapper.model, batch)
        augmented = copy.deepcopy(batch)
        augmented.rew = batch.rew + 0.5 * errors
        expected = wrapper.wrapped_algorithm._preprocess_batch(augmented, buffer, indices)
        processed = wrapper._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        torch.testing.assert_close(processed.returns, expected.returns)
        torch.testing.assert_close(processed.adv, expected.adv)
        plain = wrapper.wrapped_algorithm._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        assert not torch.allclose(processed.returns, plain.returns)

    def test_n_step_targets_read_the_buffer_rewards(self) -> None:
        """DQN's targets come from ``buffer.rew``, which the ICM leaves alone (as published)."""
        wrapper = wrap_dqn(reward_scale=10.0)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = wrapper._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        plain = wrapper.wrapped_algorithm._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        torch.testing.assert_close(processed.returns, plain.returns)

    @pytest.mark.parametrize("wrap", [wrap_dqn, wrap_ppo])
    def test_postprocessing_restores_the_rewards(self, wrap) -> None:
        wrapper = wrap()
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        original = np.array(batch.rew, copy=True)
        processed = wrapper._preprocess_batch(batch, buffer, indices)
        assert not np.allclose(processed.rew, original)
        wrapper._postprocess_batch(processed, buffer, indices)
        np.testing.assert_array_equal(processed.rew, original)
        assert "icm" not in processed
        np.testing.assert_array_equal(buffer.rew[: len(buffer)], np.arange(1.0, 11.0))

    def test_zero_reward_scale_leaves_the_rewards(self) -> None:
        wrapper = wrap_ppo(reward_scale=0.0)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = wrapper._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        np.testing.assert_array_equal(processed.rew, batch.rew)


class TestUpdate:
    @pytest.mark.parametrize("wrap", [wrap_dqn, wrap_ppo])
    def test_losses_and_sgd_step_match_the_naive_reference(self, wrap) -> None:
        wrapper = wrap(forward_loss_weight=0.3, lr_scale=0.7)
        buffer = filled_buffer()
        batch, _ = buffer.sample(0)
        errors, cross_entropies, _ = naive_icm(wrapper.model, batch)
        expected_loss = naive_icm_loss(wrapper, batch)
        # the SGD step (lr 0.1) moves each parameter by -0.1 * d(loss)/d(param)
        reference = copy.deepcopy(wrapper.model)
        mse, act_hat = reference(batch.obs, batch.act, batch.obs_next)
        ce = nn.functional.cross_entropy(act_hat, torch.as_tensor(batch.act).long())
        (0.7 * (0.7 * ce + 0.3 * mse.mean())).backward()
        expected_params = [p.detach() - 0.1 * p.grad for p in reference.parameters()]
        with policy_within_training_step(wrapper.policy):
            stats = (
                wrapper.update(buffer, 0)
                if isinstance(wrapper, ICMOffPolicyWrapper)
                else wrapper.update(buffer, batch_size=None, repeat=1)
            )
        assert isinstance(stats, ICMTrainingStats)
        assert stats.icm_forward_loss == pytest.approx(errors.mean(), rel=1e-5)
        assert stats.icm_inverse_loss == pytest.approx(cross_entropies.mean(), rel=1e-5)
        assert stats.icm_loss == pytest.approx(expected_loss, rel=1e-5)
        for param, expected in zip(wrapper.model.parameters(), expected_params, strict=True):
            torch.testing.assert_close(param.detach(), expected)

    def test_off_policy_wrapped_update_runs_and_reports_its_loss(self) -> None:
        wrapper = wrap_dqn()
        before = [p.detach().clone() for p in wrapper.policy.model.parameters()]
        with policy_within_training_step(wrapper.policy):
            stats = wrapper.update(filled_buffer(), 6)
        assert isinstance(stats.wrapped_stats, SimpleLossTrainingStats)
        assert stats.loss == stats.wrapped_stats.loss > 0
        losses = stats.get_loss_stats_dict()
        assert {"loss", "icm_loss", "icm_forward_loss", "icm_inverse_loss"} <= losses.keys()
        after = list(wrapper.policy.model.parameters())
        assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
        assert stats.train_time > 0

    def test_on_policy_wrapped_update_runs_every_pass(self) -> None:
        wrapper = wrap_ppo()
        actor_before = [p.detach().clone() for p in wrapper.policy.parameters()]
        with policy_within_training_step(wrapper.policy):
            stats = wrapper.update(filled_buffer(), batch_size=4, repeat=2)
        assert stats.gradient_steps == 4  # 10 rows in minibatches of 4 (last merged) x 2 passes
        assert "vf_loss" in stats.get_loss_stats_dict()
        actor_after = list(wrapper.policy.parameters())
        assert any(not torch.equal(b, a) for b, a in zip(actor_before, actor_after, strict=True))

    def test_icm_learns_to_predict_its_transitions(self) -> None:
        wrapper = wrap_ppo()
        buffer = filled_buffer()
        with policy_within_training_step(wrapper.policy):
            losses = [wrapper.update(buffer, None, 1).icm_loss for _ in range(30)]
        assert losses[-1] < 0.5 * losses[0]

    def test_checkpoint_holds_both_optimizers_and_round_trips(self) -> None:
        wrapper = wrap_dqn()
        with policy_within_training_step(wrapper.policy):
            wrapper.update(filled_buffer(), 6)
        state = wrapper.state_dict()
        assert len(state["_optimizers"]) == 1
        assert len(state["wrapped_algorithm._optimizers"]) == 1
        fresh = wrap_dqn()
        fresh.load_state_dict(state)
        for key, value in fresh.state_dict().items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, state[key]), key

    def test_checkpoint_holds_the_wrapped_algorithm_s_running_statistics(self) -> None:
        wrapper = wrap_ppo()
        wrapper.wrapped_algorithm.ret_rms.update(np.array([1.0, 2.0, 6.0]))
        state = wrapper.state_dict()
        metadata = state._metadata["wrapped_algorithm"]  # type: ignore[attr-defined]
        assert metadata["tianshou_extra_state"]["running_stats"]["ret_rms"]["count"].item() == 3
        fresh = wrap_ppo()
        fresh.load_state_dict(state)
        restored = fresh.wrapped_algorithm.ret_rms
        assert restored.count == 3
        np.testing.assert_allclose(restored.var, np.var([1.0, 2.0, 6.0]))


class TestBadInput:
    def test_continuous_action_space_is_rejected(self) -> None:
        with pytest.raises(ValueError, match=r"discrete actions.*Box"):
            ICMOnPolicyWrapper(
                wrapped_algorithm=make_ppo(gym.spaces.Box(-1, 1, (NUM_ACTIONS,))),
                model=make_icm(),
                optim=AdamOptimizerFactory(),
                **ICM_PARAMS,
            )

    def test_action_count_must_match_the_space(self) -> None:
        with pytest.raises(ValueError, match=r"predicts 5 actions.*action_dim=3"):
            ICMOffPolicyWrapper(
                wrapped_algorithm=make_dqn(),
                model=make_icm(action_dim=5),
                optim=AdamOptimizerFactory(),
                **ICM_PARAMS,
            )

    def test_model_must_be_an_icm(self) -> None:
        with pytest.raises(TypeError, match="IntrinsicCuriosityModule, got MLP"):
            ICMOffPolicyWrapper(
                wrapped_algorithm=make_dqn(),
                model=MLP(input_dim=2, output_dim=2),  # type: ignore[arg-type]
                optim=AdamOptimizerFactory(),
                **ICM_PARAMS,
            )

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"lr_scale": -1.0}, "lr_scale must be non-negative"),
            ({"reward_scale": -0.1}, "reward_scale must be non-negative"),
            ({"forward_loss_weight": 1.5}, r"forward_loss_weight must be in \[0, 1\]"),
        ],
    )
    def test_invalid_scales(self, kwargs: dict[str, float], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            wrap_ppo(**kwargs)

    def test_vector_rewards_are_rejected(self) -> None:
        wrapper = wrap_ppo()
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        batch.rew = np.ones((len(batch), 2))
        with pytest.raises(ValueError, match=r"scalar rewards of shape \(10,\).*\(10, 2\)"):
            wrapper._preprocess_batch(batch, buffer, indices)


# -- learning ------------------------------------------------------------------------------------

CARTPOLE_ICM = {"lr_scale": 1.0, "reward_scale": 0.01, "forward_loss_weight": 0.2}


def cartpole_icm(hidden: int) -> IntrinsicCuriosityModule:
    """The CartPole ICM: a one-hidden-layer feature net, one-hidden-layer forward and inverse
    models (the published CartPole configuration, smaller)."""
    feature_net = MLP(input_dim=4, output_dim=hidden, hidden_sizes=[hidden])
    return IntrinsicCuriosityModule(
        feature_net=feature_net, feature_dim=hidden, action_dim=2, hidden_sizes=[hidden]
    )


def build_dqn_icm() -> ICMOffPolicyWrapper:
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[64, 64])
    policy = DiscreteQLearningPolicy(model=net, action_space=gym.spaces.Discrete(2))
    dqn = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=320,
    )
    return ICMOffPolicyWrapper(
        wrapped_algorithm=dqn,
        model=cartpole_icm(32),
        optim=AdamOptimizerFactory(lr=1e-3),
        **CARTPOLE_ICM,
    )


def train_ppo_icm(seed: int, max_epochs: int, stop_at: float | None) -> InfoStats:
    """PPO+ICM on CartPole-v1: 8 envs, 1024 env steps per epoch and per update (10 passes in
    minibatches of 128); stops once the mean return of 10 test episodes reaches ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    space = gym.spaces.Discrete(2)
    actor = DiscreteActor(preprocess_net=Net(state_shape=4, hidden_sizes=[64, 64]), action_shape=2)
    critic = DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=[64, 64]))
    ppo = PPO(
        policy=DiscreteActorPolicy(
            actor=actor, dist_fn=torch.distributions.Categorical, action_space=space
        ),
        critic=critic,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.99,
        max_grad_norm=0.5,
    )
    algorithm = ICMOnPolicyWrapper(
        wrapped_algorithm=ppo,
        model=cartpole_icm(32),
        optim=AdamOptimizerFactory(lr=1e-3),
        **CARTPOLE_ICM,
    )
    return algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(algorithm, training_envs, VectorReplayBuffer(1024, 8)),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=1024,
            collection_step_num_env_steps=1024,
            update_step_num_repetitions=10,
            batch_size=128,
            test_step_num_episodes=10,
            stop_fn=None if stop_at is None else (lambda mean_return: mean_return >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_dqn_with_icm_learns_cartpole() -> None:
    """At most 10 epochs of 1000 env steps (half a gradient step per env step)."""
    result = train_on_cartpole(
        build_dqn_icm, seed=0, max_epochs=10, epoch_num_steps=1000, stop_at=195.0
    )
    assert result.best_reward >= 195.0


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_ppo_with_icm_learns_cartpole() -> None:
    """At most 20 epochs of 1024 env steps."""
    result = train_ppo_icm(seed=0, max_epochs=20, stop_at=195.0)
    assert result.best_reward >= 195.0


@pytest.mark.usefixtures("one_thread")
def test_dqn_with_icm_training_repeats_its_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(build_dqn_icm, "dqn_icm", tmp_path)


@pytest.mark.usefixtures("one_thread")
def test_ppo_with_icm_training_repeats_its_trace(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=str(tmp_path))
    traces = []
    for _ in range(2):
        with TraceLoggerContext() as trace:
            train_ppo_icm(seed=3, max_epochs=1, stop_at=None)
        traces.append(trace.get_log())
    snapshot.check(traces[0], "ppo_icm", create_reference_result=True)
    result = snapshot.check(traces[1], "ppo_icm")
    assert result.success and result.first_difference is None
    assert len(traces[0].log_lines) > 3
