"""Tests of NPG: conjugate gradients, the Fisher-vector product, the update, and learning."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn
from torch.distributions import Independent, Normal, kl_divergence

from test.algorithm.modelfree.test_a2c import ValueNet
from test.algorithm.modelfree.test_reinforce import (
    continuous_policy,
    discrete_policy,
    episode_buffer,
)
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.algorithm.modelfree.npg import (
    NPG,
    NPGTrainingStats,
    conjugate_gradients,
    flat_grad,
    set_flat_params,
)
from tianshou.algorithm.modelfree.reinforce import ProbabilisticActorPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory, TorchOptimizerFactory
from tianshou.data import Batch, Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv
from tianshou.trainer import OnPolicyTrainerParams
from tianshou.utils.determinism import TraceDeterminismTest, TraceLog, TraceLoggerContext
from tianshou.utils.net.common import Net
from tianshou.utils.net.continuous import ContinuousActorProbabilistic, ContinuousCritic
from tianshou.utils.torch_utils import policy_within_training_step


def make_npg(lr: float = 0.0, policy=None, **kwargs) -> NPG:
    torch.manual_seed(0)
    return NPG(
        policy=policy or discrete_policy(),
        critic=ValueNet(),
        optim=TorchOptimizerFactory(torch.optim.SGD, lr=lr),
        **kwargs,
    )


def flat_params(module: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def explicit_fisher(algorithm: NPG, batch: Batch) -> torch.Tensor:
    """The Hessian of the mean KL from the current policy, built entry by entry (naively)."""
    params = algorithm._actor_params()
    with torch.no_grad():
        old_dist = algorithm.policy(batch).dist
    kl = kl_divergence(old_dist, algorithm.policy(batch).dist).mean()
    grad = flat_grad(kl, params, create_graph=True)
    rows = [flat_grad(grad[i], params, retain_graph=True) for i in range(len(grad))]
    return torch.stack(rows).double()


def explicit_fisher_by_score(algorithm: NPG, batch: Batch) -> torch.Tensor:
    """The Fisher matrix as ``E[grad log pi grad log pi^T]`` for a categorical policy."""
    params = algorithm._actor_params()
    dist = algorithm.policy(batch).dist
    probs = dist.probs.detach()
    num_obs, num_actions = probs.shape
    fisher = torch.zeros(sum(p.numel() for p in params), sum(p.numel() for p in params))
    for i in range(num_obs):
        for a in range(num_actions):
            score = flat_grad(dist.log_prob(torch.tensor(a))[i], params, retain_graph=True)
            fisher += probs[i, a] * torch.outer(score, score)
    return (fisher / num_obs).double()


class TestConjugateGradients:
    def test_solves_a_small_spd_system_exactly(self) -> None:
        torch.manual_seed(0)
        m = torch.randn(5, 5, dtype=torch.float64)
        a = m @ m.T + 5 * torch.eye(5, dtype=torch.float64)
        b = torch.randn(5, dtype=torch.float64)
        x = conjugate_gradients(lambda v: a @ v, b, num_steps=5)
        assert torch.allclose(x, torch.linalg.solve(a, b), atol=1e-8)

    def test_two_by_two_by_hand(self) -> None:
        # A = diag(2, 4), b = (2, 4): one CG step along b finds x = b . b / b^T A b * b
        a = torch.diag(torch.tensor([2.0, 4.0], dtype=torch.float64))
        b = torch.tensor([2.0, 4.0], dtype=torch.float64)
        one_step = conjugate_gradients(lambda v: a @ v, b, num_steps=1)
        assert torch.allclose(one_step, (20.0 / 72.0) * b)
        assert torch.allclose(
            conjugate_gradients(lambda v: a @ v, b, num_steps=2), torch.ones(2).double()
        )

    def test_zero_right_hand_side_stops_at_once(self) -> None:
        calls = []

        def product(v: torch.Tensor) -> torch.Tensor:
            calls.append(1)
            return v

        x = conjugate_gradients(product, torch.zeros(3))
        assert torch.equal(x, torch.zeros(3))
        assert calls == []


class TestFisherVectorProduct:
    def test_matches_the_explicit_fisher_matrix_of_a_categorical_policy(self) -> None:
        npg = make_npg()
        batch = Batch(
            obs=np.array([[0.5, -1.0], [1.0, 2.0], [-0.3, 0.7]], dtype=np.float32), info={}
        )
        fisher = explicit_fisher_by_score(npg, batch)
        # at the old policy the KL's Hessian is the Fisher matrix
        assert torch.allclose(explicit_fisher(npg, batch), fisher, atol=1e-5)
        params = npg._actor_params()
        with torch.no_grad():
            old_dist = npg.policy(batch).dist
        kl = kl_divergence(old_dist, npg.policy(batch).dist).mean()
        kl_grad = flat_grad(kl, params, create_graph=True)
        torch.manual_seed(1)
        for _ in range(3):
            v = torch.randn(len(kl_grad))
            expected = fisher @ v.double() + npg._damping * v.double()
            product = npg.fisher_vector_product(v, kl_grad).double()
            assert torch.allclose(product, expected, atol=1e-5)

    def test_natural_gradient_solves_the_damped_fisher_system(self) -> None:
        npg = make_npg(policy=continuous_policy())
        batch = Batch(obs=np.array([[0.5, -1.0], [1.0, 2.0]], dtype=np.float32), info={})
        params = npg._actor_params()
        fisher = explicit_fisher(npg, batch)
        with torch.no_grad():
            old_dist = npg.policy(batch).dist
        kl_grad = flat_grad(
            kl_divergence(old_dist, npg.policy(batch).dist).mean(), params, create_graph=True
        )
        g = torch.tensor([1.0, -2.0, 0.5, 0.0, 1.5, -1.0, 0.3, 0.2])
        assert len(g) == len(kl_grad)
        x = conjugate_gradients(
            lambda v: npg.fisher_vector_product(v, kl_grad), g, num_steps=len(g)
        )
        damped = fisher + npg._damping * torch.eye(len(g), dtype=torch.float64)
        assert torch.allclose(x.double(), torch.linalg.solve(damped, g.double()), atol=1e-4)


class TestNPGUpdate:
    def test_actor_step_is_trust_region_size_times_the_natural_direction(self) -> None:
        npg = make_npg(trust_region_size=0.3, advantage_normalization=False, gamma=0.9)
        buffer = episode_buffer([1.0, -1.0, 2.0], terminated_at=[2])
        batch, indices = buffer.sample(0)
        batch = npg._preprocess_batch(batch, buffer, indices)
        view = Batch(
            obs=batch.obs, info=batch.info, act=batch.act, adv=batch.adv, logp_old=batch.logp_old
        )
        params = npg._actor_params()
        before = flat_params(npg.policy.actor)
        loss = npg._surrogate_loss(npg.policy(view).dist, view)
        g = flat_grad(loss, params)
        fisher = explicit_fisher(npg, view) + npg._damping * torch.eye(len(g), dtype=torch.float64)
        expected_step = -0.3 * torch.linalg.solve(fisher, g.double())
        actor_loss, kl, step_size = npg._update_actor(view)
        assert step_size == 0.3
        assert actor_loss == pytest.approx(-batch.adv.mean().item(), rel=1e-5)
        assert kl > 0
        moved = (flat_params(npg.policy.actor) - before).double()
        assert torch.allclose(moved, expected_step, atol=1e-4)

    def test_update_trains_the_critic_only_through_its_optimizer(self) -> None:
        npg = make_npg(lr=0.1, optim_critic_iters=3)
        buffer = episode_buffer([1.0, 0.0, 2.0, 1.0], terminated_at=[1, 3])
        critic_before = flat_params(npg.critic)
        actor_calls, critic_steps = [], []
        update_actor, step = npg._update_actor, npg.optim.step_with_loss_values

        def counting_actor(minibatch: Batch) -> tuple[float, float, float]:
            actor_calls.append(len(minibatch))
            return update_actor(minibatch)

        def counting_step(loss: torch.Tensor, **parts: torch.Tensor) -> list[float]:
            critic_steps.append(1)
            return step(loss, **parts)

        npg._update_actor = counting_actor  # type: ignore[method-assign]
        npg.optim.step_with_loss_values = counting_step  # type: ignore[method-assign]
        with policy_within_training_step(npg.policy):
            stats = npg.update(buffer, batch_size=2, repeat=2)
        assert isinstance(stats, NPGTrainingStats)
        # the optimizer holds the critic's weight and bias only
        assert len(npg.optim.torch_optimizer.param_groups[0]["params"]) == 2
        # 2 passes x 2 minibatches: one actor step and 3 critic steps each
        assert actor_calls == [2, 2, 2, 2]
        assert len(critic_steps) == 12
        assert stats.vf_loss.mean > 0
        assert not torch.equal(flat_params(npg.critic), critic_before)
        assert set(stats.get_loss_stats_dict()) == {"actor_loss", "vf_loss", "kl"}

    def test_the_kl_reference_is_the_policy_output_cut_from_the_graph(self) -> None:
        npg = make_npg()
        batch, _ = episode_buffer([1.0, -1.0, 2.0], terminated_at=[2]).sample(0)
        result = npg.policy(batch)
        old = npg._constant_copy(result, batch)
        assert result.dist.probs.requires_grad and not old.probs.requires_grad
        assert torch.equal(old.probs, result.dist.probs)
        # an actor output it cannot rebuild the distribution from: recomputed without gradients
        opaque = Batch(logits=Batch(raw=np.zeros(3)), dist=result.dist)
        recomputed = npg._constant_copy(opaque, batch)
        assert not recomputed.probs.requires_grad
        assert torch.allclose(recomputed.probs, result.dist.probs)

    def test_advantages_are_normalised_over_the_batch(self) -> None:
        npg = make_npg(advantage_normalization=True)
        buffer = episode_buffer([1.0, -1.0, 2.0, 0.5], terminated_at=[3])
        batch, indices = buffer.sample(0)
        out = npg._preprocess_batch(batch, buffer, indices)
        assert out.adv.mean().item() == pytest.approx(0.0, abs=1e-6)
        assert out.adv.std().item() == pytest.approx(1.0, rel=1e-4)
        with torch.no_grad():
            expected = npg.policy(out).dist.log_prob(out.act)
        assert torch.allclose(out.logp_old, expected)

    def test_flat_grad_by_hand_with_an_unused_parameter(self) -> None:
        used = nn.Parameter(torch.tensor([1.0, 2.0]))
        unused = nn.Parameter(torch.zeros(2, 1))
        # d/dw sum(w^2) = 2w; the unused parameter contributes zeros in its place
        grad = flat_grad(used.pow(2).sum(), [used, unused])
        assert grad.tolist() == [2.0, 4.0, 0.0, 0.0]

    def test_set_flat_params_round_trips(self) -> None:
        layer = nn.Linear(2, 2)
        params = list(layer.parameters())
        set_flat_params(params, torch.arange(6.0))
        assert layer.weight.tolist() == [[0.0, 1.0], [2.0, 3.0]]
        assert layer.bias.tolist() == [4.0, 5.0]

    def test_set_flat_params_rejects_a_wrong_length(self) -> None:
        params = list(nn.Linear(2, 2).parameters())
        with pytest.raises(ValueError, match="has 5 elements, expected 6"):
            set_flat_params(params, torch.zeros(5))

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"optim_critic_iters": 0}, "optim_critic_iters"),
            ({"trust_region_size": 0.0}, "trust_region_size"),
        ],
    )
    def test_invalid_settings(self, kwargs: dict, message: str) -> None:
        with pytest.raises(ValueError, match=message):
            make_npg(**kwargs)

    def test_nan_advantage_is_a_clear_error(self) -> None:
        npg = make_npg(lr=0.1, advantage_normalization=False)
        buffer = episode_buffer([1.0, float("nan"), 0.0], terminated_at=[2])
        with (
            policy_within_training_step(npg.policy),
            pytest.raises(FloatingPointError, match="the NPG actor update"),
        ):
            npg.update(buffer, batch_size=None, repeat=1)


# -- learning and determinism --------------------------------------------------------------------


def pendulum_policy_and_critic(hidden: list[int]) -> tuple[ProbabilisticActorPolicy, nn.Module]:
    """A Gaussian policy with a state-independent std and a value critic for Pendulum-v1."""
    space = gym.make("Pendulum-v1").action_space

    def net() -> Net:
        return Net(state_shape=3, hidden_sizes=hidden, activation=nn.Tanh)

    actor = ContinuousActorProbabilistic(preprocess_net=net(), action_shape=1, unbounded=True)
    critic = ContinuousCritic(preprocess_net=net())
    for module in [*actor.modules(), *critic.modules()]:
        if isinstance(module, nn.Linear):
            nn.init.orthogonal_(module.weight)
            nn.init.zeros_(module.bias)
    policy = ProbabilisticActorPolicy(
        actor=actor,
        dist_fn=lambda loc_scale: Independent(Normal(*loc_scale), 1),
        action_space=space,
        deterministic_eval=True,
    )
    return policy, critic


def train_on_pendulum(
    build: "type[Algorithm]",
    seed: int,
    max_epochs: int,
    epoch_num_steps: int,
    threshold: float | None,
    hidden: list[int] | None = None,
    num_envs: int = 16,
    steps_per_collect: int = 2048,
    num_test_episodes: int = 10,
    **algorithm_kwargs: object,
) -> float:
    """Train ``build`` (NPG or TRPO) on Pendulum-v1; return the best mean test return."""
    np.random.seed(seed)
    torch.manual_seed(seed)
    training_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(num_envs)])
    test_envs = DummyVectorEnv([lambda: gym.make("Pendulum-v1") for _ in range(num_test_episodes)])
    training_envs.seed(seed)
    test_envs.seed(seed + 1000)
    policy, critic = pendulum_policy_and_critic(hidden or [64, 64])
    algorithm = build(
        policy=policy,
        critic=critic,
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.95,
        gae_lambda=0.95,
        return_scaling=True,
        **algorithm_kwargs,
    )
    result = algorithm.run_training(
        OnPolicyTrainerParams(
            training_collector=Collector(
                algorithm, training_envs, VectorReplayBuffer(steps_per_collect + num_envs, num_envs)
            ),
            test_collector=Collector(algorithm, test_envs),
            max_epochs=max_epochs,
            epoch_num_steps=epoch_num_steps,
            collection_step_num_env_steps=steps_per_collect,
            update_step_num_repetitions=2,
            batch_size=None,
            test_step_num_episodes=num_test_episodes,
            stop_fn=None if threshold is None else (lambda mean_return: mean_return >= threshold),
            verbose=False,
            show_progress=False,
        )
    )
    return result.best_reward


@pytest.fixture
def single_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.mark.slow
@pytest.mark.usefixtures("single_thread")
def test_npg_learns_pendulum() -> None:
    best = train_on_pendulum(
        NPG,
        seed=0,
        max_epochs=5,
        epoch_num_steps=30000,
        threshold=-250.0,
        optim_critic_iters=5,
        trust_region_size=0.5,
    )
    assert best >= -250.0


def traced_training(build: "type[Algorithm]", **kwargs: object) -> TraceLog:
    with TraceLoggerContext() as trace:
        train_on_pendulum(
            build,
            seed=3,
            max_epochs=1,
            epoch_num_steps=400,
            threshold=None,
            hidden=[16, 16],
            num_envs=2,
            steps_per_collect=200,
            num_test_episodes=1,
            **kwargs,
        )
    return trace.get_log()


def test_npg_training_is_deterministic(tmp_path) -> None:
    snapshot = TraceDeterminismTest(base_path=tmp_path)
    first = traced_training(NPG)
    snapshot.check(first, "npg", create_reference_result=True)
    result = snapshot.check(traced_training(NPG), "npg")
    assert result.success and result.first_difference is None
    # both updates left a parameter hash, and each moved the parameters
    updates = first.filter_messages(required_messages=["update on"]).log_lines
    assert len(updates) == 2
    assert len({line.rsplit(" ", 1)[1] for line in updates}) == 2
