"""Checkpoint and resume with a real algorithm: an interrupted run continues exactly.

PPO trains on CartPole-v1 behind ``VectorEnvNormObs`` for three epochs without interruption. A
second run with the same seed stops after epoch two; its ``save_checkpoint_fn`` pickles the
training state (algorithm with optimizers, collectors with their envs, buffer and observation
statistics, and the global random states). A third run loads that checkpoint and resumes with
``resume_from_log=True``. It must end with exactly the parameters, optimizer states, buffer,
observation statistics and counters of the uninterrupted run.
"""

import pickle
import random
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch.utils.tensorboard import SummaryWriter

from tianshou.algorithm import PPO
from tianshou.algorithm.modelfree.reinforce import DiscreteActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, InfoStats, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, VectorEnvNormObs
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils import TensorboardLogger
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import DiscreteActor, DiscreteCritic

EPOCH_STEPS = 512
ENVS = 4


def build(seed: int) -> tuple[PPO, Collector, Collector]:
    """Algorithm and collectors, seeded; test envs share the training envs' statistics."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    space = gym.make("CartPole-v1").action_space
    training_envs = VectorEnvNormObs(
        DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(ENVS)])
    )
    test_envs = VectorEnvNormObs(
        DummyVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(2)]), update_obs_rms=False
    )
    test_envs.set_obs_rms(training_envs.get_obs_rms())
    training_envs.seed(seed)
    test_envs.seed(seed + 1)
    algorithm = PPO(
        policy=DiscreteActorPolicy(
            actor=DiscreteActor(
                preprocess_net=Net(state_shape=4, hidden_sizes=[16]), action_shape=2
            ),
            dist_fn=torch.distributions.Categorical,
            action_space=space,
            deterministic_eval=True,
        ),
        critic=DiscreteCritic(preprocess_net=Net(state_shape=4, hidden_sizes=[16])),
        optim=AdamOptimizerFactory(lr=1e-3),
    )
    training = Collector(algorithm, training_envs, VectorReplayBuffer(EPOCH_STEPS, ENVS))
    return algorithm, training, Collector(algorithm, test_envs)


def params(
    training: Collector, test: Collector, max_epochs: int, **kwargs: Any
) -> OnPolicyTrainerParams:
    return OnPolicyTrainerParams(
        training_collector=training,
        test_collector=test,
        max_epochs=max_epochs,
        epoch_num_steps=EPOCH_STEPS,
        collection_step_num_env_steps=EPOCH_STEPS // 2,
        update_step_num_repetitions=2,
        batch_size=64,
        test_step_num_episodes=2,
        show_progress=False,
        verbose=False,
        **kwargs,
    )


def test_resumed_run_matches_the_uninterrupted_one(tmp_path: Path) -> None:
    expected_alg, expected_training, expected_test = build(seed=7)
    expected = expected_alg.run_training(params(expected_training, expected_test, max_epochs=3))

    log_dir = str(tmp_path / "log")
    first_alg, first_training, first_test = build(seed=7)

    def save_checkpoint_fn(epoch: int, env_step: int, gradient_step: int) -> str:
        path = tmp_path / f"epoch_{epoch}.pkl"
        state = {
            "training_state": (first_alg, first_training, first_test),
            "random": (random.getstate(), np.random.get_state(), torch.get_rng_state()),
        }
        path.write_bytes(pickle.dumps(state))
        return str(path)

    first_alg.run_training(
        params(
            first_training,
            first_test,
            max_epochs=2,
            logger=TensorboardLogger(SummaryWriter(log_dir)),
            save_checkpoint_fn=save_checkpoint_fn,
        )
    )

    # A fresh process would start from other random states; make sure nothing carries over.
    random.seed(1234)
    np.random.seed(1234)
    torch.manual_seed(1234)
    checkpoint = pickle.loads((tmp_path / "epoch_2.pkl").read_bytes())
    resumed_alg, resumed_training, resumed_test = checkpoint["training_state"]
    python_state, numpy_state, torch_state = checkpoint["random"]
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    torch.set_rng_state(torch_state)
    trainer = resumed_alg.create_trainer(
        params(
            resumed_training,
            resumed_test,
            max_epochs=3,
            logger=TensorboardLogger(SummaryWriter(log_dir)),
            resume_from_log=True,
        )
    )
    resumed = trainer.run(reset_collectors=False)

    assert_same_counters(resumed, expected)
    assert_same_tensors(resumed_alg.state_dict(), expected_alg.state_dict())
    assert_same_buffer(resumed_training, expected_training)
    expected_rms = expected_training.env.get_obs_rms()
    resumed_rms = resumed_training.env.get_obs_rms()
    np.testing.assert_array_equal(resumed_rms.mean, expected_rms.mean)
    np.testing.assert_array_equal(resumed_rms.var, expected_rms.var)
    assert resumed_rms.count == expected_rms.count
    # the test envs still read the training envs' (restored) statistics
    assert resumed_test.env.get_obs_rms() is resumed_rms


def assert_same_counters(resumed: InfoStats, expected: InfoStats) -> None:
    assert resumed.train_step == expected.train_step == 3 * EPOCH_STEPS
    assert resumed.update_step == expected.update_step
    # train_episode counts the episodes of this run() call only; the logger's checkpoint
    # restores the epoch, env step and update step counters, as in Tianshou 2.x.


def assert_same_tensors(resumed: Any, expected: Any, where: str = "state") -> None:
    """Walk two nested state dicts and require equal structure and bit-identical tensors."""
    if isinstance(expected, dict):
        assert set(resumed) == set(expected), where
        for key in expected:
            assert_same_tensors(resumed[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list | tuple):
        assert len(resumed) == len(expected), where
        for index, (left, right) in enumerate(zip(resumed, expected, strict=True)):
            assert_same_tensors(left, right, f"{where}[{index}]")
    elif isinstance(expected, torch.Tensor):
        assert torch.equal(resumed, expected), where
    elif isinstance(expected, np.ndarray):
        assert np.array_equal(resumed, expected), where
    else:
        assert resumed == expected, where


def assert_same_buffer(resumed: Collector, expected: Collector) -> None:
    """Compare whole storage arrays: the on-policy trainer empties the buffer (its index) after
    each update, but the last collection's transitions are still in storage."""
    left, right = resumed.buffer, expected.buffer
    assert len(left) == len(right)
    assert left.last_index.tolist() == right.last_index.tolist()
    for key in ("obs", "act", "rew", "terminated", "truncated", "obs_next"):
        np.testing.assert_array_equal(getattr(left, key), getattr(right, key), err_msg=key)
    assert np.abs(left.obs).sum() > 0  # the storage really holds data
