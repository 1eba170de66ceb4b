"""Resume at every point, for every algorithm family: a run interrupted after any epoch and
resumed from its checkpoint ends bit-identical to the uninterrupted run.

The checkpoint holds the algorithm as its ``state_dict`` (networks, optimizers, learning-rate
schedules, running statistics, update counters: what ``Algorithm.load_state_dict`` restores into
a freshly built algorithm), the collectors pickled with their envs and buffers, and the global
random states. The families exercise what resuming has got wrong before: return scaling and a
decaying learning rate (PPO), delayed actor updates and target copies (TD3), stored recurrent
states (recurrent PPO), and a fixed data set (offline TD3+BC). A state the ``state_dict`` drops
shows up as a differing tensor, named by its key.
"""

import io
import pickle
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch.utils.tensorboard import SummaryWriter

from test.algorithm.modelfree.test_recurrent_ppo import recurrent_policy
from test.trainer.test_resume import assert_same_tensors
from tianshou.algorithm import PPO, TD3, TD3BC
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.ddpg import ContinuousDeterministicPolicy
from tianshou.algorithm.modelfree.recurrent_ppo import RecurrentPPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, LRSchedulerFactoryLinear
from tianshou.data import Collector, ReplayBuffer, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, VectorEnvNormObs, pomdp
from tianshou.exploration import GaussianNoise
from tianshou.trainer import OfflineTrainerParams, OffPolicyTrainerParams, OnPolicyTrainerParams
from tianshou.trainer.params import TrainerParams
from tianshou.utils import TensorboardLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorDeterministic, ContinuousCritic
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic
from tianshou.utils.torch_utils import torch_threads

EPOCHS = 3
EPOCH_STEPS = 128


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def envs(make: Callable[[], gym.Env], num: int, seed: int) -> DummyVectorEnv:
    venv = DummyVectorEnv([make for _ in range(num)])
    venv.seed(seed)
    return venv


@dataclass
class Run:
    """One family's algorithm, collectors and trainer settings."""

    algorithm: Algorithm
    training: Collector | None
    test: Collector
    params: Callable[..., TrainerParams]
    data: ReplayBuffer | None = None


def ppo_run() -> Run:
    training_envs = VectorEnvNormObs(envs(lambda: gym.make("CartPole-v1"), 4, 7))
    test_envs = VectorEnvNormObs(envs(lambda: gym.make("CartPole-v1"), 2, 8), update_obs_rms=False)
    test_envs.set_obs_rms(training_envs.get_obs_rms())
    optim = AdamOptimizerFactory(lr=1e-3)
    optim.with_lr_scheduler_factory(LRSchedulerFactoryLinear(EPOCHS, EPOCH_STEPS, EPOCH_STEPS // 2))
    algorithm = PPO(
        policy=DiscreteActorPolicy(
            actor=DiscreteActor(
                preprocess_net=Net(state_shape=4, hidden_sizes=[16]), action_shape=2
            ),
            dist_fn=torch.distributions.Categorical,
            action_space=gym.spaces.Discrete(2),
        ),
        critic=DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=[16])),
        optim=optim,
        return_scaling=True,
    )

    def params(**kwargs: Any) -> TrainerParams:
        return OnPolicyTrainerParams(
            collection_step_num_env_steps=EPOCH_STEPS // 2,
            update_step_num_repetitions=2,
            batch_size=32,
            **kwargs,
        )

    training = Collector(algorithm, training_envs, VectorReplayBuffer(EPOCH_STEPS, 4))
    return Run(algorithm, training, Collector(algorithm, test_envs), params)


def td3_run() -> Run:
    space = gym.make("Pendulum-v1").action_space

    def critic() -> ContinuousCritic:
        return ContinuousCritic(
            preprocess_net=Net(state_shape=3, action_shape=1, hidden_sizes=[16], concat=True)
        )

    actor = ContinuousActorDeterministic(
        preprocess_net=Net(state_shape=3, hidden_sizes=[16]), action_shape=1, max_action=2.0
    )
    adam = AdamOptimizerFactory(lr=1e-3)
    algorithm = TD3(
        policy=ContinuousDeterministicPolicy(
            actor=actor, exploration_noise=GaussianNoise(sigma=0.1), action_space=space
        ),
        policy_optim=adam,
        critic=critic(),
        critic_optim=adam,
        critic2=critic(),
        critic2_optim=adam,
        update_actor_freq=3,  # a counter that spans the interruption
    )

    def params(**kwargs: Any) -> TrainerParams:
        return OffPolicyTrainerParams(
            collection_step_num_env_steps=8,
            update_step_num_gradient_steps_per_sample=0.5,
            batch_size=16,
            **kwargs,
        )

    training = Collector(
        algorithm,
        envs(lambda: gym.make("Pendulum-v1"), 2, 7),
        VectorReplayBuffer(500, 2),
        exploration_noise=True,
    )
    return Run(
        algorithm,
        training,
        Collector(algorithm, envs(lambda: gym.make("Pendulum-v1"), 2, 8)),
        params,
    )


def recurrent_ppo_run() -> Run:
    algorithm = RecurrentPPO(
        policy=recurrent_policy(), optim=AdamOptimizerFactory(lr=1e-3), chunk_len=8
    )

    def params(**kwargs: Any) -> TrainerParams:
        return OnPolicyTrainerParams(
            collection_step_num_env_steps=EPOCH_STEPS // 2,
            update_step_num_repetitions=2,
            batch_size=32,
            **kwargs,
        )

    make = pomdp.cartpole_without_velocities
    training = Collector(algorithm, envs(make, 2, 7), VectorReplayBuffer(EPOCH_STEPS, 2))
    return Run(algorithm, training, Collector(algorithm, envs(make, 2, 8)), params)


def td3_bc_run() -> Run:
    run = td3_run()
    base = run.algorithm
    assert isinstance(base, TD3)
    collector = Collector(
        base, envs(lambda: gym.make("Pendulum-v1"), 2, 3), VectorReplayBuffer(400, 2)
    )
    collector.reset()
    collector.collect(n_step=300, random=True)  # the data set, fixed before training
    data = ReplayBuffer.from_data(**{k: collector.buffer[:][k] for k in _DATA_KEYS})
    adam = AdamOptimizerFactory(lr=1e-3)
    algorithm = TD3BC(
        policy=base.policy,
        policy_optim=adam,
        critic=base.critic,
        critic_optim=adam,
        critic2=base.critic2,
        critic2_optim=adam,
        update_actor_freq=3,
    )

    def params(**kwargs: Any) -> TrainerParams:
        return OfflineTrainerParams(buffer=data, batch_size=16, **kwargs)

    return Run(
        algorithm,
        None,
        Collector(algorithm, envs(lambda: gym.make("Pendulum-v1"), 2, 8)),
        params,
        data,
    )


_DATA_KEYS = ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next")

FAMILIES: dict[str, Callable[[], Run]] = {
    "ppo-return-scaling-lr-decay": ppo_run,
    "td3-delayed-actor-targets": td3_run,
    "recurrent-ppo": recurrent_ppo_run,
    "offline-td3-bc": td3_bc_run,
}


def trainer_params(run: Run, max_epochs: int, **kwargs: Any) -> TrainerParams:
    settings: dict[str, Any] = {
        "test_collector": run.test,
        "max_epochs": max_epochs,
        "epoch_num_steps": EPOCH_STEPS,
        "test_step_num_episodes": 2,
        "show_progress": False,
        "verbose": False,
    }
    if run.training is not None:
        settings["training_collector"] = run.training
    return run.params(**settings, **kwargs)


def build(family: str, seed: int) -> Run:
    seed_all(seed)
    return FAMILIES[family]()


def state_bytes(algorithm: Algorithm) -> bytes:
    buffer = io.BytesIO()
    torch.save(algorithm.state_dict(), buffer)
    return buffer.getvalue()


@pytest.mark.parametrize("interrupted_after", [1, 2])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_resumed_run_ends_bit_identical_to_the_uninterrupted_one(
    family: str, interrupted_after: int, tmp_path: Path
) -> None:
    with torch_threads(1):
        expected = build(family, seed=7)
        expected.algorithm.run_training(trainer_params(expected, EPOCHS))

        first = build(family, seed=7)
        log_dir = str(tmp_path / "log")

        def save_checkpoint_fn(epoch: int, env_step: int, gradient_step: int) -> str:
            path = tmp_path / f"epoch_{epoch}.pkl"
            collectors = pickle.dumps((first.training, first.test, first.data))
            randomness = (random.getstate(), np.random.get_state(), torch.get_rng_state())
            path.write_bytes(pickle.dumps((state_bytes(first.algorithm), collectors, randomness)))
            return str(path)

        first.algorithm.run_training(
            trainer_params(
                first,
                interrupted_after,
                logger=TensorboardLogger(SummaryWriter(log_dir)),
                save_checkpoint_fn=save_checkpoint_fn,
            )
        )

        # a new process: a freshly built algorithm (other initial weights) takes the saved state
        resumed = build(family, seed=1234)
        saved_state, collectors, randomness = pickle.loads(
            (tmp_path / f"epoch_{interrupted_after}.pkl").read_bytes()
        )
        resumed.algorithm.load_state_dict(torch.load(io.BytesIO(saved_state), weights_only=True))
        resumed.training, resumed.test, resumed.data = pickle.loads(collectors)
        for collector in (resumed.training, resumed.test):
            if collector is not None:
                collector.policy = resumed.algorithm.policy
        if resumed.data is not None:
            resumed.params = _with_data(resumed.params, resumed.data)
        random.setstate(randomness[0])
        np.random.set_state(randomness[1])
        torch.set_rng_state(randomness[2])
        trainer = resumed.algorithm.create_trainer(
            trainer_params(
                resumed,
                EPOCHS,
                logger=TensorboardLogger(SummaryWriter(log_dir)),
                resume_from_log=True,
            )
        )
        trainer.run(reset_collectors=False)

    resumed_state, expected_state = resumed.algorithm.state_dict(), expected.algorithm.state_dict()
    assert_same_tensors(resumed_state, expected_state)
    # the running statistics and counters ride in the state's metadata
    assert_same_tensors(
        getattr(resumed_state, "_metadata", {}),
        getattr(expected_state, "_metadata", {}),
        "metadata",
    )
    if expected.training is not None:
        assert resumed.training is not None
        for key in ("obs", "act", "rew"):
            np.testing.assert_array_equal(
                getattr(resumed.training.buffer, key), getattr(expected.training.buffer, key)
            )


def _with_data(
    params: Callable[..., TrainerParams], data: ReplayBuffer
) -> Callable[..., TrainerParams]:
    def with_data(**kwargs: Any) -> TrainerParams:
        made = params(**kwargs)
        assert isinstance(made, OfflineTrainerParams)
        made.buffer = data
        return made

    return with_data
