"""Determinism snapshot tests: each algorithm trained twice with the same seed leaves the same
trace (every collection, every update's parameter hash, every epoch's counters), and a changed
seed or learning rate is caught at the right line.

References are created inside each test (in ``tmp_path``) rather than committed: the parameter
hashes are bitwise float results, which may differ between CPUs and torch builds.
"""

from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.a2c import A2C
from tianshou.algorithm.modelfree.ddpg import DDPG, ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.ppo import PPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy, Reinforce
from tianshou.algorithm.modelfree.sac import SAC, SACPolicy
from tianshou.algorithm.modelfree.td3 import TD3
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.exploration import GaussianNoise
from tianshou.trainer import OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.utils.determinism import (
    TraceDeterminismTest,
    TraceLog,
    TraceLoggerContext,
)
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import (
    ContinuousActorDeterministic,
    ContinuousActorProbabilistic,
    ContinuousCritic,
)
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

HIDDEN = [16, 16]
UPDATE_MESSAGE = "update on"


def cartpole_body() -> Net:
    return Net(state_shape=4, hidden_sizes=HIDDEN)


def pendulum_critic() -> ContinuousCritic:
    return ContinuousCritic(
        preprocess_net=Net(state_shape=3, action_shape=1, hidden_sizes=HIDDEN, concat=True)
    )


def pendulum_deterministic_policy(space: gym.Space) -> ContinuousDeterministicPolicy:
    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=3, hidden_sizes=HIDDEN), action_shape=1, max_action=2.0
    )
    return ContinuousDeterministicPolicy(
        actor=actor, exploration_noise=GaussianNoise(sigma=0.2), action_space=space
    )


def build_reinforce(space: gym.Space, lr: float) -> Algorithm:
    actor = DiscreteActor(preprocess_net=cartpole_body(), action_shape=2)
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=space
    )
    return Reinforce(policy=policy, optim=AdamOptimizerFactory(lr=lr))


def build_a2c(space: gym.Space, lr: float) -> Algorithm:
    actor = DiscreteActor(preprocess_net=cartpole_body(), action_shape=2)
    critic = DiscreteCritic(preprocess_net=cartpole_body())
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=space
    )
    return A2C(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=lr))


def build_ppo(space: gym.Space, lr: float) -> Algorithm:
    actor = DiscreteActor(preprocess_net=cartpole_body(), action_shape=2)
    critic = DiscreteCritic(preprocess_net=cartpole_body())
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=torch.distributions.Categorical, action_space=space
    )
    return PPO(policy=policy, critic=critic, optim=AdamOptimizerFactory(lr=lr))


def build_dqn(space: gym.Space, lr: float) -> Algorithm:
    net = Net(state_shape=4, action_shape=2, hidden_sizes=HIDDEN)
    policy = DiscreteQLearningPolicy(model=net, action_space=space, eps_training=0.3)
    return DQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=lr),
        n_step_return_horizon=3,
        target_update_freq=20,
    )


def build_ddpg(space: gym.Space, lr: float) -> Algorithm:
    return DDPG(
        policy=pendulum_deterministic_policy(space),
        policy_optim=AdamOptimizerFactory(lr=lr),
        critic=pendulum_critic(),
        critic_optim=AdamOptimizerFactory(lr=lr),
    )


def build_td3(space: gym.Space, lr: float) -> Algorithm:
    return TD3(
        policy=pendulum_deterministic_policy(space),
        policy_optim=AdamOptimizerFactory(lr=lr),
        critic=pendulum_critic(),
        critic_optim=AdamOptimizerFactory(lr=lr),
        critic2=pendulum_critic(),
        critic2_optim=AdamOptimizerFactory(lr=lr),
    )


def build_sac(space: gym.Space, lr: float) -> Algorithm:
    actor = ContinuousActorProbabilistic(
        preprocess_net=Net(state_shape=3, hidden_sizes=HIDDEN),
        action_shape=1,
        unbounded=True,
        conditioned_sigma=True,
    )
    return SAC(
        policy=SACPolicy(actor=actor, action_space=space),
        policy_optim=AdamOptimizerFactory(lr=lr),
        critic=pendulum_critic(),
        critic_optim=AdamOptimizerFactory(lr=lr),
        critic2=pendulum_critic(),
        critic2_optim=AdamOptimizerFactory(lr=lr),
    )


@dataclass(frozen=True)
class Case:
    """An algorithm, the task it trains on for the test, and whether it learns on-policy."""

    build: Callable[[gym.Space, float], Algorithm]
    task: str
    on_policy: bool


CASES = {
    "reinforce": Case(build_reinforce, "CartPole-v1", on_policy=True),
    "a2c": Case(build_a2c, "CartPole-v1", on_policy=True),
    "ppo": Case(build_ppo, "CartPole-v1", on_policy=True),
    "dqn": Case(build_dqn, "CartPole-v1", on_policy=False),
    "ddpg": Case(build_ddpg, "Pendulum-v1", on_policy=False),
    "td3": Case(build_td3, "Pendulum-v1", on_policy=False),
    "sac": Case(build_sac, "Pendulum-v1", on_policy=False),
}


def train_traced(name: str, seed: int = 0, lr: float = 1e-3) -> TraceLog:
    """Train algorithm ``name`` for one epoch of 200 env steps and return its trace."""
    case = CASES[name]
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs = DummyVectorEnv([lambda: gym.make(case.task) for _ in range(2)])
    test_envs = DummyVectorEnv([lambda: gym.make(case.task)])
    training_envs.seed(seed)
    test_envs.seed(seed + 100)
    algorithm = case.build(training_envs.action_space[0], lr)
    training_collector = Collector(
        algorithm, training_envs, VectorReplayBuffer(1000, 2), exploration_noise=True
    )
    test_collector = Collector(algorithm, test_envs)
    common = {
        "training_collector": training_collector,
        "test_collector": test_collector,
        "max_epochs": 1,
        "epoch_num_steps": 200,
        "test_step_num_episodes": 1,
        "show_progress": False,
        "verbose": False,
    }
    params: OnPolicyTrainerParams | OffPolicyTrainerParams
    if case.on_policy:
        params = OnPolicyTrainerParams(
            collection_step_num_env_steps=100,
            batch_size=64,
            update_step_num_repetitions=2,
            **common,
        )
    else:
        params = OffPolicyTrainerParams(
            collection_step_num_env_steps=20,
            batch_size=32,
            update_step_num_gradient_steps_per_sample=0.25,
            **common,
        )
    with TraceLoggerContext() as trace:
        algorithm.run_training(params)
    return trace.get_log()


def naive_first_difference(
    expected: list[str], actual: list[str]
) -> tuple[int, str | None, str | None]:
    """(1-based line, expected line, actual line) of the first mismatch, by plain iteration."""
    line = 1
    while line <= max(len(expected), len(actual)):
        exp = expected[line - 1] if line <= len(expected) else None
        act = actual[line - 1] if line <= len(actual) else None
        if exp != act:
            return line, exp, act
        line += 1
    raise AssertionError("the logs are equal")


@pytest.mark.parametrize("name", list(CASES))
def test_training_twice_with_one_seed_leaves_the_same_trace(name: str, tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    first = train_traced(name)
    snapshot.check(first, name, create_reference_result=True)
    result = snapshot.check(train_traced(name), name)
    assert result.success and result.first_difference is None
    updates = first.filter_messages(required_messages=[UPDATE_MESSAGE]).log_lines
    # each update left a parameter hash, and training moved the parameters
    assert len(updates) >= 2
    assert len({line.rsplit(" ", 1)[1] for line in updates}) == len(updates)
    assert "training starts at epoch 0: parameters" in first.log_lines[0]
    assert any("collected" in line for line in first.log_lines)
    assert "epoch 1 done: env_step=200" in first.log_lines[-1]


def test_a_different_seed_is_reported_at_its_first_difference(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    reference = train_traced("dqn", seed=0)
    snapshot.check(reference, "dqn", create_reference_result=True)
    perturbed = train_traced("dqn", seed=1)
    line, expected, actual = naive_first_difference(reference.log_lines, perturbed.log_lines)
    with pytest.raises(AssertionError) as failure:
        snapshot.check(perturbed, "dqn")
    assert f"first difference at line {line}: expected {expected!r}, got {actual!r}" in str(
        failure.value
    )
    # the seed changes the initial weights, traced before anything else
    assert line == 1 and "training starts at epoch 0: parameters" in str(expected)


def test_a_different_learning_rate_first_shows_in_the_first_update(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path, log_filename="results.log")
    reference = train_traced("ppo", lr=1e-3)
    snapshot.check(reference, "ppo", create_reference_result=True)
    with pytest.raises(AssertionError, match="core messages changed as well"):
        snapshot.check(train_traced("ppo", lr=2e-3), "ppo")
    first_update = next(
        index for index, line in enumerate(reference.log_lines) if UPDATE_MESSAGE in line
    )
    results = (tmp_path / "results.log").read_text().splitlines()
    assert results[0] == "ppo: reference created"
    assert results[1].startswith(f"ppo: FAILED, first difference at line {first_update + 1}: ")
    assert "parameters" in results[1]
