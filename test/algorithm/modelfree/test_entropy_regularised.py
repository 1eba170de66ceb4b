"""Tests of the SAC family's entropy-regularised mathematics, against values computed by hand."""

import math

import pytest
import torch

from tianshou.algorithm.modelfree.entropy_regularised import (
    categorical_entropy,
    categorical_soft_actor_loss,
    categorical_soft_value,
    entropy_coefficient_loss,
    soft_actor_loss,
    soft_td_target,
    soft_value,
)


def tensor(*values: float) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float64)


class TestSoftValue:
    @pytest.mark.parametrize("alpha", [0.2, torch.tensor(0.2, dtype=torch.float64)])
    def test_subtracts_alpha_times_the_log_probability(self, alpha: float | torch.Tensor) -> None:
        q = tensor(1.0, 2.0).reshape(2, 1)
        log_prob = tensor(-0.5, 0.25).reshape(2, 1)
        # 1 - 0.2 * (-0.5) = 1.1 and 2 - 0.2 * 0.25 = 1.95
        expected = tensor(1.1, 1.95).reshape(2, 1)
        torch.testing.assert_close(soft_value(q, log_prob, alpha), expected)

    def test_without_entropy_bonus_is_the_q_value(self) -> None:
        q = tensor(3.0, -1.0)
        torch.testing.assert_close(soft_value(q, tensor(-7.0, 4.0), 0.0), q)


class TestSoftTDTarget:
    def test_bootstraps_the_soft_value_only_where_the_episode_goes_on(self) -> None:
        rew, next_q, next_log_prob = tensor(1.0, 0.5), tensor(2.0, 3.0), tensor(-1.0, -1.0)
        # soft values 2 + 0.5 = 2.5 and 3.5; the second transition terminated
        expected = tensor(1.0 + 0.9 * 2.5, 0.5)
        not_terminal = tensor(1.0, 0.0)
        target = soft_td_target(rew, not_terminal, 0.9, next_q, next_log_prob, 0.5)
        torch.testing.assert_close(target, expected)
        flags = torch.tensor([True, False])
        torch.testing.assert_close(
            soft_td_target(rew, flags, 0.9, next_q, next_log_prob, 0.5), expected
        )

    def test_batched_sequences_keep_their_shape(self) -> None:
        shape = (3, 4)
        target = soft_td_target(
            torch.ones(shape),
            torch.ones(shape),
            0.5,
            torch.full(shape, 2.0),
            torch.zeros(shape),
            1.0,
        )
        torch.testing.assert_close(target, torch.full(shape, 2.0))  # 1 + 0.5 * 2


class TestSoftActorLoss:
    def test_value_and_gradients(self) -> None:
        log_prob = tensor(-1.0, 0.5).requires_grad_()
        q = tensor(2.0, 1.0).requires_grad_()
        loss = soft_actor_loss(log_prob, q, 0.4)
        # terms: 0.4 * -1 - 2 = -2.4 and 0.4 * 0.5 - 1 = -0.8
        assert loss.item() == pytest.approx(-1.6)
        loss.backward()
        torch.testing.assert_close(log_prob.grad, tensor(0.2, 0.2))  # alpha / N
        torch.testing.assert_close(q.grad, tensor(-0.5, -0.5))  # -1 / N

    def test_the_mask_keeps_only_the_valid_steps(self) -> None:
        log_prob = tensor(-1.0, 0.5, 100.0).reshape(1, 3)
        q = tensor(2.0, 1.0, -100.0).reshape(1, 3)
        valid = torch.tensor([[True, True, False]])
        assert soft_actor_loss(log_prob, q, 0.4, valid).item() == pytest.approx(-1.6)
        nothing_valid = torch.zeros_like(valid)
        assert soft_actor_loss(log_prob, q, 0.4, nothing_valid).item() == 0.0


class TestCategorical:
    def test_entropy_of_uniform_and_certain_rows(self) -> None:
        probs = tensor(0.5, 0.5, 1.0, 0.0).reshape(2, 2)
        entropy = categorical_entropy(probs, probs.log())
        # the certain row has log 0 = -inf: it contributes 0, not NaN
        torch.testing.assert_close(entropy, tensor(math.log(2.0), 0.0))

    def test_soft_value_is_the_expected_entropy_regularised_q(self) -> None:
        probs = tensor(0.25, 0.75).reshape(1, 2)
        q = tensor(4.0, 0.0).reshape(1, 2)
        entropy = categorical_entropy(probs, probs.log())
        by_hand = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
        assert entropy.item() == pytest.approx(by_hand)
        value = categorical_soft_value(probs, q, entropy, 0.5)
        # 0.25 * 4 + 0.5 * H, which is sum_a pi(a) * (Q(a) - 0.5 * log pi(a))
        assert value.item() == pytest.approx(1.0 + 0.5 * by_hand)
        summed = 0.25 * (4.0 - 0.5 * math.log(0.25)) + 0.75 * (0.0 - 0.5 * math.log(0.75))
        assert value.item() == pytest.approx(summed)

    def test_actor_loss_is_the_negated_mean_soft_value(self) -> None:
        probs = tensor(0.25, 0.75, 0.5, 0.5).reshape(2, 2)
        q = tensor(4.0, 0.0, 1.0, 3.0).reshape(2, 2)
        entropy = categorical_entropy(probs, probs.log())
        values = tensor(1.0, 2.0) + 0.5 * entropy  # expected Q: 1 and 2
        loss = categorical_soft_actor_loss(probs, q, entropy, 0.5)
        assert loss.item() == pytest.approx(-values.mean().item())

    def test_actor_gradient_moves_probability_to_the_better_action(self) -> None:
        logits = torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)
        log_probs = logits.log_softmax(-1)
        probs = log_probs.exp()
        q = tensor(1.0, 0.0).reshape(1, 2)
        categorical_soft_actor_loss(probs, q, categorical_entropy(probs, log_probs), 0.1).backward()
        assert logits.grad is not None
        # at the uniform policy the entropy is maximal (no gradient): only Q pulls, to action 0
        torch.testing.assert_close(logits.grad, tensor(-0.25, 0.25).reshape(1, 2))


class TestEntropyCoefficientLoss:
    def test_value_and_gradient(self) -> None:
        log_alpha = torch.tensor(0.5, requires_grad=True)
        entropy = torch.tensor([1.0, 3.0], requires_grad=True)
        loss = entropy_coefficient_loss(log_alpha, entropy, target_entropy=-1.0)
        # -log_alpha * (target - mean entropy) = -0.5 * (-1 - 2)
        assert loss.item() == pytest.approx(1.5)
        loss.backward()
        assert log_alpha.grad is not None
        assert log_alpha.grad.item() == pytest.approx(3.0)  # mean(entropy) - target
        assert entropy.grad is None  # the policy is not trained through it

    @pytest.mark.parametrize(("entropy", "alpha_grows"), [(-3.0, True), (1.0, False)])
    def test_a_descent_step_raises_alpha_below_the_target(
        self, entropy: float, alpha_grows: bool
    ) -> None:
        log_alpha = torch.tensor(0.0, requires_grad=True)
        entropy_coefficient_loss(log_alpha, torch.full((4,), entropy), -1.0).backward()
        assert log_alpha.grad is not None
        stepped = log_alpha.detach() - 0.1 * log_alpha.grad
        assert (stepped.item() > 0.0) == alpha_grows
