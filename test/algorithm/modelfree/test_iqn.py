"""Tests of IQN: sample sizes per use, the sampled-fraction loss against a naive double loop,
targets, learning and determinism."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from test.algorithm.modelfree.cartpole_q_learning import (
    assert_training_repeats_its_trace,
    train_on_cartpole,
)
from tianshou.algorithm.modelfree.iqn import IQN, IQNPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import ImplicitQuantileNetwork
from tianshou.utils.torch_utils import policy_within_training_step

from .test_qrdqn import filled_buffer, naive_quantile_huber


def make_iqn(**kwargs) -> IQN:
    torch.manual_seed(0)
    model = ImplicitQuantileNetwork(
        preprocess_net=Net(state_shape=2, hidden_sizes=[8]), action_shape=2, num_cosines=4
    )
    policy = IQNPolicy(
        model=model,
        action_space=gym.spaces.Discrete(2),
        sample_size=5,
        online_sample_size=3,
        target_sample_size=4,
    )
    return IQN(policy=policy, optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1), **kwargs)


def obs_batch(n: int = 3) -> Batch:
    return Batch(obs=np.arange(2.0 * n, dtype=np.float32).reshape(n, 2), info=Batch())


class TestIQNPolicy:
    def test_the_number_of_fractions_depends_on_the_use(self) -> None:
        algorithm = make_iqn(target_update_freq=5)
        policy = algorithm.policy
        policy.eval()
        acting = policy(obs_batch())
        assert acting.logits.shape == (3, 2, 5) and acting.taus.shape == (3, 5)
        assert isinstance(acting.act, np.ndarray) and acting.act.shape == (3,)
        assert policy(obs_batch(), model=algorithm.model_old).taus.shape == (3, 4)
        policy.train()
        assert policy(obs_batch()).taus.shape == (3, 3)
        assert ((acting.taus >= 0) & (acting.taus <= 1)).all()

    def test_acts_on_the_mean_over_sampled_quantiles_and_respects_masks(self) -> None:
        policy = make_iqn().policy
        policy.eval()
        torch.manual_seed(4)
        out = policy(obs_batch())
        assert out.act.tolist() == out.logits.mean(2).argmax(1).tolist()
        mask = np.array([[True, False]] * 3)
        masked = Batch(obs=Batch(obs=obs_batch().obs, mask=mask), info=Batch())
        assert policy(masked).act.tolist() == [0, 0, 0]

    @pytest.mark.parametrize("name", ["sample_size", "online_sample_size", "target_sample_size"])
    def test_sample_sizes_below_two_are_refused(self, name: str) -> None:
        model = ImplicitQuantileNetwork(preprocess_net=Net(state_shape=2), action_shape=2)
        with pytest.raises(ValueError, match=name):
            IQNPolicy(model=model, action_space=gym.spaces.Discrete(2), **{name: 1})


class TestIQN:
    def test_targets_have_target_sample_size_columns(self) -> None:
        algorithm = make_iqn(gamma=0.5, target_update_freq=3)
        buffer = filled_buffer()
        indices = np.array([0, 3])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        assert batch.returns.shape == (2, 4)
        # the terminal transition's target is its reward, in every column
        torch.testing.assert_close(batch.returns[1].float(), torch.full((4,), 4.0))

    def test_loss_is_the_quantile_huber_loss_at_the_sampled_fractions(self) -> None:
        algorithm = make_iqn(target_update_freq=3)
        buffer = filled_buffer()
        indices = np.array([0, 1, 4, 6, 7])
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        algorithm.train()
        torch.manual_seed(11)
        with torch.no_grad():
            out = algorithm.policy(batch)
        quantiles = out.logits[torch.arange(5), torch.as_tensor(batch.act)].double().numpy()
        returns = batch.returns.double().numpy()
        taus = out.taus.double().numpy()
        expected = np.mean(
            [naive_quantile_huber(quantiles[b], returns[b], taus[b]) for b in range(5)]
        )
        torch.manual_seed(11)  # the update samples the same fractions again
        stats = algorithm._update_with_batch(batch)
        assert stats.loss == pytest.approx(expected, rel=1e-5)
        assert batch.weight.shape == (5,)

    def test_updates_reduce_the_loss(self) -> None:
        algorithm = make_iqn(target_update_freq=50)
        buffer: ReplayBuffer = filled_buffer()
        torch.manual_seed(1)
        losses = []
        for _ in range(60):
            with policy_within_training_step(algorithm.policy):
                losses.append(algorithm.update(buffer, 0).loss)
        assert np.mean(losses[-10:]) < np.mean(losses[:10])


def build_iqn() -> IQN:
    """The IQN the CartPole tests train."""
    model = ImplicitQuantileNetwork(
        preprocess_net=Net(state_shape=4, hidden_sizes=[64]),
        action_shape=2,
        hidden_sizes=[64],
        num_cosines=64,
    )
    policy = IQNPolicy(model=model, action_space=gym.spaces.Discrete(2), eps_training=0.5)
    return IQN(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.9,
        n_step_return_horizon=3,
        target_update_freq=320,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_iqn_learns_cartpole() -> None:
    result = train_on_cartpole(
        build_iqn, seed=0, max_epochs=10, epoch_num_steps=2000, stop_at=195.0
    )
    assert result.best_reward >= 195.0


@pytest.mark.usefixtures("one_thread")
def test_training_twice_with_one_seed_leaves_the_same_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(build_iqn, "iqn", tmp_path)
