"""Tests of R2D2-style recurrent DQN: stored states, sequence replay, burn-in, n-step targets."""

import copy
from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm.modelfree.recurrent_dqn import RecurrentDQN, RecurrentQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import (
    Batch,
    Collector,
    PrioritizedReplayBuffer,
    PrioritizedVectorReplayBuffer,
    ReplayBuffer,
    VectorReplayBuffer,
)
from tianshou.env import DummyVectorEnv
from tianshou.env import pomdp as pomdp_envs
from tianshou.env.pomdp import CueRecallEnv
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.dict_encoder import DictEncoder
from tianshou.utils.net.recurrent import RecurrentQNet
from tianshou.utils.torch_utils import policy_within_training_step


def recurrent_policy(hidden_size: int = 16, cell: str = "lstm") -> RecurrentQLearningPolicy:
    return RecurrentQLearningPolicy(
        model=RecurrentQNet(2, 2, hidden_size=hidden_size, cell=cell),
        action_space=gym.spaces.Discrete(2),
        eps_training=0.3,
    )


def make_r2d2(policy: RecurrentQLearningPolicy, lr: float = 0.0, **kwargs) -> RecurrentDQN:
    return RecurrentDQN(
        policy=policy, optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr), **kwargs
    )


def collected_buffer(policy: RecurrentQLearningPolicy, steps: int = 90) -> VectorReplayBuffer:
    envs = DummyVectorEnv([pomdp_envs.cartpole_without_velocities for _ in range(3)])
    envs.seed(0)
    buffer = VectorReplayBuffer(steps + 3, 3)
    collector = Collector(policy, envs, buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=steps)
    return buffer


def test_collection_stores_the_state_each_step_started_from() -> None:
    torch.manual_seed(0)
    buffer = collected_buffer(recurrent_policy())
    batch, indices = buffer.sample(0)
    done = batch.terminated | batch.truncated
    follows = buffer.next(indices[:-1]) == indices[1:]
    continuing = follows & ~done[:-1]
    state_in = batch.policy.state_in.hidden
    state_out = torch.as_tensor(batch.policy.hidden_state.hidden).numpy()
    assert continuing.any() and done.any()
    assert np.allclose(state_in[1:][continuing], state_out[:-1][continuing])
    starting = np.concatenate([[True], ~follows | done[:-1]])
    assert np.all(state_in[starting] == 0.0)


def hand_batch(rew, done, terminated, valid) -> Batch:
    as_tensor = lambda x, dtype: torch.as_tensor(np.array([x]), dtype=dtype)  # noqa: E731
    return Batch(
        rew=as_tensor(rew, torch.float32),
        done=as_tensor(done, torch.bool),
        terminated=as_tensor(terminated, torch.bool),
        valid=as_tensor(valid, torch.bool),
    )


def test_n_step_targets_by_hand() -> None:
    algorithm = make_r2d2(
        recurrent_policy(), gamma=0.5, n_step_return_horizon=2, burn_in=1, train_len=4
    )
    # step 0 is burn-in; trained steps 1..4: step 2 terminates, step 3 starts padding
    batch = hand_batch(
        rew=[9.0, 1.0, 2.0, 7.0, 7.0],
        done=[False, False, True, True, True],
        terminated=[False, False, True, True, True],
        valid=[True, True, True, False, False],
    )
    next_value = torch.tensor([[10.0, 20.0, 30.0, 40.0]])  # successors of steps 1..4
    targets = algorithm._n_step_targets(batch, next_value)
    # step 1: 1 + 0.5 * 2, and the episode terminated at step 2: no bootstrap
    # step 2: 2, terminal
    assert targets[0, :2].tolist() == pytest.approx([2.0, 2.0])


def test_n_step_targets_bootstrap_at_horizon_truncation_and_sequence_end() -> None:
    algorithm = make_r2d2(
        recurrent_policy(), gamma=0.5, n_step_return_horizon=3, burn_in=0, train_len=4
    )
    batch = hand_batch(
        rew=[1.0, 1.0, 1.0, 1.0],
        done=[False, False, False, False],
        terminated=[False, False, False, False],
        valid=[True, True, True, True],
    )
    next_value = torch.tensor([[8.0, 16.0, 32.0, 64.0]])
    targets = algorithm._n_step_targets(batch, next_value)
    # t=0: 1 + .5 + .25 + .125 * V(s_3)=32; t=1: 1.75 + .125 * 64; t=2,3: cut by the sequence
    expected = [1.75 + 4.0, 1.75 + 8.0, 1.5 + 0.25 * 64, 1.0 + 0.5 * 64]
    assert targets[0].tolist() == pytest.approx(expected)
    truncated = hand_batch(
        rew=[1.0, 1.0, 5.0, 5.0],
        done=[False, True, True, True],
        terminated=[False, False, False, False],
        valid=[True, True, False, False],
    )
    targets = algorithm._n_step_targets(truncated, next_value)
    # a truncated episode bootstraps from the value of its final observation
    assert targets[0, :2].tolist() == pytest.approx([1.5 + 0.25 * 16, 1.0 + 0.5 * 16])


def test_update_trains_on_the_steps_after_burn_in_from_the_stored_state() -> None:
    torch.manual_seed(0)
    policy = recurrent_policy()
    buffer = collected_buffer(policy)
    algorithm = make_r2d2(policy, gamma=0.9, burn_in=3, train_len=5)
    starts = np.array([0, 30, 61])
    batch = algorithm._preprocess_batch(buffer[starts], buffer, starts)
    # replay step by step: burn-in from the stored state, then the trained steps
    model = policy.model
    state = {k: v.clone() for k, v in batch.state.items()}
    with torch.no_grad():
        q_steps = []
        for t in range(8):
            q, state = model(batch.obs[:, t], state)
            q_steps.append(q)
        q_all = torch.stack(q_steps, dim=1)
        q_last_next, _ = model(batch.obs_next[:, 7], state)
    q_taken = q_all[:, 3:].gather(-1, batch.act[:, 3:, None]).squeeze(-1)
    successors = torch.cat([q_all[:, 4:], q_last_next[:, None]], dim=1)
    next_value = successors.max(-1).values  # target net == online net right after the copy
    targets = algorithm._n_step_targets(batch, next_value)
    valid = batch.valid[:, 3:]
    expected = ((targets - q_taken).pow(2) * valid).sum() / valid.sum()
    with policy_within_training_step(policy):
        stats = algorithm._update_with_batch(batch)
    assert stats.loss == pytest.approx(expected.item(), rel=1e-4)


def cue_policy(hidden_size: int = 16, dict_obs: bool = False) -> RecurrentQLearningPolicy:
    encoder = None
    if dict_obs:
        space = CueRecallEnv(dict_obs=True).observation_space["obs"]
        encoder = DictEncoder(observation_space=space, hidden_sizes=[16])  # type: ignore[arg-type]
    return RecurrentQLearningPolicy(
        model=RecurrentQNet(16 if dict_obs else 3, 3, hidden_size, preprocess_net=encoder),
        action_space=gym.spaces.Discrete(3),
        eps_training=0.3,
    )


def cue_envs(num: int, seed: int, dict_obs: bool = False) -> DummyVectorEnv:
    envs = DummyVectorEnv([partial(CueRecallEnv, dict_obs=dict_obs) for _ in range(num)])
    envs.seed(seed)
    return envs


def test_masked_acting_and_exploration_choose_legal_actions_only() -> None:
    torch.manual_seed(0)
    policy = cue_policy()
    policy.set_eps_training(1.0)
    buffer = VectorReplayBuffer(400, 4)
    collector = Collector(policy, cue_envs(4, 0), buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=300)  # an illegal action would raise in the env
    batch, _ = buffer.sample(0)
    assert batch.obs.mask[np.arange(len(batch)), batch.act].all()
    with pytest.raises(TypeError, match="need a preprocess_net"):
        policy(Batch(obs=Batch(pos=np.zeros((2, 3))), info={}))


def test_masked_targets_bootstrap_from_the_best_legal_successor_action() -> None:
    torch.manual_seed(0)
    policy = cue_policy()
    buffer = VectorReplayBuffer(200, 2)
    collector = Collector(policy, cue_envs(2, 0), buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=100)
    algorithm = make_r2d2(policy, gamma=0.9, burn_in=1, train_len=4)
    starts = np.array([0, 1, 2, 100, 101])
    batch = algorithm._preprocess_batch(buffer[starts], buffer, starts)
    assert batch.obs.shape == (5, 5, 3) and batch.mask.dtype == torch.bool
    assert torch.equal(batch.mask[:, 1:], batch.mask_next[:, :-1])
    model = policy.model
    state = {k: v.clone() for k, v in batch.state.items()}
    with torch.no_grad():
        q_steps = []
        for t in range(5):
            q, state = model(batch.obs[:, t], state)
            q_steps.append(q)
        q_all = torch.stack(q_steps, dim=1)
        q_last_next, _ = model(batch.obs_next[:, 4], state)
    q_taken = q_all[:, 1:].gather(-1, batch.act[:, 1:, None]).squeeze(-1)
    successors = torch.cat([q_all[:, 2:], q_last_next[:, None]], dim=1)
    legal = batch.mask_next[:, 1:]
    next_value = successors.masked_fill(~legal, -torch.inf).max(-1).values
    # after the choice the episode ends: its value is never used, only keep it finite
    next_value = torch.where(torch.isfinite(next_value), next_value, torch.zeros(()))
    assert (successors.argmax(-1) != successors.masked_fill(~legal, -torch.inf).argmax(-1)).any()
    targets = algorithm._n_step_targets(batch, next_value)
    valid = batch.valid[:, 1:]
    expected = ((targets - q_taken).pow(2) * valid).sum() / valid.sum()
    with policy_within_training_step(policy):
        stats = algorithm._update_with_batch(batch)
    assert stats.loss == pytest.approx(expected.item(), rel=1e-4)


def test_sequence_priorities_mix_the_largest_and_the_mean_error() -> None:
    algorithm = make_r2d2(recurrent_policy(), priority_eta=0.75)
    td_abs = torch.tensor([[1.0, 3.0, 100.0], [2.0, 0.0, 0.0], [5.0, 5.0, 5.0]])
    trained = torch.tensor([[True, True, False], [True, False, False], [False, False, False]])
    priorities = algorithm._sequence_priorities(td_abs, trained)
    # padding (the 100) counts for nothing; a sequence without trained steps gets 0
    assert priorities.tolist() == pytest.approx([0.75 * 3 + 0.25 * 2, 2.0, 0.0])


def prioritized_buffer(policy: RecurrentQLearningPolicy) -> PrioritizedReplayBuffer:
    buffer = PrioritizedReplayBuffer(200, alpha=0.6, beta=0.4)
    collector = Collector(policy, cue_envs(1, 0), buffer, exploration_noise=True)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=100)
    return buffer


def test_prioritized_sequences_are_weighted_and_get_new_priorities(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    torch.manual_seed(0)
    policy = cue_policy()
    buffer = prioritized_buffer(policy)
    algorithm = make_r2d2(policy, burn_in=1, train_len=4)
    starts = np.array([0, 5, 10, 15])
    sampled = buffer[starts]
    assert "weight" in sampled
    batch = algorithm._preprocess_batch(sampled, buffer, starts)
    assert torch.allclose(batch.weight, torch.as_tensor(sampled.weight, dtype=torch.float32))
    losses = []
    for scale in (1.0, 2.0):
        replica = copy.deepcopy(batch)
        replica.weight = torch.full((4,), scale)
        with policy_within_training_step(policy):
            losses.append(algorithm._update_with_batch(replica).loss)
    assert losses[1] == pytest.approx(2 * losses[0], rel=1e-5)  # lr 0: the same errors
    written: list = []
    monkeypatch.setattr(buffer, "update_weight", lambda index, w: written.append((index, w)))
    with policy_within_training_step(policy):
        algorithm.update(buffer, 6)
    ((index, new_weight),) = written
    assert len(index) == 6 and new_weight.shape == (6,)
    assert torch.isfinite(new_weight).all() and (new_weight >= 0).all()


def test_bad_configuration_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="initial_state"):
        RecurrentQLearningPolicy(
            model=Net(state_shape=2, action_shape=2), action_space=gym.spaces.Discrete(2)
        )
    with pytest.raises(ValueError, match="target_update_freq"):
        make_r2d2(recurrent_policy(), target_update_freq=0)
    with pytest.raises(ValueError, match="train_len"):
        make_r2d2(recurrent_policy(), train_len=0)
    with pytest.raises(ValueError, match="priority_eta"):
        make_r2d2(recurrent_policy(), priority_eta=1.5)
    policy = recurrent_policy()
    algorithm = make_r2d2(policy)
    random_buffer = ReplayBuffer(8)
    Collector(
        policy, DummyVectorEnv([pomdp_envs.cartpole_without_velocities]), random_buffer
    ).collect(n_step=4, random=True, reset_before_collect=True)
    with pytest.raises(ValueError, match="state_in"):
        algorithm._preprocess_batch(random_buffer[np.array([0])], random_buffer, np.array([0]))


@pytest.fixture
def single_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.mark.usefixtures("single_thread")
def test_recurrent_dqn_solves_cartpole_without_velocities() -> None:
    np.random.seed(0)
    torch.manual_seed(0)
    training_envs = DummyVectorEnv([pomdp_envs.cartpole_without_velocities for _ in range(8)])
    test_envs = DummyVectorEnv([pomdp_envs.cartpole_without_velocities for _ in range(10)])
    training_envs.seed(0)
    test_envs.seed(100)
    policy = recurrent_policy(hidden_size=64)
    policy.set_eps_training(0.5)
    algorithm = RecurrentDQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        n_step_return_horizon=3,
        target_update_freq=100,
        burn_in=4,
        train_len=16,
    )
    collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(20000, 8), exploration_noise=True
    )
    collector.reset()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=Collector(algorithm, test_envs),
            max_epochs=20,
            epoch_num_steps=2000,
            collection_step_num_env_steps=16,
            test_step_num_episodes=10,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.25,
            training_fn=lambda epoch, step: policy.set_eps_training(
                max(0.05, 0.5 - 0.45 * step / 10000)
            ),
            stop_fn=lambda mean_return: mean_return >= 195.0,
            verbose=False,
            show_progress=False,
        )
    )
    assert result.best_reward >= 195.0


def best_cue_recall_return(buffer: ReplayBuffer, dict_obs: bool = False) -> float:
    """Best test return (50 episodes) of recurrent DQN trained on the masked memory task with
    ``buffer`` (8 envs), stopping at 0.98."""
    np.random.seed(0)
    torch.manual_seed(0)
    algorithm = RecurrentDQN(
        policy=cue_policy(hidden_size=32, dict_obs=dict_obs),
        optim=AdamOptimizerFactory(lr=3e-3),
        gamma=0.9,
        target_update_freq=20,
        burn_in=0,
        train_len=4,
    )
    collector = Collector(algorithm, cue_envs(8, 0, dict_obs), buffer, exploration_noise=True)
    collector.reset()
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=collector,
            test_collector=Collector(algorithm, cue_envs(10, 2, dict_obs)),
            max_epochs=4,
            epoch_num_steps=1000,
            collection_step_num_env_steps=16,
            test_step_num_episodes=50,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.25,
            stop_fn=lambda mean_return: mean_return >= 0.98,
            verbose=False,
            show_progress=False,
        )
    )
    return result.best_reward


@pytest.mark.usefixtures("single_thread")
@pytest.mark.parametrize("dict_obs", [False, True])
def test_recurrent_dqn_solves_the_masked_memory_task(dict_obs: bool) -> None:
    assert best_cue_recall_return(VectorReplayBuffer(5000, 8), dict_obs) >= 0.98


@pytest.mark.usefixtures("single_thread")
def test_recurrent_dqn_learns_from_prioritized_sequences() -> None:
    prioritized = PrioritizedVectorReplayBuffer(5000, 8, alpha=0.6, beta=0.4)
    assert best_cue_recall_return(prioritized) >= 0.98
    stored = prioritized.sample_indices(0)  # new rows enter with one (the largest) priority
    assert prioritized.weight[stored].std() > 0  # the TD errors were fed back
