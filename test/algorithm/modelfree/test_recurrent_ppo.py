"""Tests of recurrent A2C/PPO: stored states, sequence chunks, padding-free losses, learning."""

from functools import partial

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.distributions import Categorical, Independent, Normal

from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.recurrent_ppo import (
    RecurrentA2C,
    RecurrentActorCriticPolicy,
    RecurrentPPO,
)
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.env import pomdp as pomdp_envs
from tianshou.env.pomdp import CueRecallEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.net.common import Net
from tianshou.utils.net.dict_encoder import DictEncoder
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.net.recurrent import (
    RecurrentDiscreteActor,
    RecurrentGaussianActor,
    RecurrentValueNet,
)
from tianshou.utils.torch_utils import policy_within_training_step


def logits_categorical(logits: torch.Tensor) -> Categorical:
    return Categorical(logits=logits)


def recurrent_policy(cell: str = "lstm", hidden_size: int = 16) -> RecurrentActorCriticPolicy:
    return RecurrentActorCriticPolicy(
        actor=RecurrentDiscreteActor(2, 2, hidden_size=hidden_size, cell=cell),
        critic=RecurrentValueNet(2, hidden_size=hidden_size, cell=cell),
        dist_fn=logits_categorical,
        action_space=gym.spaces.Discrete(2),
        deterministic_eval=True,
    )


def collected_buffer(
    policy: RecurrentActorCriticPolicy, steps: int = 120, num_envs: int = 3
) -> VectorReplayBuffer:
    """Steps of velocity-hidden CartPole collected by ``policy`` inside a training step."""
    envs = DummyVectorEnv([pomdp_envs.cartpole_without_velocities for _ in range(num_envs)])
    envs.seed(0)
    buffer = VectorReplayBuffer(steps + num_envs, num_envs)
    collector = Collector(policy, envs, buffer)
    collector.reset()
    with policy_within_training_step(policy):
        collector.collect(n_step=steps)
    return buffer


def replayed_step_by_step(policy: RecurrentActorCriticPolicy, batch: Batch) -> tuple:
    """Log-probabilities and values of every row from its own stored state, one step each."""
    state = batch.policy.state_in
    actor_state = {k: torch.as_tensor(v) for k, v in state.actor.items()}
    critic_state = {k: torch.as_tensor(v) for k, v in state.critic.items()}
    with torch.no_grad():
        logits, _ = policy.actor(batch.obs, actor_state)
        values, _ = policy.critic(batch.obs, critic_state)
    log_prob = Categorical(logits=logits).log_prob(torch.as_tensor(batch.act))
    return log_prob, values, Categorical(logits=logits).entropy()


class TestCollection:
    def test_stored_states_chain_and_reset_at_episode_starts(self) -> None:
        torch.manual_seed(0)
        buffer = collected_buffer(recurrent_policy())
        batch, indices = buffer.sample(0)
        state_in = batch.policy.state_in.actor.hidden
        state_out = torch.as_tensor(batch.policy.hidden_state.actor.hidden).numpy()
        done = batch.terminated | batch.truncated
        follows = buffer.next(indices[:-1]) == indices[1:]
        continuing = follows & ~done[:-1]
        starting = np.concatenate([[True], ~follows | done[:-1]])
        assert continuing.any() and done.any()
        # a step continues from the state the step before it ended in ...
        assert np.allclose(state_in[1:][continuing], state_out[:-1][continuing])
        # ... and every episode starts from the zero state
        assert np.all(state_in[starting] == 0.0)
        assert np.all(batch.policy.state_in.critic.cell[starting] == 0.0)

    def test_test_time_acting_needs_no_critic_state(self) -> None:
        policy = recurrent_policy()
        result = policy(Batch(obs=np.zeros((4, 2)), info={}))
        assert set(result.state) == {"actor"}
        assert "policy" not in result

    def test_structured_observations_are_a_clear_error(self) -> None:
        policy = recurrent_policy()
        with pytest.raises(TypeError, match="need a preprocess_net"):
            policy(Batch(obs=Batch(pos=np.zeros((4, 1)), angle=np.zeros((4, 1))), info={}))

    def test_masked_actions_are_always_legal(self) -> None:
        torch.manual_seed(0)
        policy = cue_policy()
        mask = np.random.default_rng(0).random((200, 3)) < 0.5
        mask[~mask.any(axis=1), 1] = True
        batch = Batch(obs=Batch(obs=np.zeros((200, 3)), mask=mask), info={})
        for training in (True, False):
            policy.deterministic_eval = not training
            with policy_within_training_step(policy, enabled=training):
                act = policy(batch).act
            assert mask[np.arange(200), np.asarray(act)].all()

    def test_an_observation_without_legal_actions_is_a_clear_error(self) -> None:
        mask = np.ones((4, 3), dtype=bool)
        mask[2] = False
        batch = Batch(obs=Batch(obs=np.zeros((4, 3)), mask=mask), info={"env_id": np.arange(4)})
        with pytest.raises(ValueError, match=r"row 2 \(env_id 2\) allows no action"):
            cue_policy()(batch)


def cue_encoder() -> DictEncoder:
    """Encodes :class:`CueRecallEnv`'s dict network inputs (``dict_obs=True``)."""
    space = CueRecallEnv(dict_obs=True).observation_space["obs"]
    return DictEncoder(observation_space=space, hidden_sizes=[16])  # type: ignore[arg-type]


def cue_policy(hidden_size: int = 16, dict_obs: bool = False) -> RecurrentActorCriticPolicy:
    """A recurrent policy for :class:`CueRecallEnv` (masked observations, three actions)."""
    obs_dim = 16 if dict_obs else 3
    return RecurrentActorCriticPolicy(
        actor=RecurrentDiscreteActor(
            obs_dim, 3, hidden_size, preprocess_net=cue_encoder() if dict_obs else None
        ),
        critic=RecurrentValueNet(
            obs_dim, hidden_size, preprocess_net=cue_encoder() if dict_obs else None
        ),
        dist_fn=logits_categorical,
        action_space=gym.spaces.Discrete(3),
        deterministic_eval=True,
    )


def cue_envs(num: int, seed: int, dict_obs: bool = False) -> DummyVectorEnv:
    envs = DummyVectorEnv([partial(CueRecallEnv, dict_obs=dict_obs) for _ in range(num)])
    envs.seed(seed)
    return envs


class TestMaskedSequenceUpdate:
    def test_log_probs_and_entropies_are_those_of_the_masked_distribution(self) -> None:
        torch.manual_seed(0)
        policy = cue_policy()
        buffer = VectorReplayBuffer(64, 2)
        collector = Collector(policy, cue_envs(2, 0), buffer)
        collector.reset()
        with policy_within_training_step(policy):
            collector.collect(n_step=40)  # illegal actions would raise in the env
        algorithm = RecurrentPPO(
            policy=policy, optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.0), chunk_len=3
        )
        batch, indices = buffer.sample(0)
        out = algorithm._preprocess_batch(batch, buffer, indices)
        state = {k: torch.as_tensor(v) for k, v in batch.policy.state_in.actor.items()}
        with torch.no_grad():
            logits, _ = policy.actor(batch.obs.obs, state)
        legal = torch.as_tensor(batch.obs.mask)
        masked = Categorical(logits=logits.masked_fill(~legal, -1e9))
        act = torch.as_tensor(batch.act)
        assert torch.allclose(out.logp_old, masked.log_prob(act), atol=1e-5)
        chunks = algorithm._require_chunks()
        _, entropy = algorithm._chunk_log_prob(chunks, act)
        real = chunks.rows[chunks.valid]
        assert torch.allclose(entropy[chunks.valid], masked.entropy()[real], atol=1e-5)
        # while waiting only one action is legal: it is certain, and has no entropy
        waiting = ~batch.obs.mask[:, 1]
        assert waiting.any()
        assert torch.allclose(out.logp_old[waiting], torch.zeros(int(waiting.sum())))


class TestSequenceUpdate:
    @pytest.mark.parametrize("cell", ["lstm", "gru"])
    def test_chunks_replay_the_collecting_policy_exactly(self, cell: str) -> None:
        torch.manual_seed(0)
        policy = recurrent_policy(cell)
        buffer = collected_buffer(policy)
        algorithm = RecurrentPPO(
            policy=policy,
            optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.0),
            chunk_len=5,
            max_batchsize=16,  # no-grad passes in groups of 3 chunks
        )
        batch, indices = buffer.sample(0)
        expected_log_prob, expected_values, _ = replayed_step_by_step(policy, batch)
        out = algorithm._preprocess_batch(batch, buffer, indices)
        assert torch.allclose(out.logp_old, expected_log_prob, atol=1e-5)
        assert torch.allclose(out.v_s, expected_values, atol=1e-5)

    def test_bootstrap_values_continue_the_run(self) -> None:
        torch.manual_seed(0)
        policy = recurrent_policy()
        buffer = collected_buffer(policy, steps=30, num_envs=1)
        algorithm = RecurrentA2C(policy=policy, optim=AdamOptimizerFactory(), chunk_len=4)
        batch, indices = buffer.sample(0)
        algorithm._preprocess_batch(batch, buffer, indices)
        v_s, v_next = algorithm._state_values(batch, buffer, indices)
        last = len(batch) - 1
        out_state = {
            k: torch.as_tensor(v[[last]]) for k, v in batch.policy.hidden_state.critic.items()
        }
        with torch.no_grad():
            expected_last, _ = policy.critic(batch.obs_next[[last]], out_state)
        assert v_next[last].item() == pytest.approx(expected_last.item(), abs=1e-5)
        done = batch.terminated | batch.truncated
        inside = np.flatnonzero(~done[:-1])
        assert torch.allclose(v_next[inside], v_s[inside + 1])

    def test_losses_average_over_real_steps_only(self) -> None:
        torch.manual_seed(0)
        policy = recurrent_policy()
        buffer = collected_buffer(policy)
        algorithm = RecurrentA2C(
            policy=policy,
            optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.0),
            chunk_len=7,
            ent_coef=0.01,
            vf_coef=0.5,
        )
        batch, indices = buffer.sample(0)
        log_prob, values, entropy = replayed_step_by_step(policy, batch)
        with policy_within_training_step(policy):
            stats = algorithm.update(buffer, batch_size=None, repeat=1)
        processed = algorithm._preprocess_batch(batch, buffer, indices)
        # chunks of 7 over episodes of other lengths must be padded; the padding must not count
        assert not algorithm._chunks.valid.all()
        actor_loss = -(log_prob * processed.adv).mean()
        vf_loss = (processed.returns - values).pow(2).mean()
        assert stats.actor_loss.mean == pytest.approx(actor_loss.item(), rel=1e-4, abs=1e-6)
        assert stats.vf_loss.mean == pytest.approx(vf_loss.item(), rel=1e-4)
        assert stats.ent_loss.mean == pytest.approx(entropy.mean().item(), rel=1e-5)

    def test_minibatches_are_whole_chunks(self) -> None:
        torch.manual_seed(0)
        policy = recurrent_policy()
        buffer = collected_buffer(policy)
        algorithm = RecurrentPPO(policy=policy, optim=AdamOptimizerFactory(), chunk_len=8)
        seen: list[tuple[list[int], int]] = []
        original = algorithm._sequence_step

        def recording(batch, chunks):
            first_rows = chunks.rows[:, 0].tolist()
            seen.append((first_rows, int(chunks.valid.sum())))
            return original(batch, chunks)

        algorithm._sequence_step = recording  # type: ignore[method-assign]
        with policy_within_training_step(policy):
            stats = algorithm.update(buffer, batch_size=32, repeat=2)
        num_steps = int(algorithm._chunks.valid.sum())
        # minibatches are sized in real steps, padding excluded: as many as a feed-forward pass
        assert stats.gradient_steps == len(seen) == 2 * -(-num_steps // 32)
        chunk_starts = sorted(algorithm._chunks.rows[:, 0].tolist())
        for minibatches in (seen[: len(seen) // 2], seen[len(seen) // 2 :]):
            # every chunk exactly once per pass; all but the last minibatch hold 32 +- 7 steps
            assert sorted(row for rows, _ in minibatches for row in rows) == chunk_starts
            assert all(32 - 8 < steps < 32 + 8 for _, steps in minibatches[:-1])

    def test_recompute_advantage_revalues_before_later_passes(self) -> None:
        torch.manual_seed(0)
        policy = recurrent_policy()
        buffer = collected_buffer(policy)
        algorithm = RecurrentPPO(
            policy=policy, optim=AdamOptimizerFactory(), recompute_advantage=True
        )
        calls = []
        original = algorithm._state_values

        def counting(*args, **kwargs):
            calls.append(1)
            return original(*args, **kwargs)

        algorithm._state_values = counting  # type: ignore[method-assign]
        with policy_within_training_step(policy):
            algorithm.update(buffer, batch_size=64, repeat=3)
        assert len(calls) == 3

    def test_continuous_actions_train_on_sequences(self) -> None:
        torch.manual_seed(0)
        policy = RecurrentActorCriticPolicy(
            actor=RecurrentGaussianActor(2, 1, hidden_size=8, cell="gru"),
            critic=RecurrentValueNet(2, hidden_size=8, cell="gru"),
            dist_fn=lambda loc_scale: Independent(Normal(*loc_scale), 1),
            action_space=gym.spaces.Box(-2.0, 2.0, shape=(1,)),
        )
        envs = DummyVectorEnv([pomdp_envs.pendulum_without_velocity for _ in range(2)])
        buffer = VectorReplayBuffer(64, 2)
        collector = Collector(policy, envs, buffer)
        collector.reset()
        with policy_within_training_step(policy):
            collector.collect(n_step=40)
        algorithm = RecurrentPPO(policy=policy, optim=AdamOptimizerFactory(), chunk_len=8)
        batch, indices = buffer.sample(0)
        out = algorithm._preprocess_batch(batch, buffer, indices)
        assert out.logp_old.shape == (40,)
        with policy_within_training_step(policy):
            stats = algorithm.update(buffer, batch_size=16, repeat=1)
        assert np.isfinite(stats.loss.mean)

    def test_bad_configuration_is_a_clear_error(self) -> None:
        feed_forward = DiscreteActorPolicy(
            actor=DiscreteActor(preprocess_net=Net(state_shape=2), action_shape=2),
            dist_fn=Categorical,
            action_space=gym.spaces.Discrete(2),
        )
        with pytest.raises(TypeError, match="RecurrentActorCriticPolicy"):
            RecurrentPPO(policy=feed_forward, optim=AdamOptimizerFactory())  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="chunk_len"):
            RecurrentPPO(policy=recurrent_policy(), optim=AdamOptimizerFactory(), chunk_len=0)
        with pytest.raises(TypeError, match="initial_state"):
            RecurrentActorCriticPolicy(
                actor=feed_forward.actor,
                critic=RecurrentValueNet(2),
                dist_fn=Categorical,
                action_space=gym.spaces.Discrete(2),
            )

    def test_batch_without_stored_states_is_a_clear_error(self) -> None:
        policy = recurrent_policy()
        envs = DummyVectorEnv([pomdp_envs.cartpole_without_velocities])
        buffer = VectorReplayBuffer(20, 1)
        Collector(policy, envs, buffer).collect(n_step=10, reset_before_collect=True)
        algorithm = RecurrentPPO(policy=policy, optim=AdamOptimizerFactory())
        with policy_within_training_step(policy), pytest.raises(ValueError, match="state_in"):
            algorithm.update(buffer, batch_size=None, repeat=1)


def train_on_hidden_velocity_cartpole(algorithm: PPO, seed: int, max_epochs: int) -> float:
    """Train with a small fixed budget (1024 steps per epoch); return the best test return."""
    num_envs = 8
    training_envs = DummyVectorEnv(
        [pomdp_envs.cartpole_without_velocities for _ in range(num_envs)]
    )
    test_envs = DummyVectorEnv([pomdp_envs.cartpole_without_velocities for _ in range(10)])
    training_envs.seed(seed)
    test_envs.seed(seed + 100)
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(
                algorithm, training_envs, VectorReplayBuffer(1024 + num_envs, num_envs)
            ),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=1024,
            collection_step_num_env_steps=1024,
            update_step_num_repetitions=4,
            batch_size=256,
            test_step_num_episodes=10,
            stop_fn=lambda mean_return: mean_return >= 195.0,
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


@pytest.mark.usefixtures("single_thread")
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_ppo_solves_cartpole_without_velocities(cell: str) -> None:
    torch.manual_seed(0)
    policy = recurrent_policy(cell, hidden_size=64)
    algorithm = RecurrentPPO(
        policy=policy, optim=AdamOptimizerFactory(lr=3e-3), ent_coef=0.0, max_grad_norm=0.5
    )
    assert train_on_hidden_velocity_cartpole(algorithm, seed=0, max_epochs=30) >= 195.0


@pytest.mark.usefixtures("single_thread")
def test_feed_forward_ppo_fails_cartpole_without_velocities() -> None:
    torch.manual_seed(0)
    policy = DiscreteActorPolicy(
        actor=DiscreteActor(
            preprocess_net=Net(state_shape=2, hidden_sizes=[64, 64]), action_shape=2
        ),
        dist_fn=Categorical,
        action_space=gym.spaces.Discrete(2),
        deterministic_eval=True,
    )
    critic = DiscreteCritic(preprocess_net=Net(state_shape=2, hidden_sizes=[64, 64]))
    algorithm = PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=3e-3),
        ent_coef=0.0,
        max_grad_norm=0.5,
    )
    # the same budget as the recurrent test; without memory the pole cannot be balanced
    assert train_on_hidden_velocity_cartpole(algorithm, seed=0, max_epochs=30) < 120.0


def cue_recall_return(algorithm: PPO, dict_obs: bool = False) -> float:
    collector = Collector(algorithm, cue_envs(10, 1, dict_obs))
    collector.reset()
    return float(collector.collect(n_episode=50).returns.mean())


def train_on_cue_recall(algorithm: PPO, max_epochs: int, dict_obs: bool = False) -> float:
    """Best test return (50 episodes) of PPO trained on the masked memory task."""
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(
                algorithm, cue_envs(8, 0, dict_obs), VectorReplayBuffer(512, 8)
            ),
            test_collector=Collector(algorithm, cue_envs(10, 2, dict_obs)),
            max_epochs=max_epochs,
            epoch_num_steps=1024,
            collection_step_num_env_steps=256,
            update_step_num_repetitions=4,
            batch_size=64,
            test_step_num_episodes=50,
            stop_fn=lambda mean_return: mean_return >= 0.98,
            show_progress=False,
            verbose=False,
        )
    )
    return result.best_reward


@pytest.mark.usefixtures("single_thread")
@pytest.mark.parametrize("dict_obs", [False, True])
def test_recurrent_ppo_solves_the_masked_memory_task(dict_obs: bool) -> None:
    torch.manual_seed(0)
    algorithm = RecurrentPPO(
        policy=cue_policy(hidden_size=32, dict_obs=dict_obs),
        optim=AdamOptimizerFactory(lr=3e-3),
        chunk_len=8,
    )
    assert cue_recall_return(algorithm, dict_obs) <= 0.75
    assert train_on_cue_recall(algorithm, max_epochs=4, dict_obs=dict_obs) >= 0.98
    assert cue_recall_return(algorithm, dict_obs) >= 0.98


@pytest.mark.usefixtures("single_thread")
def test_feed_forward_ppo_cannot_recall_the_cue() -> None:
    torch.manual_seed(0)
    policy = DiscreteActorPolicy(
        actor=DiscreteActor(preprocess_net=Net(state_shape=3, hidden_sizes=[32]), action_shape=3),
        dist_fn=Categorical,
        action_space=gym.spaces.Discrete(3),
        deterministic_eval=True,
    )
    algorithm = PPO(
        policy=policy,
        critic=DiscreteCritic(preprocess_net=Net(state_shape=3, hidden_sizes=[32])),
        optim=AdamOptimizerFactory(lr=3e-3),
    )
    assert train_on_cue_recall(algorithm, max_epochs=2) <= 0.75
