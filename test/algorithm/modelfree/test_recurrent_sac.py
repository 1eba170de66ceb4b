"""Tests of recurrent SAC: stored actor and critic states, burn-in, padding-free losses."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm import SAC
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.recurrent_sac import RecurrentSAC, RecurrentSACPolicy
from tianshou.algorithm.modelfree.sac import AutoAlpha, SACPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, PrioritizedReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env import pomdp as pomdp_envs
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.net.dict_encoder import DictEncoder
from tianshou.utils.net.recurrent import (
    RecurrentDiscreteActor,
    RecurrentGaussianActor,
    RecurrentQCritic,
)
from tianshou.utils.torch_utils import policy_within_training_step

SPACE = gym.spaces.Box(-2.0, 2.0, shape=(1,))


def recurrent_policy(cell: str = "lstm") -> RecurrentSACPolicy:
    return RecurrentSACPolicy(
        actor=RecurrentGaussianActor(2, 1, hidden_size=8, cell=cell, conditioned_sigma=True),
        critic=RecurrentQCritic(2, 1, hidden_size=8, cell=cell),
        critic2=RecurrentQCritic(2, 1, hidden_size=8, cell=cell),
        action_space=SPACE,
    )


def make_sac(policy: RecurrentSACPolicy, **kwargs) -> RecurrentSAC:
    sgd = TorchOptimizerFactory(torch.optim.SGD, lr=0.0)
    return RecurrentSAC(policy=policy, policy_optim=sgd, critic_optim=sgd, **kwargs)


def collected_buffer(policy: RecurrentSACPolicy, steps: int = 60) -> VectorReplayBuffer:
    envs = DummyVectorEnv([pomdp_envs.pendulum_without_velocity for _ in range(2)])
    envs.seed(0)
    buffer = VectorReplayBuffer(steps + 2, 2)
    collector = Collector(policy, envs, buffer)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=steps)
    return buffer


def test_collection_stores_every_networks_state() -> None:
    torch.manual_seed(0)
    buffer = collected_buffer(recurrent_policy("gru"))
    batch, indices = buffer.sample(0)
    assert sorted(batch.policy.state_in.keys()) == ["actor", "critic", "critic2"]
    follows = buffer.next(indices[:-1]) == indices[1:]
    for name in ("actor", "critic", "critic2"):
        state_in = batch.policy.state_in[name].hidden
        state_out = torch.as_tensor(batch.policy.hidden_state[name].hidden).numpy()
        assert np.allclose(state_in[1:][follows], state_out[:-1][follows])
        assert np.all(state_in[buffer.prev(indices) == indices] == 0.0)
    assert np.all(np.abs(batch.act) <= 1.0)  # raw actions; the collector scales them


def test_acting_outside_training_tracks_the_actor_only() -> None:
    policy = recurrent_policy()
    result = policy(Batch(obs=np.zeros((3, 2)), info={}))
    assert set(result.state) == {"actor"}
    assert "policy" not in result


def test_advancing_over_a_sequence_gives_the_states_carried_while_acting() -> None:
    torch.manual_seed(0)
    policy = recurrent_policy("gru")
    assert list(policy.critics) == ["critic", "critic2"]
    obs = torch.randn(3, 5, 2)
    initial = {
        name: net.initial_state(3)
        for name, net in (("actor", policy.actor), *policy.critics.items())
    }
    state = None
    with policy_within_training_step(policy):
        for t in range(5):
            state = policy(Batch(obs=obs[:, t], info={}), state).state
    assert state is not None
    advanced = policy.advance_states(obs, initial)
    assert set(advanced) == {"actor", "critic", "critic2"}
    for name in advanced:
        torch.testing.assert_close(advanced[name]["hidden"], state[name]["hidden"])


def sequences(algorithm: RecurrentSAC, buffer: VectorReplayBuffer, starts: np.ndarray) -> Batch:
    return algorithm._preprocess_batch(buffer[starts], buffer, starts)


def critic_loss(algorithm: RecurrentSAC, batch: Batch) -> float:
    torch.manual_seed(1)  # the same action samples every time
    with policy_within_training_step(algorithm.policy):
        return algorithm._update_with_batch(batch).critic1_loss


def test_burn_in_and_padding_do_not_enter_the_losses() -> None:
    torch.manual_seed(0)
    policy = recurrent_policy()
    buffer = collected_buffer(policy)
    algorithm = make_sac(policy, burn_in=2, train_len=4)
    # env 0 holds rows 0-29: the sequence from row 28 is padded after two steps
    batch = sequences(algorithm, buffer, np.array([3, 20, 28]))
    assert not batch.valid.all()
    reference = critic_loss(algorithm, batch)
    changed = Batch(batch, copy=True)
    changed.rew[:, :2] += 100.0  # burn-in steps
    changed.rew[~batch.valid] += 100.0  # padding
    assert critic_loss(algorithm, changed) == pytest.approx(reference, rel=1e-6)
    trained = Batch(batch, copy=True)
    trained.rew[0, 3] += 100.0
    assert critic_loss(algorithm, trained) != pytest.approx(reference, rel=1e-3)


def test_sequences_without_real_trained_steps_leave_alpha_finite() -> None:
    torch.manual_seed(0)
    policy = recurrent_policy()
    buffer = collected_buffer(policy, steps=4)
    alpha = AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=0.1))
    algorithm = make_sac(policy, burn_in=4, train_len=4, alpha=alpha)
    batch = sequences(algorithm, buffer, np.array([0, 1]))
    assert not batch.valid[:, 4:].any()
    with policy_within_training_step(policy):
        stats = algorithm._update_with_batch(batch)
    assert stats.alpha == pytest.approx(1.0)


def test_bad_configuration_is_a_clear_error() -> None:
    critic = RecurrentQCritic(2, 1)
    with pytest.raises(ValueError, match="Box"):
        RecurrentSACPolicy(
            actor=RecurrentGaussianActor(2, 1), critic=critic, critic2=critic,
            action_space=gym.spaces.Discrete(2),
        )  # fmt: skip
    with pytest.raises(TypeError, match="RecurrentGaussianActor"):
        RecurrentSACPolicy(
            actor=RecurrentDiscreteActor(2, 1),  # type: ignore[arg-type]
            critic=critic, critic2=critic, action_space=SPACE,
        )  # fmt: skip
    with pytest.raises(ValueError, match="train_len"):
        make_sac(recurrent_policy(), train_len=0)
    prioritized = PrioritizedReplayBuffer(8, alpha=0.6, beta=0.4)
    with pytest.raises(TypeError, match="non-prioritized"):
        make_sac(recurrent_policy())._preprocess_batch(Batch(), prioritized, np.zeros(0, int))


def train_on_pendulum_without_velocity(algorithm: Algorithm, max_epochs: int) -> float:
    """Train with 4 envs, 1000 steps per epoch, one update (32 sequences) per env step."""
    training_envs = DummyVectorEnv([pomdp_envs.pendulum_without_velocity for _ in range(4)])
    test_envs = DummyVectorEnv([pomdp_envs.pendulum_without_velocity for _ in range(10)])
    training_envs.seed(0)
    test_envs.seed(100)
    collector = Collector(algorithm, training_envs, VectorReplayBuffer(20000, 4))
    collector.reset()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=1000,
            collection_step_num_env_steps=8,
            test_step_num_episodes=10,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=1.0,
            stop_fn=lambda mean_return: mean_return >= -300.0,
            verbose=False,
            show_progress=False,
        )
    )
    return result.best_reward


@pytest.fixture
def single_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


class CameraPendulum(gym.ObservationWrapper):
    """The velocity-hidden pendulum observed as a dict: its angle, and a camera image whose
    brightness is the angle's cosine (a structured observation with an image entry)."""

    def __init__(self) -> None:
        super().__init__(pomdp_envs.pendulum_without_velocity())
        self.observation_space = gym.spaces.Dict(
            {
                "angle": self.env.observation_space,
                "camera": gym.spaces.Box(0, 255, (6, 6, 1), dtype=np.uint8),
            }
        )

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        brightness = np.uint8(127.5 * (1.0 + observation[0]))
        return {"angle": observation, "camera": np.full((6, 6, 1), brightness, dtype=np.uint8)}


def test_structured_observations_train_through_their_encoders() -> None:
    torch.manual_seed(0)
    space = CameraPendulum().observation_space

    def encoder() -> DictEncoder:
        return DictEncoder(observation_space=space, hidden_sizes=[8])  # type: ignore[arg-type]

    policy = RecurrentSACPolicy(
        actor=RecurrentGaussianActor(
            8, 1, hidden_size=8, conditioned_sigma=True, preprocess_net=encoder()
        ),
        critic=RecurrentQCritic(8, 1, hidden_size=8, preprocess_net=encoder()),
        critic2=RecurrentQCritic(8, 1, hidden_size=8, preprocess_net=encoder()),
        action_space=SPACE,
    )
    adam = AdamOptimizerFactory(lr=1e-2)
    algorithm = RecurrentSAC(
        policy=policy, policy_optim=adam, critic_optim=adam, burn_in=2, train_len=4
    )
    envs = DummyVectorEnv([CameraPendulum for _ in range(2)])
    envs.seed(0)
    buffer = VectorReplayBuffer(80, 2)
    collector = Collector(algorithm, envs, buffer)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=60)
    cnn = [policy.actor, policy.critic, policy.critic2]
    before = [n.encoder.preprocess_net.image_encoders["camera"].net[0].weight.clone() for n in cnn]
    with policy_within_training_step(policy):
        stats = algorithm.update(buffer, 8)
    assert np.isfinite([stats.actor_loss, stats.critic1_loss, stats.critic2_loss]).all()
    after = [n.encoder.preprocess_net.image_encoders["camera"].net[0].weight for n in cnn]
    assert all(not torch.equal(b, a) for b, a in zip(before, after, strict=True))


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.usefixtures("single_thread")
def test_recurrent_sac_swings_up_the_pendulum_without_velocity() -> None:
    np.random.seed(0)
    torch.manual_seed(0)
    policy = RecurrentSACPolicy(
        actor=RecurrentGaussianActor(2, 1, hidden_size=64, conditioned_sigma=True),
        critic=RecurrentQCritic(2, 1, hidden_size=64),
        critic2=RecurrentQCritic(2, 1, hidden_size=64),
        action_space=SPACE,
    )
    algorithm = RecurrentSAC(
        policy=policy,
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.95,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
        burn_in=8,
        train_len=16,
    )
    assert train_on_pendulum_without_velocity(algorithm, max_epochs=30) >= -300.0


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.usefixtures("single_thread")
def test_feed_forward_sac_fails_the_pendulum_without_velocity() -> None:
    np.random.seed(0)
    torch.manual_seed(0)
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=2, hidden_sizes=[64, 64]),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )

    def critic() -> ContinuousCritic:
        return ContinuousCritic(
            preprocess_net=Net(state_shape=2, action_shape=1, hidden_sizes=[64, 64], concat=True)
        )

    algorithm = SAC(
        policy=SACPolicy(actor=actor, action_space=SPACE),
        policy_optim=AdamOptimizerFactory(lr=1e-3),
        critic=critic(),
        critic_optim=AdamOptimizerFactory(lr=1e-3),
        critic2=critic(),
        critic2_optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.95,
        alpha=AutoAlpha(-1.0, 0.0, AdamOptimizerFactory(lr=3e-4)),
    )
    # the budget the recurrent test may use; without memory the swing-up is out of reach
    assert train_on_pendulum_without_velocity(algorithm, max_epochs=30) < -500.0
