"""Tests of the trainer callbacks, called by a real trainer through training_fn/test_fn/stop_fn."""

import numpy as np
import pytest
import torch
from torch.distributions import Categorical

from tianshou.algorithm.modelfree.dqn import DQN, DiscreteQLearningPolicy
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy, Reinforce
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, CollectStats, VectorReplayBuffer
from tianshou.highlevel.env import Environments
from tianshou.highlevel.trainer import (
    EpochStopCallback,
    EpochStopCallbackRewardThreshold,
    EpochTestCallback,
    EpochTestCallbackDQNSetEps,
    EpochTrainCallbackDQNEpsLinearDecay,
    EpochTrainCallbackDQNSetEps,
    TrainerCallbacks,
    TrainingContext,
)
from tianshou.trainer import OffPolicyTrainerParams
from tianshou.utils.logger import LazyLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor


class RecordingLogger(LazyLogger):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[str, int, dict]] = []

    def write(self, step_type: str, step: int, data: dict) -> None:
        self.writes.append((step_type, step, data))


class RecordingTestCallback(EpochTestCallback):
    def __init__(self) -> None:
        self.eps_seen: list[float] = []
        self.calls: list[tuple[int, int | None]] = []

    def callback(self, epoch: int, env_step: int | None, context: TrainingContext) -> None:
        self.calls.append((epoch, env_step))
        self.eps_seen.append(context.algorithm.policy.eps_inference)


class RecordingStopCallback(EpochStopCallback):
    def __init__(self) -> None:
        self.scores: list[float] = []

    def should_stop(self, mean_rewards: float, context: TrainingContext) -> bool:
        self.scores.append(mean_rewards)
        return len(self.scores) >= 2


def make_dqn(envs: Environments) -> DQN:
    net = Net(state_shape=envs.get_observation_shape(), action_shape=2, hidden_sizes=[16])
    policy = DiscreteQLearningPolicy(model=net, action_space=envs.get_action_space())
    return DQN(policy=policy, optim=AdamOptimizerFactory(lr=1e-3))


def run(envs: Environments, algorithm: DQN, callbacks: TrainerCallbacks, logger: LazyLogger) -> int:
    """Train for at most 3 epochs of 40 env steps with the callbacks; returns the epochs run."""
    context = TrainingContext(algorithm, envs, logger)
    buffer = VectorReplayBuffer(500, len(envs.training_envs))
    training_collector = Collector[CollectStats](
        algorithm, envs.training_envs, buffer, exploration_noise=True
    )
    test_collector = Collector[CollectStats](algorithm, envs.test_envs)
    assert callbacks.epoch_train_callback is not None
    assert callbacks.epoch_test_callback is not None
    assert callbacks.epoch_stop_callback is not None
    result = algorithm.run_training(
        OffPolicyTrainerParams(
            training_collector=training_collector,
            test_collector=test_collector,
            max_epochs=3,
            epoch_num_steps=40,
            collection_step_num_env_steps=20,
            test_step_num_episodes=2,
            batch_size=16,
            training_fn=callbacks.epoch_train_callback.get_trainer_fn(context),
            test_fn=callbacks.epoch_test_callback.get_trainer_fn(context),
            stop_fn=callbacks.epoch_stop_callback.get_trainer_fn(context),
            logger=logger,
            show_progress=False,
            verbose=False,
        )
    )
    return result.train_step // 40


def test_callbacks_run_inside_a_real_trainer(cartpole: Environments) -> None:
    algorithm = make_dqn(cartpole)
    logger = RecordingLogger()
    test_callback, stop_callback = RecordingTestCallback(), RecordingStopCallback()

    class SetEpsThenRecord(EpochTestCallback):
        def callback(self, epoch: int, env_step: int | None, context: TrainingContext) -> None:
            EpochTestCallbackDQNSetEps(0.05).callback(epoch, env_step, context)
            test_callback.callback(epoch, env_step, context)

    callbacks = TrainerCallbacks(
        epoch_train_callback=EpochTrainCallbackDQNEpsLinearDecay(0.9, 0.1, decay_steps=80),
        epoch_test_callback=SetEpsThenRecord(),
        epoch_stop_callback=stop_callback,
    )
    epochs = run(cartpole, algorithm, callbacks, logger)
    assert epochs == 2, "the stop callback stopped training at its second call"
    assert len(stop_callback.scores) == 2
    assert test_callback.eps_seen and set(test_callback.eps_seen) == {0.05}
    eps_writes = [(step, data["eps"]) for step_type, step, data in logger.writes if "eps" in data]
    assert [step_type for step_type, _, data in logger.writes if "eps" in data] == [
        "training/env_step"
    ] * len(eps_writes)
    assert eps_writes[0] == (0, 0.9)
    assert len(eps_writes) >= 3
    assert [step for step, _ in eps_writes] == sorted({step for step, _ in eps_writes})
    for step, eps in eps_writes:
        assert eps == pytest.approx(max(0.9 - 0.8 * step / 80, 0.1))
    assert algorithm.policy.eps_training == pytest.approx(eps_writes[-1][1])


def test_linear_decay_stays_at_the_final_rate() -> None:
    callback = EpochTrainCallbackDQNEpsLinearDecay(1.0, 0.1, decay_steps=100)
    assert callback.eps_at(0) == 1.0
    assert callback.eps_at(50) == pytest.approx(0.55)
    assert callback.eps_at(100) == pytest.approx(0.1)
    assert callback.eps_at(10_000) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="decay_steps must be positive, got 0"):
        EpochTrainCallbackDQNEpsLinearDecay(1.0, 0.1, decay_steps=0)


def test_set_eps_callbacks(cartpole: Environments) -> None:
    algorithm = make_dqn(cartpole)
    context = TrainingContext(algorithm, cartpole, LazyLogger())
    EpochTrainCallbackDQNSetEps(0.3).get_trainer_fn(context)(1, 0)
    EpochTestCallbackDQNSetEps(0.02).get_trainer_fn(context)(1, None)
    assert (algorithm.policy.eps_training, algorithm.policy.eps_inference) == (0.3, 0.02)
    assert str(EpochTrainCallbackDQNSetEps(0.3)) == "EpochTrainCallbackDQNSetEps[eps=0.3]"


def test_eps_callbacks_name_the_unsuitable_policy(cartpole: Environments) -> None:
    actor = DiscreteActor(preprocess_net=Net(state_shape=4, hidden_sizes=[8]), action_shape=2)
    policy = DiscreteActorPolicy(
        actor=actor, dist_fn=Categorical, action_space=cartpole.get_action_space()
    )
    algorithm = Reinforce(policy=policy, optim=AdamOptimizerFactory())
    context = TrainingContext(algorithm, cartpole, LazyLogger())
    with pytest.raises(TypeError, match=r"set_eps_training.*DiscreteActorPolicy"):
        EpochTrainCallbackDQNSetEps(0.1).callback(1, 0, context)


def test_reward_threshold_from_argument_or_env_spec(cartpole: Environments) -> None:
    context = TrainingContext(make_dqn(cartpole), cartpole, LazyLogger())
    stop = EpochStopCallbackRewardThreshold(10.0).get_trainer_fn(context)
    assert stop(10.0) and not stop(9.9)
    spec_stop = EpochStopCallbackRewardThreshold().get_trainer_fn(context)
    assert cartpole.env.spec is not None
    assert cartpole.env.spec.reward_threshold == 475.0
    assert spec_stop(475.0) and not spec_stop(474.0)


def test_reward_threshold_without_spec_threshold(pendulum: Environments) -> None:
    context = TrainingContext(torch.nn.Linear(1, 1), pendulum, LazyLogger())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Pendulum-v1 declares no spec.reward_threshold"):
        EpochStopCallbackRewardThreshold().should_stop(0.0, context)


def test_reward_threshold_stops_a_real_trainer(cartpole: Environments) -> None:
    callbacks = TrainerCallbacks(
        epoch_train_callback=EpochTrainCallbackDQNSetEps(0.1),
        epoch_test_callback=EpochTestCallbackDQNSetEps(0.0),
        epoch_stop_callback=EpochStopCallbackRewardThreshold(threshold=-np.inf),
    )
    assert run(cartpole, make_dqn(cartpole), callbacks, LazyLogger()) <= 1
