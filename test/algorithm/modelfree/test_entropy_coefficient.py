"""Tests of the SAC family's entropy coefficients: fixed, learned, and user-defined."""

import copy
import math

import pytest
import torch

from test.algorithm.modelfree.test_sac import filled_buffer, make_sac, sgd
from tianshou.algorithm.modelfree.entropy_coefficient import Alpha, AutoAlpha, FixedAlpha
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.utils.torch_utils import policy_within_training_step


def test_the_published_module_exports_the_coefficients() -> None:
    from tianshou.algorithm.modelfree import sac

    assert (sac.Alpha, sac.AutoAlpha, sac.FixedAlpha) == (Alpha, AutoAlpha, FixedAlpha)


class TestAlpha:
    def test_fixed_alpha(self) -> None:
        alpha = FixedAlpha(0.3)
        assert alpha.value == 0.3
        assert alpha.update(torch.ones(4)) is None
        with pytest.raises(ValueError, match="alpha"):
            FixedAlpha(-1.0)

    def test_auto_alpha_grows_when_entropy_is_below_target(self) -> None:
        alpha = AutoAlpha(target_entropy=-1.0, log_alpha=0.0, optim=sgd(0.1))
        assert alpha.value == pytest.approx(1.0)
        entropy = torch.full((8,), -3.0)
        loss = alpha.update(entropy)
        # loss = -log_alpha * (target - entropy) = 0 at log_alpha = 0; gradient -2 -> +0.2
        assert loss == pytest.approx(0.0)
        assert alpha.value == pytest.approx(math.exp(0.2), rel=1e-6)
        alpha.update(torch.full((8,), 5.0))
        assert alpha.value < math.exp(0.2)

    def test_fixed_alpha_has_a_float_coefficient_and_no_loss(self) -> None:
        alpha = FixedAlpha(0.3)
        assert alpha.coefficient == 0.3 and isinstance(alpha.coefficient, float)
        assert alpha.loss(torch.ones(4)) is None
        assert alpha.optim is None

    def test_auto_alpha_coefficient_is_a_detached_tensor(self) -> None:
        alpha = AutoAlpha(target_entropy=-1.0, log_alpha=math.log(0.5), optim=sgd(0.1))
        coefficient = alpha.coefficient
        assert isinstance(coefficient, torch.Tensor) and coefficient.dim() == 0
        assert coefficient.item() == pytest.approx(0.5)
        assert not coefficient.requires_grad

    def test_auto_alpha_loss_steps_nothing_until_the_caller_steps_its_optimizer(self) -> None:
        alpha = AutoAlpha(target_entropy=-1.0, log_alpha=0.0, optim=sgd(0.1))
        loss = alpha.loss(torch.full((8,), -3.0))
        assert alpha.value == 1.0
        # loss = log_alpha * mean(entropy - target): gradient -2, so an SGD step of 0.1 -> +0.2
        assert loss.item() == pytest.approx(0.0)
        alpha.optim.step(loss)
        assert alpha.value == pytest.approx(math.exp(0.2), rel=1e-6)

    def test_auto_alpha_optimizer_refuses_a_non_finite_loss(self) -> None:
        alpha = AutoAlpha(target_entropy=-1.0, log_alpha=0.0, optim=sgd(0.1))
        with pytest.raises(FloatingPointError, match="not finite"):
            alpha.update(torch.tensor([float("nan"), 1.0]))
        assert alpha.value == 1.0

    def test_an_algorithm_recreates_and_checkpoints_the_auto_alpha_optimizer(self) -> None:
        alpha = AutoAlpha(-2.0, 0.0, sgd(0.1))
        own_optimizer = alpha.optim
        sac = make_sac(alpha=alpha)
        assert sac.alpha is alpha and alpha.optim is not own_optimizer
        (trained,) = alpha.optim.torch_optimizer.param_groups[0]["params"]
        assert trained is next(alpha.parameters())
        assert len(sac.state_dict()["_optimizers"]) == 4  # actor, critics, alpha

    def test_auto_alpha_state_is_in_the_algorithm_state_dict(self) -> None:
        sac = make_sac(alpha=AutoAlpha(-2.0, math.log(0.5), sgd()))
        assert sac.state_dict()["alpha._log_alpha"].item() == pytest.approx(math.log(0.5))

    def test_auto_alpha_optimizer_is_checkpointed(self) -> None:
        adam = AdamOptimizerFactory(lr=0.1)
        sac = make_sac(alpha=AutoAlpha(-2.0, 0.0, adam))
        with policy_within_training_step(sac.policy):
            sac.update(filled_buffer(), 4)
        state = copy.deepcopy(sac.state_dict())
        assert len(state["_optimizers"]) == 4
        clone = make_sac(alpha=AutoAlpha(-2.0, 0.0, adam))
        clone.load_state_dict(state)
        entropy = torch.full((4,), -3.0)
        assert clone.alpha.update(entropy) == pytest.approx(sac.alpha.update(entropy))
        assert clone.alpha.value == pytest.approx(sac.alpha.value, rel=1e-7)

    def test_a_user_defined_alpha_needs_only_value_and_update(self) -> None:
        class Decaying(Alpha):
            def __init__(self) -> None:
                self.current = 0.5

            @property
            def value(self) -> float:
                return self.current

            def update(self, entropy: torch.Tensor) -> float:
                self.current *= 0.5
                return float(entropy.mean())

        sac = make_sac(alpha=Decaying())
        with policy_within_training_step(sac.policy):
            stats = sac.update(filled_buffer(), 4)
        assert stats.alpha == 0.25
        assert stats.alpha_loss is not None

    def test_from_float_or_instance(self) -> None:
        auto = AutoAlpha(-1.0, 0.0, AdamOptimizerFactory())
        assert Alpha.from_float_or_instance(auto) is auto
        fixed = Alpha.from_float_or_instance(1)
        assert isinstance(fixed, FixedAlpha) and fixed.value == 1.0
        for bad in (True, "auto", None):
            with pytest.raises(TypeError, match="alpha must be a float or an Alpha"):
                Alpha.from_float_or_instance(bad)  # type: ignore[arg-type]

    def test_bad_alpha_type(self) -> None:
        with pytest.raises(TypeError, match="alpha"):
            make_sac(alpha="auto")
