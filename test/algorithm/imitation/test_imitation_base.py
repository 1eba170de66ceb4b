"""Tests of ImitationPolicy and the behaviour-cloning learners: acting, the loss, updates and
cloning a scripted CartPole expert from a fixed data set."""

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from tianshou.algorithm import OffPolicyImitationLearning as ReexportedOffPolicyImitationLearning
from tianshou.algorithm.algorithm_base import Policy, PolicyState
from tianshou.algorithm.imitation.imitation_base import (
    ImitationPolicy,
    ImitationTrainingStats,
    OfflineImitationLearning,
    OffPolicyImitationLearning,
)
from tianshou.algorithm.modelfree.a2c import A2C
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.modelfree.sac import SAC, AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, InfoStats, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OfflineTrainerParams, OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLoggerContext
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
NUM_ACTIONS = 4
ACT_DIM = 2


class Fixed(nn.Module):
    """Returns the given output row for every observation, as a trainable parameter."""

    def __init__(self, row: list[float]) -> None:
        super().__init__()
        self.row = nn.Parameter(torch.tensor(row))

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> tuple[torch.Tensor, Any]:
        return self.row.expand(len(obs), -1), state


class BareOutput(nn.Module):
    """Breaks the actor protocol: returns the output without the state."""

    def forward(self, obs: Any, state: Any = None, info: Any = None) -> torch.Tensor:
        return torch.zeros(len(obs), NUM_ACTIONS)


def discrete_policy(actor: nn.Module | None = None) -> ImitationPolicy:
    torch.manual_seed(0)
    return ImitationPolicy(
        actor=actor or Net(state_shape=OBS_DIM, action_shape=NUM_ACTIONS, hidden_sizes=[16]),
        action_space=gym.spaces.Discrete(NUM_ACTIONS),
    )


def continuous_policy(actor: nn.Module | None = None, **kwargs: Any) -> ImitationPolicy:
    torch.manual_seed(0)
    return ImitationPolicy(
        actor=actor or Net(state_shape=OBS_DIM, action_shape=ACT_DIM, hidden_sizes=[16]),
        action_space=gym.spaces.Box(-2.0, 2.0, shape=(ACT_DIM,)),
        **kwargs,
    )


def demo_batch(discrete: bool, size: int = 32) -> Batch:
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(size, OBS_DIM)).astype(np.float32)
    if discrete:
        act = rng.integers(NUM_ACTIONS, size=size)
    else:
        act = rng.uniform(-1, 1, size=(size, ACT_DIM)).astype(np.float32)
    return Batch(obs=obs, act=act, info=Batch())


def algorithm_of(policy: ImitationPolicy, offline: bool, lr: float = 1e-2) -> Any:
    cls = OfflineImitationLearning if offline else OffPolicyImitationLearning
    return cls(policy=policy, optim=AdamOptimizerFactory(lr=lr))


class TestImitationPolicy:
    def test_discrete_act_is_the_argmax_and_logits_are_kept(self) -> None:
        policy = discrete_policy(Fixed([0.1, 2.0, -1.0, 0.5]))
        out = policy(Batch(obs=np.zeros((3, OBS_DIM)), info=Batch()))
        assert out.act.tolist() == [1, 1, 1]
        assert torch.equal(out.logits, torch.tensor([[0.1, 2.0, -1.0, 0.5]] * 3))

    def test_continuous_act_is_the_actor_output(self) -> None:
        policy = continuous_policy(Fixed([0.25, -3.0]))
        out = policy(Batch(obs=np.zeros((2, OBS_DIM)), info=Batch()))
        assert torch.equal(out.act, torch.tensor([[0.25, -3.0]] * 2))
        assert out.act.requires_grad

    def test_continuous_actions_are_clipped_then_scaled(self) -> None:
        policy = continuous_policy(
            Fixed([0.25, -3.0]), action_scaling=True, action_bound_method="clip"
        )
        out = policy(Batch(obs=np.zeros((1, OBS_DIM)), info=Batch()))
        np.testing.assert_allclose(policy.map_action(out.act), [[0.5, -2.0]])

    def test_tanh_bounding(self) -> None:
        policy = continuous_policy(Fixed([0.5, -3.0]), action_bound_method="tanh")
        out = policy(Batch(obs=np.zeros((1, OBS_DIM)), info=Batch()))
        np.testing.assert_allclose(policy.map_action(out.act), [np.tanh([0.5, -3.0])], rtol=1e-6)

    def test_compute_action_for_one_observation(self) -> None:
        policy = discrete_policy(Fixed([0.0, 0.0, 3.0, 0.0]))
        assert policy.compute_action(np.zeros(OBS_DIM)) == 2

    @pytest.mark.parametrize("space", [gym.spaces.MultiDiscrete([2, 3]), gym.spaces.MultiBinary(2)])
    def test_other_action_spaces_are_rejected(self, space: gym.Space) -> None:
        with pytest.raises(ValueError, match="needs a Box or Discrete action space"):
            ImitationPolicy(actor=Fixed([0.0, 0.0]), action_space=space)

    def test_actor_must_return_a_pair(self) -> None:
        policy = discrete_policy(BareOutput())
        with pytest.raises(TypeError, match="must return \\(output, state\\)"):
            policy(Batch(obs=torch.zeros(2, OBS_DIM), info=Batch()))


class TestImitationLoss:
    @pytest.mark.parametrize("offline", [False, True])
    def test_discrete_loss_is_the_cross_entropy_by_hand(self, offline: bool) -> None:
        logits = [1.0, -0.5, 2.0, 0.0]
        algorithm = algorithm_of(discrete_policy(Fixed(logits)), offline)
        batch = Batch(obs=np.zeros((2, OBS_DIM)), act=np.array([2, 1]), info=Batch())
        log_z = np.log(np.sum(np.exp(logits)))
        expected = np.mean([log_z - logits[2], log_z - logits[1]])
        loss = algorithm._imitation_loss(batch)
        assert loss.item() == pytest.approx(expected, rel=1e-6)

    @pytest.mark.parametrize("offline", [False, True])
    def test_continuous_loss_is_the_mean_squared_error_by_hand(self, offline: bool) -> None:
        algorithm = algorithm_of(continuous_policy(Fixed([0.5, -1.0])), offline)
        batch = Batch(
            obs=np.zeros((2, OBS_DIM)), act=np.array([[0.0, 0.0], [1.5, 1.0]]), info=Batch()
        )
        expected = np.mean([0.25, 1.0, 1.0, 4.0])
        assert algorithm._imitation_loss(batch).item() == pytest.approx(expected, rel=1e-6)

    def test_continuous_loss_uses_the_raw_unscaled_action(self) -> None:
        policy = continuous_policy(Fixed([0.5, -1.0]), action_scaling=True)
        algorithm = algorithm_of(policy, offline=True)
        batch = Batch(obs=np.zeros((1, OBS_DIM)), act=np.array([[0.5, -1.0]]), info=Batch())
        assert algorithm._imitation_loss(batch).item() == 0.0

    def test_action_shape_mismatch_names_both_shapes(self) -> None:
        algorithm = algorithm_of(continuous_policy(), offline=True)
        batch = Batch(obs=np.zeros((2, OBS_DIM)), act=np.zeros((2, 3)), info=Batch())
        with pytest.raises(ValueError, match=r"\(2, 3\).*\(2, 2\)"):
            algorithm._imitation_loss(batch)


class TestUpdate:
    @pytest.mark.parametrize("offline", [False, True])
    @pytest.mark.parametrize("discrete", [False, True])
    def test_gradient_step_changes_parameters_and_lowers_the_loss(
        self, offline: bool, discrete: bool
    ) -> None:
        policy = discrete_policy() if discrete else continuous_policy()
        algorithm = algorithm_of(policy, offline)
        batch = demo_batch(discrete)
        before = [p.detach().clone() for p in policy.parameters()]
        with torch.no_grad():
            loss_before = algorithm._imitation_loss(batch).item()
        stats = algorithm._update_with_batch(batch)
        assert isinstance(stats, ImitationTrainingStats)
        assert stats.loss == pytest.approx(loss_before, rel=1e-5)
        assert any(not torch.equal(b, p) for b, p in zip(before, policy.parameters(), strict=True))
        for _ in range(100):
            algorithm._update_with_batch(batch)
        with torch.no_grad():
            assert algorithm._imitation_loss(batch).item() < 0.8 * loss_before

    @pytest.mark.parametrize("offline", [False, True])
    def test_update_samples_the_buffer_and_reports_the_loss(self, offline: bool) -> None:
        algorithm = algorithm_of(discrete_policy(), offline)
        buffer = ReplayBuffer(64)
        demos = demo_batch(discrete=True, size=20)
        for obs, act in zip(demos.obs, demos.act, strict=True):
            buffer.add(
                Batch(
                    obs=obs,
                    act=act,
                    rew=0.0,
                    terminated=False,
                    truncated=False,
                    obs_next=obs,
                    info={},
                )
            )
        with policy_within_training_step(algorithm.policy):
            stats = algorithm.update(buffer, sample_size=8)
        assert isinstance(stats, ImitationTrainingStats)
        assert stats.loss > 0.0
        assert stats.get_loss_stats_dict() == {"loss": stats.loss}

    def test_off_policy_learner_is_reexported(self) -> None:
        assert ReexportedOffPolicyImitationLearning is OffPolicyImitationLearning

    def test_state_dict_round_trip_includes_the_optimizer(self) -> None:
        algorithm = algorithm_of(discrete_policy(), offline=True)
        algorithm._update_with_batch(demo_batch(discrete=True))
        restored = algorithm_of(discrete_policy(), offline=True)
        restored.load_state_dict(algorithm.state_dict())
        for a, b in zip(algorithm.parameters(), restored.parameters(), strict=True):
            assert torch.equal(a, b)
        assert restored.optim.state_dict()["state"]


# ---------------------------------------------------------------- cloning a CartPole expert
class CartPoleExpert(Policy):
    """The scripted angle + angular-velocity rule, which balances the pole for 500 steps."""

    def __init__(self) -> None:
        super().__init__(action_space=gym.spaces.Discrete(2))

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        obs = np.asarray(batch.obs)
        return Batch(act=(obs[:, 2] + 0.5 * obs[:, 3] > 0).astype(np.int64), state=state)


def expert_buffer(num_steps: int, seed: int) -> VectorReplayBuffer:
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1")])
    envs.seed(seed)
    buffer = VectorReplayBuffer(num_steps, 1)
    Collector(CartPoleExpert(), envs, buffer).collect(n_step=num_steps, reset_before_collect=True)
    return buffer


def test_scripted_expert_balances_the_pole() -> None:
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(5)])
    envs.seed(0)
    stats = Collector(CartPoleExpert(), envs).collect(n_episode=5, reset_before_collect=True)
    assert stats.returns.min() == 500.0


def clone_cartpole_expert(seed: int, max_epochs: int, stop_at: float | None) -> InfoStats:
    """Behaviour-clone the scripted expert from 2,000 of its transitions; 100 updates per epoch."""
    buffer = expert_buffer(2000, seed=seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    policy = ImitationPolicy(
        actor=Net(state_shape=4, action_shape=2, hidden_sizes=[64, 64]),
        action_space=gym.spaces.Discrete(2),
    )
    algorithm = OfflineImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    test_envs.seed(seed + 1)
    return algorithm.run_training(
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=100,
            batch_size=64,
            test_step_num_episodes=10,
            stop_fn=None if stop_at is None else (lambda reward: reward >= stop_at),
            show_progress=False,
            verbose=False,
        )
    )


@pytest.mark.usefixtures("one_thread")
def test_offline_imitation_clones_the_cartpole_expert() -> None:
    result = clone_cartpole_expert(seed=0, max_epochs=10, stop_at=195.0)
    assert result.best_reward >= 195.0
    assert 100 <= result.update_step <= 1000


PENDULUM_ACTIONS = gym.spaces.Box(-2.0, 2.0, shape=(1,))


class PendulumExpert(Policy):
    """A scripted swing-up controller: pump energy with full torque until the pole is near the
    top, then hold it there with a PD rule. Its raw actions are the torques divided by 2."""

    def __init__(self) -> None:
        super().__init__(action_space=PENDULUM_ACTIONS, action_scaling=True)

    def forward(self, batch: Batch, state: PolicyState = None, **kwargs: Any) -> Batch:
        cos, sin, velocity = np.asarray(batch.obs).T
        angle = np.arctan2(sin, cos)
        energy_below_top = 0.5 * velocity**2 + 10.0 * (cos - 1.0)
        swing = 2.0 * np.where(velocity >= 0, 1.0, -1.0) * np.where(energy_below_top < 0, 1.0, -1.0)
        torque = np.where(cos > 0.85, -(10.0 * angle + 2.0 * velocity), swing)
        act = (np.clip(torque, -2.0, 2.0) / 2.0)[:, None].astype(np.float32)
        return Batch(act=act, state=state)


def pendulum_expert_data(num_steps: int, seed: int) -> tuple[VectorReplayBuffer, float]:
    """``num_steps`` transitions of the scripted expert on 4 envs, and its mean episode return."""
    envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(4)])
    envs.seed(seed)
    buffer = VectorReplayBuffer(num_steps, 4)
    stats = Collector(PendulumExpert(), envs, buffer).collect(
        n_step=num_steps, reset_before_collect=True
    )
    return buffer, float(stats.returns.mean())


@pytest.mark.usefixtures("one_thread")
def test_offline_imitation_clones_the_pendulum_expert_with_squared_error() -> None:
    """Budget: 40 expert episodes and at most 10 epochs of 500 updates (3 suffice for seeds
    0-2); the expert itself scores about -180, an untrained actor about -1,400."""
    buffer, expert_return = pendulum_expert_data(8000, seed=0)
    assert expert_return >= -250.0
    torch.manual_seed(0)
    policy = ImitationPolicy(
        actor=Net(state_shape=3, action_shape=1, hidden_sizes=[64, 64]),
        action_space=PENDULUM_ACTIONS,
        action_scaling=True,
    )
    algorithm = OfflineImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(10)])
    test_envs.seed(1)
    result = algorithm.run_training(
        OfflineTrainerParams(
            buffer=buffer,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=10,
            epoch_num_steps=500,
            batch_size=64,
            test_step_num_episodes=10,
            stop_fn=lambda reward: reward >= -300.0,
            show_progress=False,
            verbose=False,
        )
    )
    assert result.best_reward >= -300.0


@pytest.mark.usefixtures("one_thread")
def test_offline_imitation_training_repeats_its_trace(tmp_path: Path) -> None:
    snapshot = TraceDeterminismTest(base_path=str(tmp_path))
    traces = []
    for _ in range(2):
        with TraceLoggerContext() as trace:
            clone_cartpole_expert(seed=3, max_epochs=1, stop_at=None)
        traces.append(trace.get_log())
    snapshot.check(traces[0], "offline_imitation", create_reference_result=True)
    result = snapshot.check(traces[1], "offline_imitation")
    assert result.success and result.first_difference is None
    assert len(traces[0].log_lines) > 3


@pytest.mark.usefixtures("one_thread")
def test_off_policy_imitation_learns_beside_an_acting_expert() -> None:
    """The expert collects 8 steps at a time into a replay buffer; after each collection the
    learner takes 4 updates on samples of it (as beside an online learner): 300 rounds."""
    np.random.seed(0)
    torch.manual_seed(0)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    envs.seed(0)
    buffer = VectorReplayBuffer(5000, 4)
    expert_collector = Collector(CartPoleExpert(), envs, buffer)
    expert_collector.reset()
    policy = ImitationPolicy(
        actor=Net(state_shape=4, action_shape=2, hidden_sizes=[64, 64]),
        action_space=gym.spaces.Discrete(2),
    )
    algorithm = OffPolicyImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))
    losses = []
    for _ in range(300):
        expert_collector.collect(n_step=8)
        with policy_within_training_step(policy):
            losses.append(algorithm.update(buffer, sample_size=64).loss)
            for _ in range(3):
                algorithm.update(buffer, sample_size=64)
    assert np.mean(losses[-20:]) < 0.5 * np.mean(losses[:20])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    test_envs.seed(1)
    stats = Collector(algorithm, test_envs).collect(n_episode=10, reset_before_collect=True)
    assert stats.returns.mean() >= 195.0


def train_sac_on_pendulum(seed: int, max_epochs: int) -> tuple[InfoStats, SAC, VectorReplayBuffer]:
    """SAC with the settings of test_sac's learning test, stopping at -250; returns SAC
    and the replay buffer that holds everything it collected."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(4)])
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(10)])
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

    sac = SAC(
        policy=SACPolicy(actor=actor, action_space=PENDULUM_ACTIONS),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        tau=0.005,
        gamma=0.99,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
    )
    buffer = VectorReplayBuffer(20000, 4)
    result = sac.run_training(
        OffPolicyTrainerParams(
            training_collector=Collector(sac, training_envs, buffer, exploration_noise=True),
            test_collector=Collector(sac, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=1000,
            collection_step_num_env_steps=8,
            test_step_num_episodes=10,
            batch_size=128,
            update_step_num_gradient_steps_per_sample=1.0,
            stop_fn=lambda reward: reward >= -250.0,
            show_progress=False,
            verbose=False,
        )
    )
    return result, sac, buffer


def imitate_sac(seed: int, max_epochs: int) -> tuple[InfoStats, InfoStats]:
    """Train SAC, then an OffPolicyImitationLearning learner with the off-policy trainer on a
    collector where SAC keeps filling its own replay buffer, which the learner samples.
    Returns SAC's and the learner's results."""
    sac_result, sac, buffer = train_sac_on_pendulum(seed, max_epochs=12)
    envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(4)])
    envs.seed(seed + 3)
    expert_collector = Collector(sac, envs, buffer, exploration_noise=True)
    torch.manual_seed(seed)
    policy = ImitationPolicy(
        actor=Net(state_shape=3, action_shape=1, hidden_sizes=[64, 64]),
        action_space=PENDULUM_ACTIONS,
        action_scaling=True,
    )
    algorithm = OffPolicyImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(10)])
    test_envs.seed(seed + 2)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=expert_collector,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=500,
            collection_step_num_env_steps=8,
            test_step_num_episodes=10,
            batch_size=128,
            update_step_num_gradient_steps_per_sample=1.0,
            stop_fn=lambda reward: reward >= -300.0,
            show_progress=False,
            verbose=False,
        )
    )
    return sac_result, result


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_imitation_beside_sac_on_pendulum() -> None:
    """Budget: SAC stops at -250 (4,000 steps for seeds 0 and 1); the learner gets at most 50
    epochs of 500 steps and needed 34 and 38 for seeds 0 and 1."""
    sac_result, result = imitate_sac(seed=0, max_epochs=50)
    assert sac_result.best_reward >= -250.0
    assert result.best_reward >= -300.0


def train_a2c_on_cartpole(seed: int, max_epochs: int) -> tuple[InfoStats, A2C]:
    """A2C on CartPole-v1 (8 training envs, 64x64 tanh networks), stopping at 195."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(8)])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1)

    def net() -> Net:
        return Net(state_shape=4, hidden_sizes=[64, 64], activation=nn.Tanh)

    a2c = A2C(
        policy=DiscreteActorPolicy(
            actor=DiscreteActor(preprocess_net=net(), action_shape=2),
            dist_fn=torch.distributions.Categorical,
            action_space=gym.spaces.Discrete(2),
            deterministic_eval=True,
        ),
        critic=DiscreteCritic(preprocess_net=net()),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.99,
        gae_lambda=0.95,
        ent_coef=0.0,
        max_grad_norm=0.5,
    )
    result = a2c.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(a2c, training_envs, VectorReplayBuffer(520, 8)),
            test_collector=Collector(a2c, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=2048,
            collection_step_num_env_steps=512,
            update_step_num_repetitions=1,
            batch_size=64,
            test_step_num_episodes=10,
            stop_fn=lambda reward: reward >= 195.0,
            show_progress=False,
            verbose=False,
        )
    )
    return result, a2c


def imitate_a2c(seed: int, max_epochs: int) -> tuple[InfoStats, InfoStats]:
    """Train A2C, then an OffPolicyImitationLearning learner with the off-policy trainer on a
    collector where the trained A2C policy fills the buffer the learner samples."""
    a2c_result, a2c = train_a2c_on_cartpole(seed, max_epochs=25)
    torch.manual_seed(seed)
    policy = ImitationPolicy(
        actor=Net(state_shape=4, action_shape=2, hidden_sizes=[64, 64]),
        action_space=gym.spaces.Discrete(2),
    )
    algorithm = OffPolicyImitationLearning(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)])
    test_envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(10)])
    envs.seed(seed + 2)
    test_envs.seed(seed + 3)
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=Collector(a2c, envs, VectorReplayBuffer(20000, 4)),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=500,
            collection_step_num_env_steps=8,
            test_step_num_episodes=10,
            batch_size=64,
            update_step_num_gradient_steps_per_sample=0.5,
            stop_fn=lambda reward: reward >= 195.0,
            show_progress=False,
            verbose=False,
        )
    )
    return a2c_result, result


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_imitation_beside_a2c_on_cartpole() -> None:
    """Budget: A2C stops at 195 within 25 epochs of 2,048 steps (2 to 4 needed for seeds 0-2);
    the learner gets at most 10 epochs of 500 steps (1 or 2 needed for seeds 0-2)."""
    a2c_result, result = imitate_a2c(seed=0, max_epochs=10)
    assert a2c_result.best_reward >= 195.0
    assert result.best_reward >= 195.0
