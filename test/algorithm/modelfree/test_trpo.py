"""Tests of TRPO: the KL-constrained backtracking line search, the update, and learning."""

import copy
import math

import numpy as np
import pytest
import torch
from torch.distributions import kl_divergence

from test.algorithm.modelfree.test_a2c import ValueNet
from test.algorithm.modelfree.test_npg import (
    explicit_fisher,
    flat_params,
    single_thread,  # noqa: F401  (fixture)
    traced_training,
    train_on_pendulum,
)
from test.algorithm.modelfree.test_reinforce import continuous_policy
from tianshou.algorithm.modelfree.npg import NPGTrainingStats, flat_grad, set_flat_params
from tianshou.algorithm.modelfree.trpo import TRPO, TRPOTrainingStats
from tianshou.algorithm.optim import TorchOptimizerFactory
from tianshou.data import Batch, ReplayBuffer
from tianshou.utils.determinism import TraceDeterminismTest
from tianshou.utils.torch_utils import policy_within_training_step


def make_trpo(lr: float = 0.0, **kwargs) -> TRPO:
    torch.manual_seed(0)
    return TRPO(
        policy=continuous_policy(),
        critic=ValueNet(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        **kwargs,
    )


def continuous_buffer(rews: list[float], terminated_at: list[int]) -> ReplayBuffer:
    """One transition per reward with 2-d actions; episodes end (terminated) at the given steps."""
    buffer = ReplayBuffer(16)
    for t, rew in enumerate(rews):
        buffer.add(
            Batch(
                obs=np.array([0.3 * t, 1.0], dtype=np.float32),
                act=np.array([0.2 * t - 0.5, 0.1 * (-1) ** t], dtype=np.float32),
                rew=rew,
                terminated=t in terminated_at,
                truncated=False,
                obs_next=np.array([0.3 * (t + 1), 1.0], dtype=np.float32),
                info={},
            )
        )
    return buffer


def search_inputs(
    trpo: TRPO,
) -> tuple[Batch, torch.Tensor, torch.Tensor, object, float, torch.Tensor]:
    """A preprocessed minibatch, the loss gradient, old parameters, old dist, loss, KL grad."""
    buffer = continuous_buffer([1.0, -1.0, 2.0, 0.5, 0.0], terminated_at=[2, 4])
    batch, indices = buffer.sample(0)
    batch = trpo._preprocess_batch(batch, buffer, indices)
    view = Batch(
        obs=batch.obs, info=batch.info, act=batch.act, adv=batch.adv, logp_old=batch.logp_old
    )
    params = trpo._actor_params()
    dist = trpo.policy(view).dist
    loss = trpo._surrogate_loss(dist, view)
    grad = flat_grad(loss, params, retain_graph=True).detach()
    with torch.no_grad():
        old_dist = trpo.policy(view).dist
    kl_grad = flat_grad(kl_divergence(old_dist, dist).mean(), params, create_graph=True)
    return view, grad, flat_params(trpo.policy.actor), old_dist, loss.item(), kl_grad


def naive_line_search(
    trpo: TRPO, view: Batch, direction: torch.Tensor, old: torch.Tensor, loss: float, beta: float
) -> tuple[float, torch.Tensor]:
    """The first accepted step and the parameters it gives, trying every step on a copy.

    Call it before the search under test moves ``trpo``'s parameters: the old policy is read
    from ``trpo``.
    """
    for i in range(trpo.max_backtracks):
        step = beta * trpo.backtrack_coeff**i
        candidate = copy.deepcopy(trpo.policy)
        set_flat_params(list(candidate.actor.parameters()), old + step * direction)
        with torch.no_grad():
            new_dist = candidate(view).dist
            old_dist = trpo.policy(view).dist
            kl = kl_divergence(old_dist, new_dist).mean().item()
            new_loss = trpo._surrogate_loss(new_dist, view).item()
        if kl < trpo.max_kl and new_loss < loss:
            return step, old + step * direction
    return 0.0, old


class TestLineSearch:
    def test_initial_step_reaches_the_trust_region_edge(self) -> None:
        trpo = make_trpo(max_kl=0.02)
        view, grad, old, old_dist, loss, kl_grad = search_inputs(trpo)
        direction = -grad
        fisher = explicit_fisher(trpo, view) + trpo._damping * torch.eye(len(grad)).double()
        # beta = sqrt(2 delta / x^T (F + damping I) x), with the damped Fisher computed explicitly
        beta = math.sqrt(2 * 0.02 / (direction.double() @ fisher @ direction.double()).item())
        expected_step, expected_params = naive_line_search(trpo, view, direction, old, loss, beta)
        step = trpo._step_along(view, direction, old, old_dist, loss, kl_grad)
        assert expected_step > 0
        assert step == pytest.approx(expected_step, rel=1e-4)
        assert torch.allclose(flat_params(trpo.policy.actor), expected_params, atol=1e-6)

    def test_a_direction_without_curvature_takes_no_step(self) -> None:
        """A zero gradient (a policy already certain on every state of the minibatch) gives
        a zero direction, along which the KL divergence does not curve: no step, no error."""
        trpo = make_trpo()
        view, grad, old, old_dist, loss, kl_grad = search_inputs(trpo)
        step = trpo._step_along(view, torch.zeros_like(grad), old, old_dist, loss, kl_grad)
        assert step == 0.0
        assert torch.equal(flat_params(trpo.policy.actor), old)

    def test_backtracks_to_the_first_step_within_the_kl_bound(self, monkeypatch) -> None:
        trpo = make_trpo(max_kl=0.01, backtrack_coeff=0.5, max_backtracks=20)
        view, grad, old, old_dist, loss, kl_grad = search_inputs(trpo)
        direction = -grad
        # a curvature far too small makes the first tries overshoot the trust region
        monkeypatch.setattr(trpo, "fisher_vector_product", lambda v, _: 1e-4 * v)
        beta = math.sqrt(2 * 0.01 / (1e-4 * direction.dot(direction).item()))
        expected_step, expected_params = naive_line_search(trpo, view, direction, old, loss, beta)
        step = trpo._step_along(view, direction, old, old_dist, loss, kl_grad)
        assert expected_step < beta * 0.5**3  # the search had to backtrack several times
        assert step == pytest.approx(expected_step, rel=1e-6)
        assert torch.allclose(flat_params(trpo.policy.actor), expected_params, atol=1e-6)
        with torch.no_grad():
            kl = kl_divergence(old_dist, trpo.policy(view).dist).mean().item()
        assert kl < 0.01
        # the step before (twice as long) broke the bound, or the search would have stopped there
        set_flat_params(trpo._actor_params(), old + 2 * step * direction)
        with torch.no_grad():
            assert kl_divergence(old_dist, trpo.policy(view).dist).mean().item() >= 0.01

    def test_parameters_are_restored_when_no_step_improves(self) -> None:
        trpo = make_trpo(max_kl=0.01, max_backtracks=5)
        view, grad, old, old_dist, loss, kl_grad = search_inputs(trpo)
        # uphill: every step within the trust region increases the surrogate loss
        step = trpo._step_along(view, grad, old, old_dist, loss, kl_grad)
        assert step == 0.0
        assert torch.equal(flat_params(trpo.policy.actor), old)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"max_kl": 0.0}, "max_kl"),
            ({"backtrack_coeff": 1.0}, "backtrack_coeff"),
            ({"max_backtracks": 0}, "max_backtracks"),
        ],
    )
    def test_invalid_settings(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            make_trpo(**kwargs)


class TestTRPOUpdate:
    def test_every_update_step_stays_inside_the_trust_region(self) -> None:
        trpo = make_trpo(lr=0.1, max_kl=0.005)
        buffer = continuous_buffer([1.0, 0.0, 2.0, 1.0, -1.0, 0.5], terminated_at=[2, 5])
        with policy_within_training_step(trpo.policy):
            stats = trpo.update(buffer, batch_size=3, repeat=2)
        assert isinstance(stats, TRPOTrainingStats)
        assert isinstance(stats, NPGTrainingStats)
        assert stats.kl.max < 0.005
        assert stats.step_size.max > 0
        assert set(stats.get_loss_stats_dict()) == {"actor_loss", "vf_loss", "kl", "step_size"}


@pytest.mark.slow
@pytest.mark.usefixtures("single_thread")
def test_trpo_learns_pendulum() -> None:
    best = train_on_pendulum(
        TRPO,
        seed=0,
        max_epochs=5,
        epoch_num_steps=30000,
        threshold=-250.0,
        optim_critic_iters=5,
        max_kl=0.005,
        backtrack_coeff=0.8,
        max_backtracks=10,
    )
    assert best >= -250.0


def test_trpo_training_is_deterministic(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    first = traced_training(TRPO)
    snapshot.check(first, "trpo", create_reference_result=True)
    result = snapshot.check(traced_training(TRPO), "trpo")
    assert result.success and result.first_difference is None
    # both updates left a parameter hash, and each moved the parameters
    updates = first.filter_messages(required_messages=["update on"]).log_lines
    assert len(updates) == 2
    assert len({line.rsplit(" ", 1)[1] for line in updates}) == 2
