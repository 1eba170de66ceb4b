"""Next values reusing the values of equal observations (tianshou/algorithm/_next_values.py)."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm import PPO
from tianshou.algorithm._next_values import next_values, successor_rows
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Batch, Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import policy_within_training_step


def cartpole_ppo_and_rollout(
    num_envs: int = 3, steps: int = 600, recompute_advantage: bool = False
) -> tuple[PPO, VectorReplayBuffer]:
    torch.manual_seed(0)
    envs = DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(num_envs)])
    envs.seed(0)
    actor = DiscreteActor(preprocess_net=Net(state_shape=4, hidden_sizes=[16]), action_shape=2)
    critic = DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=[16]))
    policy = DiscreteActorPolicy(
        actor=actor, action_space=envs.action_space[0], dist_fn=torch.distributions.Categorical
    )
    algorithm = PPO(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(),
        recompute_advantage=recompute_advantage,
    )
    buffer = VectorReplayBuffer(2 * steps, num_envs)
    collector = Collector(policy, envs, buffer)
    collector.reset()
    collector.collect(n_step=steps)
    return algorithm, buffer


def test_values_equal_evaluating_every_next_observation() -> None:
    algorithm, buffer = cartpole_ppo_and_rollout()
    batch, indices = buffer.sample(0)
    values, next_vals = algorithm._state_values(batch, buffer, indices)
    with torch.no_grad():
        expected_values = algorithm._values(batch.obs)
        expected_next = algorithm._values(batch.obs_next)
    terminated = np.asarray(batch.terminated)
    assert terminated.any() and not terminated.all()
    torch.testing.assert_close(values, expected_values)
    torch.testing.assert_close(next_vals[~terminated], expected_next[~terminated])
    # a terminated row's next value is never used (GAE zeroes it): it is not computed
    assert torch.all(next_vals[terminated] == 0)


def test_the_critic_sees_only_new_next_observations() -> None:
    algorithm, buffer = cartpole_ppo_and_rollout(num_envs=3)
    batch, indices = buffer.sample(0)
    rows = successor_rows(batch.obs, batch.obs_next, buffer, indices)
    assert rows is not None
    terminated = np.asarray(batch.terminated)
    fresh = (rows < 0) & ~terminated
    # the newest steps of running episodes and the truncated steps are the only new ones
    running = np.isin(indices, buffer.unfinished_index())
    assert running.any()
    np.testing.assert_array_equal(fresh, running | np.asarray(batch.truncated))
    seen: list[int] = []
    critic_forward = algorithm.critic.forward

    def counting_forward(obs: np.ndarray, *args: object, **kwargs: object) -> torch.Tensor:
        seen.append(len(obs))
        return critic_forward(obs, *args, **kwargs)

    algorithm.critic.forward = counting_forward
    algorithm._state_values(batch, buffer, indices)
    assert sum(seen) == len(batch) + fresh.sum()


def test_rows_are_matched_by_content_not_by_position() -> None:
    obs = np.arange(12, dtype=np.float32).reshape(6, 2)
    obs_next = obs[[1, 2, 3, 4, 5, 0]].copy()
    obs_next[2] += 100.0  # not the next row's observation, though the buffer says it follows
    buffer = ReplayBuffer.from_data(
        obs=obs,
        act=np.zeros(6),
        rew=np.zeros(6),
        terminated=np.zeros(6, dtype=bool),
        truncated=np.array([False, False, False, True, False, False]),
        done=np.array([False, False, False, True, False, False]),
        obs_next=obs_next,
    )
    batch, indices = buffer.sample(0)
    rows = successor_rows(batch.obs, batch.obs_next, buffer, indices)
    # row 3 ends an episode (its successor is itself), row 5 is the newest step
    np.testing.assert_array_equal(rows, [1, 2, -1, -1, 5, -1])


def test_values_of_new_rows_come_from_the_critic_and_terminated_rows_stay_zero() -> None:
    values = torch.tensor([1.0, 2.0, 3.0, 4.0])
    rows = np.array([1, -1, -1, -1])
    terminated = np.array([False, False, True, False])
    obs_next = np.array([[0.0], [10.0], [20.0], [30.0]])
    result = next_values(
        values, obs_next, rows, terminated, lambda o: torch.as_tensor(o[:, 0] + 0.5).float()
    )
    torch.testing.assert_close(result, torch.tensor([2.0, 10.5, 0.0, 30.5]))


def test_structured_or_mismatched_observations_reuse_nothing() -> None:
    buffer = ReplayBuffer(4)
    indices = np.arange(2)
    structured = Batch(a=np.zeros((2, 1)))
    assert successor_rows(structured, structured, buffer, indices) is None
    assert successor_rows(np.zeros((2, 1)), np.zeros((2, 2)), buffer, indices) is None
    float32, float64 = np.zeros((2, 1), np.float32), np.zeros((2, 1), np.float64)
    assert successor_rows(float32, float64, buffer, indices) is None


def test_ppo_matches_the_rows_once_per_update(monkeypatch: pytest.MonkeyPatch) -> None:
    import tianshou.algorithm.modelfree.a2c as a2c_module

    algorithm, buffer = cartpole_ppo_and_rollout(recompute_advantage=True)
    calls: list[int] = []

    def counting(*args: object) -> np.ndarray | None:
        calls.append(1)
        return successor_rows(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(a2c_module, "successor_rows", counting)
    with policy_within_training_step(algorithm.policy):
        algorithm.update(buffer, batch_size=64, repeat=3)
        assert len(calls) == 1
        algorithm.update(buffer, batch_size=64, repeat=3)
    assert len(calls) == 2
