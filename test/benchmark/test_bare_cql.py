"""The bare update of ``benchmark/bare_cql.py`` does the library's work: started from the
library's CQL weights on the same data and with the same seeds, it computes the same losses and
ends with the same parameters, update after update. This makes the ratio of
``benchmark/update_rate_cql.py`` a fair comparison."""

from typing import Any

import pytest
import torch

from benchmark.bare_cql import BareCQL
from benchmark.common import measure, random_transitions
from benchmark.update_rate_cql import build_cql, cql_case, load_cql
from tianshou.data import ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step

OBS_DIM, ACT_DIM, HIDDEN, REPEAT, SIZE = 3, 2, 16, 4, 32


@pytest.fixture(autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def assert_same_parameters(bare: list[torch.Tensor], library: list[torch.Tensor]) -> None:
    assert len(bare) == len(library)
    for ours, theirs in zip(bare, library, strict=True):
        torch.testing.assert_close(ours, theirs.reshape(ours.shape), rtol=1e-4, atol=1e-5)


def test_cql_bare_update_matches_the_library_with_the_same_seeds() -> None:
    torch.manual_seed(0)
    data = random_transitions(SIZE, OBS_DIM, ACT_DIM, discrete=False, seed=1)
    data["terminated"][:] = False
    data["terminated"][[3, 10]] = True
    library = build_cql(OBS_DIM, ACT_DIM, HIDDEN, REPEAT)
    # a threshold below the penalty, so that the multiplier rises and scales the critic losses
    library.lagrange_threshold = -1.0
    bare = BareCQL(data, HIDDEN, SIZE, REPEAT, lagrange_threshold=-1.0)
    load_cql(bare, library)
    buffer = ReplayBuffer.from_data(**data)
    batch = [torch.as_tensor(data[k]) for k in ("obs", "act", "rew", "terminated", "obs_next")]
    for step in range(3):
        torch.manual_seed(step)
        with policy_within_training_step(library.policy):
            stats: Any = library.update(buffer, 0)
        torch.manual_seed(step)
        ours = bare.update_on(*batch)
        for key in ("actor_loss", "critic1_loss", "critic2_loss", "alpha", "cql_alpha"):
            assert ours[key].item() == pytest.approx(getattr(stats, key), rel=1e-4, abs=1e-6), key
        assert ours["cql_alpha_loss"].item() == pytest.approx(stats.cql_alpha_loss, rel=1e-4)
    assert stats.cql_alpha is not None and stats.cql_alpha > 1.0
    actor: Any = library.policy.actor
    head_w = torch.cat([actor.mu.model[0].weight, actor.sigma.model[0].weight])
    head_b = torch.cat([actor.mu.model[0].bias, actor.sigma.model[0].bias])
    assert_same_parameters(
        list(bare.actor.parameters()), [*actor.preprocess.parameters(), head_w, head_b]
    )
    library_nets = [library.critic, library.critic2, library.critic_old, library.critic2_old]
    assert_same_parameters(
        [p for net in [*bare.critics, *bare.targets] for p in net.parameters()],
        [p for net in library_nets for p in net.parameters()],
    )
    assert bare.log_alpha.item() == pytest.approx(library.alpha._log_alpha.item(), abs=1e-6)  # type: ignore[attr-defined]
    assert bare.log_alpha_prime.item() == pytest.approx(
        library.cql_log_alpha.log_alpha.item(), abs=1e-6
    )


def test_the_benchmark_reports_rates_and_their_ratio() -> None:
    record: dict[str, Any] = measure(
        cql_case(hidden=16, batch_size=16), rounds=1, min_time=0.01, clock="wall"
    )
    assert record["bench"] == "cql_update"
    assert float(record["updates_per_s"]) > 0 and float(record["bare_updates_per_s"]) > 0
    expected = float(record["updates_per_s"]) / float(record["bare_updates_per_s"])
    assert record["ratio"] == pytest.approx(expected)
