"""Tests of FQF: the fraction-proposal loss against the 1-Wasserstein derivative, the entropy,
the policy's expectation, the two optimizers, learning and determinism."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from test.algorithm.modelfree.cartpole_q_learning import (
    assert_training_repeats_its_trace,
    train_on_cartpole,
)
from tianshou.algorithm.modelfree.fqf import (
    FQF,
    FQFPolicy,
    FQFTrainingStats,
    fraction_proposal_loss,
)
from tianshou.algorithm.modelfree.qrdqn import quantile_huber_loss
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch
from tianshou.utils.net.common import Net
from tianshou.utils.net.discrete import FractionProposalNetwork, FullQuantileFunction

from .test_qrdqn import filled_buffer

NUM_FRACTIONS = 4


def make_fqf(**kwargs) -> FQF:
    torch.manual_seed(0)
    model = FullQuantileFunction(
        preprocess_net=Net(state_shape=2, hidden_sizes=[8]), action_shape=2, num_cosines=4
    )
    fraction_model = FractionProposalNetwork(num_fractions=NUM_FRACTIONS, embedding_dim=8)
    with torch.no_grad():
        fraction_model.net.weight.mul_(100.0)  # a proposal far from uniform
    policy = FQFPolicy(
        model=model, fraction_model=fraction_model, action_space=gym.spaces.Discrete(2)
    )
    return FQF(
        policy=policy,
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.1),
        fraction_optim=TorchOptimizerFactory(torch.optim.SGD, lr=0.01),
        num_fractions=NUM_FRACTIONS,
        **kwargs,
    )


def obs_batch(n: int = 3) -> Batch:
    return Batch(obs=np.arange(2.0 * n, dtype=np.float32).reshape(n, 2), info=Batch())


def wasserstein_1(taus: np.ndarray, quantile_fn, grid: int = 400_001) -> float:
    """W1 between ``quantile_fn`` and its staircase at the midpoints of ``taus``, integrated
    numerically on a fine grid."""
    omega = np.linspace(0.0, 1.0, grid)
    interval = np.clip(np.searchsorted(taus, omega, side="right") - 1, 0, len(taus) - 2)
    hats = (taus[:-1] + taus[1:]) / 2
    return float(np.trapezoid(np.abs(quantile_fn(omega) - quantile_fn(hats[interval])), omega))


class TestFractionProposalLoss:
    def test_gradient_is_the_derivative_of_the_wasserstein_distance(self) -> None:
        def quantile_fn(tau):
            return np.asarray(tau) ** 3 - 0.5

        taus = np.array([0.0, 0.15, 0.4, 0.8, 1.0])
        hats = (taus[:-1] + taus[1:]) / 2
        taus_t = torch.tensor(taus[None], requires_grad=True)
        loss = fraction_proposal_loss(
            taus_t,
            torch.tensor(quantile_fn(hats)[None]),
            torch.tensor(quantile_fn(taus[1:-1])[None]),
        )
        loss.backward()
        assert taus_t.grad is not None
        h = 1e-4
        for i in range(1, len(taus) - 1):
            plus, minus = taus.copy(), taus.copy()
            plus[i] += h
            minus[i] -= h
            numeric = (wasserstein_1(plus, quantile_fn) - wasserstein_1(minus, quantile_fn)) / (
                2 * h
            )
            assert taus_t.grad[0, i].item() == pytest.approx(numeric, abs=1e-4)
        assert taus_t.grad[0, 0].item() == 0.0 and taus_t.grad[0, -1].item() == 0.0

    def test_batched_against_a_naive_loop_with_non_monotone_quantiles(self) -> None:
        rng = np.random.default_rng(0)
        hats = rng.normal(size=(6, 5))
        at_taus = rng.normal(size=(6, 4))
        taus = torch.tensor(np.sort(rng.uniform(size=(6, 6)), axis=1), requires_grad=True)
        fraction_proposal_loss(taus, torch.tensor(hats), torch.tensor(at_taus)).backward()
        expected = np.zeros((6, 6))
        for b in range(6):
            for i in range(4):
                previous = hats[b, 0] if i == 0 else at_taus[b, i - 1]
                following = hats[b, -1] if i == 3 else at_taus[b, i + 1]
                below = at_taus[b, i] - hats[b, i]
                above = at_taus[b, i] - hats[b, i + 1]
                expected[b, i + 1] = (below if at_taus[b, i] > previous else -below) + (
                    above if at_taus[b, i] < following else -above
                )
        assert taus.grad is not None
        np.testing.assert_allclose(taus.grad.numpy(), expected / 6, rtol=1e-12)

    @pytest.mark.parametrize(
        ("at_tau", "expected"),
        [
            (1.0, 0.5 * (2 * 1.0 - 0.0 - 3.0)),  # monotone: 2 F(tau_1) - F(hat_0) - F(hat_1)
            (4.0, 0.5 * ((4.0 - 0.0) - (4.0 - 3.0))),  # F(tau_1) > F(hat_1): sign flipped
        ],
    )
    def test_hand_computed_values(self, at_tau: float, expected: float) -> None:
        # one inner tau at 0.5, quantiles 0 at tau_hat_0 and 3 at tau_hat_1
        loss = fraction_proposal_loss(
            torch.tensor([[0.0, 0.5, 1.0]]), torch.tensor([[0.0, 3.0]]), torch.tensor([[at_tau]])
        )
        assert loss.item() == pytest.approx(expected)


class TestFQFPolicy:
    def test_q_value_is_the_width_weighted_sum_and_entropy_of_the_widths(self) -> None:
        policy = make_fqf().policy
        out = policy(obs_batch())
        taus = out.fractions.taus
        widths = taus[:, 1:] - taus[:, :-1]
        assert out.logits.shape == (3, 2, NUM_FRACTIONS) and taus.shape == (3, NUM_FRACTIONS + 1)
        expected_q = (widths.unsqueeze(1) * out.logits).sum(2)
        assert out.act.tolist() == expected_q.argmax(1).tolist()
        entropy = -(widths * widths.log()).sum(1)
        torch.testing.assert_close(out.fractions.entropies, entropy)
        assert not torch.allclose(widths, torch.full_like(widths, 1 / NUM_FRACTIONS))
        torch.testing.assert_close(out.fractions.tau_hats, (taus[:, 1:] + taus[:, :-1]) / 2)

    def test_given_fractions_are_reused_and_masks_respected(self) -> None:
        policy = make_fqf().policy
        out = policy(obs_batch())
        again = policy(obs_batch(), fractions=out.fractions)
        assert again.fractions is out.fractions
        torch.testing.assert_close(again.logits, out.logits)
        masked = Batch(
            obs=Batch(obs=obs_batch().obs, mask=np.array([[False, True]] * 3)), info=Batch()
        )
        assert policy(masked).act.tolist() == [1, 1, 1]
        policy.eval()
        assert policy(obs_batch()).quantiles_tau is None


class TestFQF:
    def test_num_fractions_must_match_the_proposal_network(self) -> None:
        with pytest.raises(ValueError, match="num_fractions=8"):
            make_fqf_with(num_fractions=8)

    def test_update_steps_each_network_on_its_own_loss(self) -> None:
        algorithm = make_fqf(target_update_freq=5, ent_coef=0.5)
        buffer = filled_buffer()
        indices = np.arange(8)
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        assert batch.returns.shape == (8, NUM_FRACTIONS)
        algorithm.train()
        out = algorithm.policy(batch)
        act = torch.as_tensor(batch.act)
        hats = out.logits[torch.arange(8), act]
        quantile_loss = quantile_huber_loss(hats, batch.returns, out.fractions.tau_hats)[0].mean()
        fraction_loss = fraction_proposal_loss(
            out.fractions.taus, hats.detach(), out.quantiles_tau[torch.arange(8), act]
        )
        entropy = out.fractions.entropies.mean()
        model_before = [p.clone() for p in algorithm.policy.model.parameters()]
        proposal_before = [p.clone() for p in algorithm.policy.fraction_model.parameters()]
        stats = algorithm._update_with_batch(batch)
        assert isinstance(stats, FQFTrainingStats)
        assert stats.quantile_loss == pytest.approx(quantile_loss.item(), rel=1e-5)
        assert stats.fraction_loss == pytest.approx(fraction_loss.item(), rel=1e-5)
        assert stats.entropy_loss == pytest.approx(entropy.item(), rel=1e-5)
        assert stats.loss == pytest.approx(
            quantile_loss.item() + fraction_loss.item() - 0.5 * entropy.item(), rel=1e-5
        )
        assert batch.weight.shape == (8,)
        changed = [
            not torch.equal(a, b)
            for a, b in zip(model_before, algorithm.policy.model.parameters(), strict=True)
        ]
        assert any(changed)
        # the proposal's SGD step is exactly that of the fraction loss minus the entropy bonus
        proposal = algorithm.policy.fraction_model
        grads = torch.autograd.grad(fraction_loss - 0.5 * entropy, list(proposal.parameters()))
        for before, grad, after in zip(proposal_before, grads, proposal.parameters(), strict=True):
            torch.testing.assert_close(after, before - 0.01 * grad)
        assert len(algorithm.state_dict()["_optimizers"]) == 2

    def test_targets_skip_the_inner_fraction_quantiles(self, monkeypatch) -> None:
        """The targets need quantiles at the midpoints only: one pass of the quantile head for
        the online network and one for the target network, none at the inner fractions; the
        online network's training flag is restored afterwards."""
        algorithm = make_fqf(target_update_freq=5)
        algorithm.train()
        reference = make_fqf(target_update_freq=5)
        buffer = filled_buffer()
        indices = np.arange(8)
        model = algorithm.policy.model
        passes: list[int] = []
        compute = type(model)._compute_quantiles

        def counting(net, features, taus):
            passes.append(taus.shape[1])
            return compute(net, features, taus)

        monkeypatch.setattr(type(model), "_compute_quantiles", counting)
        batch = algorithm._preprocess_batch(buffer[indices], buffer, indices)
        assert passes == [NUM_FRACTIONS, NUM_FRACTIONS]
        assert model.training
        # the same targets as the full training-mode pass of the online network gives
        monkeypatch.setattr(type(model), "_compute_quantiles", compute)
        obs_next = Batch(obs=buffer[indices].obs_next, info=Batch())
        online = reference.policy(obs_next)
        target = reference.policy(obs_next, model=reference.model_old, fractions=online.fractions)
        assert online.quantiles_tau is not None
        expected = target.logits[torch.arange(8), torch.as_tensor(online.act)]
        torch.testing.assert_close(
            algorithm._target_q_compute_value(buffer[indices].obs_next), expected
        )
        assert batch.returns.shape == (8, NUM_FRACTIONS)


def make_fqf_with(**kwargs) -> FQF:
    model = FullQuantileFunction(
        preprocess_net=Net(state_shape=2, hidden_sizes=[8]), action_shape=2
    )
    fraction_model = FractionProposalNetwork(num_fractions=NUM_FRACTIONS, embedding_dim=8)
    policy = FQFPolicy(
        model=model, fraction_model=fraction_model, action_space=gym.spaces.Discrete(2)
    )
    return FQF(
        policy=policy, optim=AdamOptimizerFactory(), fraction_optim=AdamOptimizerFactory(), **kwargs
    )


def build_fqf() -> FQF:
    """The FQF the CartPole tests train."""
    model = FullQuantileFunction(
        preprocess_net=Net(state_shape=4, hidden_sizes=[64]),
        action_shape=2,
        hidden_sizes=[64],
        num_cosines=64,
    )
    fraction_model = FractionProposalNetwork(num_fractions=32, embedding_dim=64)
    policy = FQFPolicy(
        model=model,
        fraction_model=fraction_model,
        action_space=gym.spaces.Discrete(2),
        eps_training=0.5,
    )
    return FQF(
        policy=policy,
        optim=AdamOptimizerFactory(lr=1e-3),
        fraction_optim=TorchOptimizerFactory(torch.optim.RMSprop, lr=2.5e-9),
        gamma=0.9,
        num_fractions=32,
        ent_coef=10.0,
        n_step_return_horizon=3,
        target_update_freq=320,
    )


@pytest.mark.slow
@pytest.mark.usefixtures("one_thread")
def test_fqf_learns_cartpole() -> None:
    result = train_on_cartpole(
        build_fqf, seed=0, max_epochs=10, epoch_num_steps=2000, stop_at=195.0
    )
    assert result.best_reward >= 195.0


@pytest.mark.usefixtures("one_thread")
def test_training_twice_with_one_seed_leaves_the_same_trace(tmp_path: Path) -> None:
    assert_training_repeats_its_trace(build_fqf, "fqf", tmp_path)
