"""The bare update of ``benchmark/bare_bcq.py`` does the library's BCQ work: from the library's
weights, on the same batch and with the same torch seed (so the same VAE draws), it computes the
same losses and ends with the same parameters, update after update. This makes the ratio of
``benchmark/update_rate_bcq.py`` a fair comparison."""

import pytest
import torch

from benchmark.bare_bcq import BareBCQ
from benchmark.common import measure, random_transitions
from benchmark.update_rate_bcq import CASES, build_bcq, load_bcq
from tianshou.data import ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM, ACT_DIM, SIZE = 3, 2, 48
HIDDEN, VAE_HIDDEN = [16, 12], [10, 10]


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def assert_same(bare: list[torch.Tensor], library: list[torch.Tensor]) -> None:
    assert len(bare) == len(library)
    for ours, theirs in zip(bare, library, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_bare_bcq_update_matches_the_library_with_the_same_seeds() -> None:
    torch.manual_seed(0)
    data = random_transitions(SIZE, OBS_DIM, ACT_DIM, discrete=False, seed=1)
    data["terminated"][:] = False
    data["truncated"][:] = False
    data["terminated"][10] = data["truncated"][30] = True
    data["done"] = data["terminated"] | data["truncated"]
    library = build_bcq(OBS_DIM, ACT_DIM, HIDDEN, VAE_HIDDEN, num_sampled=4)
    bare = BareBCQ(data, HIDDEN, VAE_HIDDEN, SIZE, num_sampled=4)
    load_bcq(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    batch = [torch.as_tensor(data[k]) for k in ("obs", "act", "rew", "terminated", "obs_next")]
    for step in range(3):
        torch.manual_seed(step)
        with policy_within_training_step(library.policy):
            stats = library.update(buffer, 0)
        torch.manual_seed(step)
        ours = bare.update_on(*batch)
        for key in ("vae_loss", "critic1_loss", "critic2_loss", "actor_loss"):
            assert ours[key].item() == pytest.approx(getattr(stats, key), rel=1e-4, abs=1e-6)
    pairs = [
        (bare.perturbation, library.policy.actor_perturbation),
        (bare.critics[0], library.policy.critic),
        (bare.critics[1], library.critic2),
        (bare.vae, library.policy.vae),
        (bare.perturbation_target, library.actor_perturbation_target),
        (bare.critic_targets[0], library.critic_target),
        (bare.critic_targets[1], library.critic2_target),
    ]
    for bare_net, library_net in pairs:
        assert_same(list(bare_net.parameters()), list(library_net.parameters()))
    # the targets trail their sources (tau < 1), so the comparison above covers the averaging
    target_weight = next(bare.critic_targets[0].parameters())
    assert not torch.allclose(target_weight, next(bare.critics[0].parameters()))


def test_the_benchmark_reports_rates_and_their_ratio() -> None:
    record = measure(CASES["bcq_small"](), rounds=1, min_time=0.01, clock="wall")
    assert record["bench"] == "bcq_small_update" and record["target_ratio"] is None
    assert float(record["updates_per_s"]) > 0 and float(record["bare_updates_per_s"]) > 0
    expected = float(record["updates_per_s"]) / float(record["bare_updates_per_s"])
    assert record["ratio"] == pytest.approx(expected)
