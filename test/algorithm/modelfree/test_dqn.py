"""Tests of DiscreteQLearningPolicy and DQN: acting, exploration, masks, targets and learning."""

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.reinforce import SimpleLossTrainingStats
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
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step

NUM_ACTIONS = 3
OBS_DIM = 2


class QNet(nn.Module):
    """A small MLP following the ``(obs, state, info) -> (q_values, state)`` protocol."""

    def __init__(self, num_actions: int = NUM_ACTIONS) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(OBS_DIM, 8), nn.Tanh(), nn.Linear(8, num_actions))

    def forward(self, obs, state=None, info=None):
        return self.net(torch.as_tensor(obs, dtype=torch.float32)), state


class FixedQ(nn.Module):
    """Returns the given Q-values for every observation."""

    def __init__(self, q_values: list[float]) -> None:
        super().__init__()
        self.q = nn.Parameter(torch.tensor(q_values))

    def forward(self, obs, state=None, info=None):
        return self.q.expand(len(obs), -1), state


def make_policy(model: nn.Module | None = None, **kwargs) -> DiscreteQLearningPolicy:
    torch.manual_seed(0)
    return DiscreteQLearningPolicy(
        model=model or QNet(), action_space=gym.spaces.Discrete(NUM_ACTIONS), **kwargs
    )


def make_dqn(lr: float = 0.1, policy: DiscreteQLearningPolicy | None = None, **kwargs) -> DQN:
    return DQN(
        policy=policy or make_policy(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        **kwargs,
    )


def filled_buffer(buffer: ReplayBuffer | None = None, steps: int = 12) -> ReplayBuffer:
    """Transitions of episodes of length 4 (the last one terminated), rewards 1, 2, 3, ..."""
    buffer = buffer if buffer is not None else ReplayBuffer(32)
    for t in range(steps):
        buffer.add(
            Batch(
                obs=np.array([t, 1.0], dtype=np.float32),
                act=t % NUM_ACTIONS,
                rew=float(t + 1),
                terminated=t % 4 == 3,
                truncated=False,
                obs_next=np.array([t + 1, 1.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


def obs_batch(n: int = 4, mask: np.ndarray | None = None) -> Batch:
    obs = np.arange(2 * n, dtype=np.float32).reshape(n, OBS_DIM)
    if mask is not None:
        return Batch(obs=Batch(obs=obs, mask=mask), info=Batch())
    return Batch(obs=obs, info=Batch())


def update(algorithm: DQN, buffer: ReplayBuffer, sample_size: int | None = None):
    with policy_within_training_step(algorithm.policy):
        return algorithm.update(buffer, sample_size)


class TestPolicy:
    def test_forward_returns_logits_greedy_act_and_state(self) -> None:
        policy = make_policy(FixedQ([0.1, 0.7, 0.3]))
        result = policy(obs_batch(4))
        assert result.logits.shape == (4, NUM_ACTIONS)
        assert isinstance(result.act, np.ndarray)
        assert result.act.tolist() == [1, 1, 1, 1]
        assert result.state is None

    def test_mask_excludes_illegal_actions_but_keeps_raw_logits(self) -> None:
        policy = make_policy(FixedQ([0.1, 0.7, 0.3]))
        mask = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1]], dtype=bool)
        result = policy(obs_batch(3, mask=mask))
        assert result.act.tolist() == [2, 0, 2]
        assert torch.equal(result.logits[0], torch.tensor([0.1, 0.7, 0.3]))

    def test_compute_q_value_gives_illegal_actions_minus_infinity(self) -> None:
        policy = make_policy()
        logits = torch.tensor([[1.0, 5.0, 2.0]])
        q = policy.compute_q_value(logits, np.array([[True, False, True]]))
        assert q.tolist() == [[1.0, -np.inf, 2.0]]
        assert policy.compute_q_value(logits, None) is logits

    def test_random_exploration_never_picks_masked_actions(self) -> None:
        policy = make_policy(eps_training=1.0)
        np.random.seed(0)
        mask = np.zeros((500, NUM_ACTIONS), dtype=bool)
        mask[:, 1] = True
        mask[::2, 2] = True
        batch = obs_batch(500, mask=mask)
        with policy_within_training_step(policy):
            act = policy.add_exploration_noise(np.zeros(500, dtype=np.int64), batch)
        assert mask[np.arange(500), act].all()
        assert set(act[::2].tolist()) == {1, 2}

    def test_eps_training_applies_inside_a_training_step_only(self) -> None:
        policy = make_policy(eps_training=1.0, eps_inference=0.0)
        np.random.seed(1)
        greedy = np.zeros(200, dtype=np.int64)
        assert policy.add_exploration_noise(greedy, obs_batch(200)) is greedy
        with policy_within_training_step(policy):
            explored = policy.add_exploration_noise(greedy, obs_batch(200))
        assert set(explored.tolist()) == {0, 1, 2}
        assert greedy.tolist() == [0] * 200  # the input array is not modified

    def test_eps_inference_applies_outside_training_steps(self) -> None:
        policy = make_policy(eps_training=0.0)
        policy.set_eps_inference(0.5)
        np.random.seed(2)
        explored = policy.add_exploration_noise(np.zeros(1000, dtype=np.int64), obs_batch(1000))
        # half the actions are re-drawn, two thirds of those differ from 0
        assert 0.25 < np.mean(explored != 0) < 0.42
        policy.set_eps_training(0.25)
        assert policy.eps_training == 0.25

    @pytest.mark.parametrize("eps", [-0.1, 1.5])
    def test_bad_eps_is_rejected(self, eps: float) -> None:
        with pytest.raises(ValueError, match="eps_training"):
            make_policy(eps_training=eps)
        with pytest.raises(ValueError, match="eps_inference"):
            make_policy().set_eps_inference(eps)

    def test_wrong_number_of_actions_names_the_shapes(self) -> None:
        policy = make_policy(QNet(num_actions=5))
        with pytest.raises(ValueError, match=r"\(4, 5\).*Discrete\(3\).*\(batch_size, 3\)"):
            policy(obs_batch(4))

    def test_model_must_return_a_pair(self) -> None:
        class TensorOnly(QNet):
            def forward(self, obs, state=None, info=None):
                return super().forward(obs)[0]

        policy = make_policy(TensorOnly())
        with pytest.raises(TypeError, match=r"pair \(q_values, hidden_state\)"):
            policy(obs_batch(2))

    def test_model_output_is_the_raw_output_with_the_mask(self) -> None:
        policy = make_policy(FixedQ([3.0, 1.0, 2.0]))
        mask = np.array([[True, False, True]] * 2)
        logits, state, legal = policy._model_output(obs_batch(2, mask), state="h")
        # unmasked: masking is evaluate's (compute_q_value's) job
        np.testing.assert_array_equal(logits.detach().numpy(), [[3.0, 1.0, 2.0]] * 2)
        assert state == "h"
        assert legal is mask
        tensor_only = nn.Module()
        tensor_only.forward = lambda obs, state=None, info=None: torch.zeros(len(obs), 3)
        with pytest.raises(TypeError, match=r"pair \(q_values, hidden_state\)"):
            policy._model_output(obs_batch(2), model=tensor_only)

    def test_continuous_action_space_is_rejected(self) -> None:
        with pytest.raises(ValueError, match="Discrete"):
            DiscreteQLearningPolicy(model=QNet(), action_space=gym.spaces.Box(-1, 1, (2,)))

    def test_compute_action_for_one_observation(self) -> None:
        policy = make_policy(FixedQ([0.0, 0.0, 1.0]))
        assert int(policy.compute_action(np.zeros(OBS_DIM, dtype=np.float32))) == 2


def expected_targets(
    algorithm: DQN, batch: Batch, target_model: nn.Module, online_model: nn.Module
) -> torch.Tensor:
    """One-step double-Q targets computed naively, transition by transition."""
    targets = []
    with torch.no_grad():
        for obs_next, rew, terminated in zip(
            batch.obs_next, batch.rew, batch.terminated, strict=True
        ):
            q_online = online_model(obs_next[None])[0][0]
            q_target = target_model(obs_next[None])[0][0]
            value = q_target[int(q_online.argmax())]
            targets.append(rew + algorithm.gamma * (0.0 if terminated else float(value)))
    return torch.tensor(targets, dtype=torch.float32)


class TestUpdate:
    def test_update_refuses_outside_a_training_step(self) -> None:
        with pytest.raises(RuntimeError):
            make_dqn().update(filled_buffer(), 4)

    def test_double_q_targets_and_squared_loss_by_hand(self) -> None:
        dqn = make_dqn(target_update_freq=100, gamma=0.9)
        with torch.no_grad():  # make the target network differ from the online model
            for param in dqn.model_old.parameters():
                param.add_(0.3)
        target = copy.deepcopy(dqn.model_old)
        online = copy.deepcopy(dqn.policy.model)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = dqn._preprocess_batch(copy.deepcopy(batch), buffer, indices)
        expected = expected_targets(dqn, batch, target, online)
        assert torch.allclose(processed.returns.flatten(), expected, atol=1e-5)
        q = online(batch.obs)[0].gather(1, torch.as_tensor(batch.act).long()[:, None])[:, 0]
        expected_loss = float(((expected - q.detach()) ** 2).mean())
        with policy_within_training_step(dqn.policy):
            stats = dqn._update_with_batch(processed)
        assert isinstance(stats, SimpleLossTrainingStats)
        assert stats.loss == pytest.approx(expected_loss, rel=1e-5)
        assert torch.allclose(processed.weight, expected - q, atol=1e-5)

    def test_without_double_q_the_target_is_the_max(self) -> None:
        dqn = make_dqn(target_update_freq=1, is_double=False)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = dqn._preprocess_batch(batch, buffer, indices)
        with torch.no_grad():
            q_next = dqn.model_old(batch.obs_next)[0].max(dim=1).values
        expected = torch.as_tensor(batch.rew) + 0.99 * q_next * ~torch.as_tensor(batch.terminated)
        assert torch.allclose(processed.returns.flatten(), expected.float(), atol=1e-5)

    def test_n_step_returns_sum_rewards_until_the_episode_ends(self) -> None:
        dqn = make_dqn(policy=make_policy(FixedQ([0.0, 2.0, 1.0])), n_step_return_horizon=3)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        returns = dqn._preprocess_batch(batch, buffer, indices).returns.flatten()
        g = 0.99
        # step 0: 1 + 2g + 3g^2 + g^3 * 2; step 2: 3 + 4g (episode terminates at step 3)
        assert returns[0].item() == pytest.approx(1 + 2 * g + 3 * g**2 + 2 * g**3, rel=1e-5)
        assert returns[2].item() == pytest.approx(3 + 4 * g, rel=1e-5)
        assert returns[3].item() == pytest.approx(4.0)

    @pytest.mark.parametrize("is_double", [True, False])
    def test_targets_never_bootstrap_from_illegal_actions(self, is_double: bool) -> None:
        dqn = make_dqn(
            policy=make_policy(FixedQ([0.0, 2.0, 1.0])), target_update_freq=5, is_double=is_double
        )
        buffer = ReplayBuffer(8)
        for t in range(3):
            obs = Batch(obs=np.full(OBS_DIM, t, np.float32), mask=np.array([True, False, True]))
            buffer.add(
                Batch(obs=obs, act=0, rew=1.0, terminated=False, truncated=False, obs_next=obs)
            )
        batch, indices = buffer.sample(0)
        returns = dqn._preprocess_batch(batch, buffer, indices).returns.flatten()
        # the best legal action is 2 (Q = 1), not the illegal action 1 (Q = 2)
        assert torch.allclose(returns, torch.full((3,), 1.0 + 0.99 * 1.0))

    def test_huber_loss(self) -> None:
        dqn = make_dqn(huber_loss_delta=1.0)
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = dqn._preprocess_batch(batch, buffer, indices)
        with torch.no_grad():
            q = dqn.policy.model(batch.obs)[0]
        q = q.gather(1, torch.as_tensor(batch.act).long()[:, None])[:, 0]
        expected = F.huber_loss(q, processed.returns.flatten(), delta=1.0).item()
        with policy_within_training_step(dqn.policy):
            stats = dqn._update_with_batch(processed)
        assert stats.loss == pytest.approx(expected, rel=1e-5)

    def test_gradient_step_lowers_the_loss(self) -> None:
        dqn = make_dqn(lr=0.01)
        buffer = filled_buffer()
        losses = [update(dqn, buffer, 0).loss for _ in range(30)]
        assert losses[-1] < losses[0]

    def test_target_network_takes_the_model_weights_every_freq_updates(self) -> None:
        dqn = make_dqn(target_update_freq=3)
        buffer = filled_buffer()
        copied = []
        for _ in range(7):
            before = [p.detach().clone() for p in dqn.policy.model.parameters()]
            update(dqn, buffer, 4)
            copied.append(
                all(
                    torch.equal(old, target)
                    for old, target in zip(before, dqn.model_old.parameters(), strict=True)
                )
            )
        # the copy happens at the start of updates 0, 3, 6, before their gradient step
        assert copied == [True, False, False, True, False, False, True]
        assert not dqn.model_old.training

    def test_priorities_and_importance_weights(self) -> None:
        buffer = filled_buffer(PrioritizedReplayBuffer(32, alpha=0.6, beta=0.4))
        dqn = make_dqn(lr=0.0)
        before = buffer.weight[np.arange(12)].copy()
        update(dqn, buffer, 8)
        assert not np.allclose(buffer.weight[np.arange(12)], before)

    def test_importance_weights_scale_the_loss(self) -> None:
        dqn = make_dqn()
        buffer = filled_buffer()
        batch, indices = buffer.sample(0)
        processed = dqn._preprocess_batch(batch, buffer, indices)
        weighted = copy.deepcopy(processed)
        weighted.weight = np.full(len(batch), 0.5)
        state = copy.deepcopy(dqn.state_dict())
        with policy_within_training_step(dqn.policy):
            plain = dqn._update_with_batch(processed).loss
            dqn.load_state_dict(state)
            half = dqn._update_with_batch(weighted).loss
        assert half == pytest.approx(plain / 2, rel=1e-5)

    def test_nan_loss_raises(self) -> None:
        dqn = make_dqn()
        buffer = filled_buffer()
        buffer.rew[2] = np.nan
        with pytest.raises(FloatingPointError, match="loss"):
            update(dqn, buffer, 0)

    def test_empty_buffer_says_to_collect_first(self) -> None:
        # used to fail with an AttributeError about the missing obs_next
        with pytest.raises(ValueError, match=r"DQN\.update got an empty buffer: collect before"):
            update(make_dqn(), ReplayBuffer(8), 4)

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"gamma": 1.5}, "gamma"),
            ({"n_step_return_horizon": 0}, "n_step_return_horizon"),
            ({"target_update_freq": -1}, "target_update_freq"),
            ({"huber_loss_delta": 0.0}, "huber_loss_delta"),
        ],
    )
    def test_bad_arguments(self, kwargs: dict, match: str) -> None:
        with pytest.raises(ValueError, match=match):
            make_dqn(**kwargs)

    def test_state_dict_round_trip_includes_the_optimizer(self) -> None:
        dqn = make_dqn(target_update_freq=2)
        update(dqn, filled_buffer(), 4)
        state = dqn.state_dict()
        assert "_optimizers" in state
        clone = make_dqn(target_update_freq=2)
        clone.load_state_dict(state)
        for a, b in zip(clone.parameters(), dqn.parameters(), strict=True):
            assert torch.equal(a, b)

    def test_a_resumed_run_copies_the_target_network_when_it_was_due(self) -> None:
        # copies happen before updates 1, 4, 7, ...; a checkpoint after update 2 must not
        # make update 3 copy
        buffer = filled_buffer()
        dqn = make_dqn(target_update_freq=3)
        for _ in range(2):
            update(dqn, buffer, 4)
        state = dqn.state_dict()
        extras = state._metadata[""]["tianshou_extra_state"]  # type: ignore[attr-defined]
        assert extras["counters"]["_iter"].item() == 2
        resumed = make_dqn(target_update_freq=3)
        resumed.load_state_dict(state)
        target_before = [p.detach().clone() for p in resumed.model_old.parameters()]
        update(resumed, buffer, 4)
        assert all(
            torch.equal(a, b)
            for a, b in zip(target_before, resumed.model_old.parameters(), strict=True)
        )
        # the next update is the third since the last copy: it copies before its step
        model_before = [p.detach().clone() for p in resumed.policy.model.parameters()]
        update(resumed, buffer, 4)
        assert all(
            torch.equal(a, b)
            for a, b in zip(model_before, resumed.model_old.parameters(), strict=True)
        )

    def test_a_counter_this_algorithm_does_not_keep_is_rejected(self) -> None:
        state = make_dqn().state_dict()
        state["_counters._cnt"] = torch.tensor(1)
        with pytest.raises(RuntimeError, match="_cnt"):
            make_dqn().load_state_dict(state)


def train_cartpole(seed: int, max_epochs: int, stop_at: float | None) -> tuple[InfoStats, DQN]:
    """DQN on CartPole-v1 with 8 training envs; stops once the test return reaches ``stop_at``."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    task = "CartPole-v1"
    env = gym.make(task)
    training_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(8)])
    test_envs = DummyVectorEnv([lambda: gym.make(task) for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    net = Net(state_shape=4, action_shape=2, hidden_sizes=[128, 128, 128, 128])
    policy = DiscreteQLearningPolicy(model=net, action_space=env.action_space, eps_training=0.5)
    algorithm = DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=320,
    )
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 8), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    training_collector.reset()
    test_collector.reset()

    def decay_eps(epoch: int, env_step: int) -> None:
        policy.set_eps_training(max(0.05, 0.5 * (1 - env_step / 10000)))

    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=max_epochs,
            epoch_num_steps=1000,
            collection_step_num_env_steps=16,
            test_step_num_episodes=10,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.5,
            training_fn=decay_eps,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )
    return result, algorithm


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_dqn_learns_cartpole() -> None:
    result, _ = train_cartpole(seed=0, max_epochs=40, stop_at=195.0)
    assert result.best_reward >= 195.0
    assert result.train_step <= 40 * 1008


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_dqn_training_is_deterministic() -> None:
    _, first = train_cartpole(seed=3, max_epochs=1, stop_at=None)
    _, second = train_cartpole(seed=3, max_epochs=1, stop_at=None)
    first_state, second_state = first.state_dict(), second.state_dict()
    tensors = [key for key, value in first_state.items() if isinstance(value, torch.Tensor)]
    assert tensors
    for key in tensors:
        assert torch.equal(first_state[key], second_state[key]), key
