"""The bare updates of ``benchmark/bare_policy_gradient.py`` do the library's work: started from
the library's weights on the same data (and, where the update samples, the same seeds), they
compute the same losses and end with the same parameters, update after update. This is what
makes the update-rate ratios of ``benchmark/update_rate_policy.py`` a fair comparison."""

import numpy as np
import pytest
import torch

from benchmark.bare_policy_gradient import BareDiscreteSAC, BareNPG, BareREDQ, BareTRPO
from benchmark.common import measure, random_transitions
from benchmark.update_rate_policy import (
    CASES,
    DSAC_TARGET_ENTROPY,
    build_discrete_sac,
    build_natural_gradient,
    build_redq,
    load_discrete_sac,
    load_natural_gradient,
    load_redq,
)
from tianshou.algorithm import NPG, TRPO
from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM = 3
SIZE = 48


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def as_tensors(data: dict[str, np.ndarray], *keys: str) -> list[torch.Tensor]:
    return [torch.as_tensor(data[key]) for key in keys]


def assert_same_parameters(bare: list[torch.Tensor], library: list[torch.Tensor]) -> None:
    assert len(bare) == len(library)
    for ours, theirs in zip(bare, library, strict=True):
        torch.testing.assert_close(ours, theirs.reshape(ours.shape), rtol=1e-4, atol=1e-5)


def library_update(algorithm: Algorithm, buffer: ReplayBuffer, *args: object) -> object:
    with policy_within_training_step(algorithm.policy):
        return algorithm.update(buffer, *args)  # type: ignore[arg-type]


def transitions_with_episode_ends(act_dim: int, discrete: bool) -> dict[str, np.ndarray]:
    """Random transitions with a termination at 10 and a truncation at 30."""
    data = random_transitions(SIZE, OBS_DIM, act_dim, discrete, seed=1)
    data["terminated"][:] = False
    data["truncated"][:] = False
    data["terminated"][10] = data["truncated"][30] = True
    data["done"] = data["terminated"] | data["truncated"]
    return data


def test_discrete_sac_bare_update_matches_the_library() -> None:
    torch.manual_seed(0)
    num_actions, hidden = 3, 16
    data = transitions_with_episode_ends(num_actions, discrete=True)
    library = build_discrete_sac(OBS_DIM, num_actions, hidden)
    bare = BareDiscreteSAC(data, num_actions, hidden, SIZE, target_entropy=DSAC_TARGET_ENTROPY)
    load_discrete_sac(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    batch = as_tensors(data, "obs", "act", "rew", "terminated", "obs_next")
    for _ in range(3):
        stats = library_update(library, buffer, 0)
        ours = bare.update_on(*batch)
        for key in ("critic1_loss", "critic2_loss", "actor_loss", "alpha"):
            assert ours[key].item() == pytest.approx(getattr(stats, key), rel=1e-4, abs=1e-6)
    library_nets = [library.policy.actor, library.critic, library.critic2]
    library_nets += [library.critic_old, library.critic2_old]
    assert_same_parameters(
        [p for net in [bare.actor, *bare.critics, *bare.targets] for p in net.parameters()],
        [p for net in library_nets for p in net.parameters()],
    )
    assert bare.log_alpha.item() == pytest.approx(library.alpha._log_alpha.item(), abs=1e-6)


def test_redq_bare_update_matches_the_library_with_the_same_seeds() -> None:
    torch.manual_seed(0)
    act_dim, hidden, ensemble, subset, delay = 2, 16, 5, 2, 2
    data = transitions_with_episode_ends(act_dim, discrete=False)
    library = build_redq(OBS_DIM, act_dim, hidden, ensemble, subset, delay)
    bare = BareREDQ(data, hidden, ensemble, subset, delay, SIZE)
    load_redq(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    batch = as_tensors(data, "obs", "act", "rew", "terminated", "obs_next")
    for step in range(4):  # actor steps after the 2nd and the 4th critic step
        torch.manual_seed(step)
        np.random.seed(step)
        stats = library_update(library, buffer, 0)
        torch.manual_seed(step)
        np.random.seed(step)
        ours = bare.update_on(*batch)
        assert ours["critic_loss"].item() == pytest.approx(stats.critic_loss, rel=1e-4)
        assert ("actor_loss" in ours) == (step % delay == delay - 1)
        if "actor_loss" in ours:
            assert ours["actor_loss"].item() == pytest.approx(stats.actor_loss, rel=1e-4)
    actor = library.policy.actor
    head_w = torch.cat([actor.mu.model[0].weight, actor.sigma.model[0].weight])
    head_b = torch.cat([actor.mu.model[0].bias, actor.sigma.model[0].bias])
    assert_same_parameters(
        list(bare.actor.parameters()), [*actor.preprocess.parameters(), head_w, head_b]
    )
    for bare_net, library_net in [(bare.critic, library.critic), (bare.target, library.critic_old)]:
        library_params = list(library_net.parameters())
        assert_same_parameters(
            [*bare_net.weights, *bare_net.biases], library_params[0::2] + library_params[1::2]
        )
    assert bare.log_alpha.item() == pytest.approx(library.alpha._log_alpha.item(), abs=1e-6)


@pytest.mark.parametrize("algorithm", [NPG, TRPO])
def test_natural_gradient_bare_update_matches_the_library(algorithm: type[NPG]) -> None:
    torch.manual_seed(0)
    act_dim, hidden, critic_iters = 2, 16, 3
    data = transitions_with_episode_ends(act_dim, discrete=False)
    bare: BareNPG
    if algorithm is TRPO:
        # a tight trust region, so that the line search has to backtrack
        library = build_natural_gradient(TRPO, OBS_DIM, act_dim, hidden, critic_iters, max_kl=1e-4)
        bare = BareTRPO(data, max_kl=1e-4, hidden=hidden, critic_iters=critic_iters)
    else:
        library = build_natural_gradient(
            NPG, OBS_DIM, act_dim, hidden, critic_iters, trust_region_size=0.3
        )
        bare = BareNPG(data, hidden=hidden, critic_iters=critic_iters, step_size=0.3)
    load_natural_gradient(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    rollout = as_tensors(data, "obs", "act", "rew", "terminated", "truncated", "obs_next")
    for _ in range(2):
        old = torch.cat([p.detach().reshape(-1).clone() for p in library.policy.actor.parameters()])
        stats = library_update(library, buffer, None, 1)
        ours = bare.update_on(*rollout)
        # the surrogate at the collecting policy is -mean(normalised advantages), about 0
        assert ours["actor_loss"].item() == pytest.approx(stats.actor_loss.mean, abs=1e-6)
        assert ours["kl"].item() == pytest.approx(stats.kl.mean, rel=1e-3, abs=1e-8)
        assert ours["critic_losses"].mean().item() == pytest.approx(stats.vf_loss.mean, rel=1e-4)
        if algorithm is TRPO:
            assert 0 < ours["step_size"].item() == pytest.approx(stats.step_size.mean, rel=1e-4)
            assert ours["kl"].item() < 1e-4
        new = torch.cat([p.detach().reshape(-1) for p in library.policy.actor.parameters()])
        assert not torch.allclose(new, old)  # the natural-gradient step moved the actor
        assert_same_parameters(
            [bare.log_std, *bare.actor.parameters()], list(library.policy.actor.parameters())
        )
        assert_same_parameters(list(bare.critic.parameters()), list(library.critic.parameters()))


def test_the_benchmark_reports_rates_and_their_ratio() -> None:
    record = measure(CASES["discrete_sac_small"](), rounds=1, min_time=0.01, clock="wall")
    assert record["bench"] == "discrete_sac_small_update"
    assert record["clock"] == "wall" and record["target_ratio"] is None
    assert float(record["updates_per_s"]) > 0 and float(record["bare_updates_per_s"]) > 0
    expected = float(record["updates_per_s"]) / float(record["bare_updates_per_s"])
    assert record["ratio"] == pytest.approx(expected)
