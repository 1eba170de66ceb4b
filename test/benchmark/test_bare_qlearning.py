"""The bare Q-learning updates of ``benchmark/bare_qlearning.py`` compute what the library does.

Each bare learner gets the library algorithm's initial weights and the same transitions; on the
same rows (chosen to include terminated, truncated and stream-final transitions, so the
precomputed n-step targets are checked at episode ends) and with the same random draws, its loss
must equal the library's. This is what makes the update-rate ratios of
``benchmark/update_rate_qlearning.py`` a comparison of equal work.
"""

import numpy as np
import pytest
import torch

from benchmark import bare_qlearning as bare
from benchmark import update_rate_qlearning as rate
from tianshou.algorithm.algorithm_base import OffPolicyAlgorithm
from tianshou.data import ReplayBuffer
from tianshou.utils.torch_utils import policy_within_training_step

STREAM_LENGTH = 40
TERMINATED_ROW, TRUNCATED_ROW = 5, 10


def build(name: str) -> tuple[OffPolicyAlgorithm, ReplayBuffer, bare.BareQLearner, np.ndarray]:
    """Library algorithm, its buffer, a bare learner with the same weights and data, and rows."""
    case = rate.CASES[name]
    torch.manual_seed(0)
    data = rate.transitions(case, STREAM_LENGTH)
    data.terminated[[TERMINATED_ROW, TRUNCATED_ROW]] = [True, False]
    data.truncated[[TERMINATED_ROW, TRUNCATED_ROW]] = [False, True]
    algorithm = case.build_library()
    learner = case.build_bare(data)
    library_nets = [algorithm.policy.model]
    bare_nets = [learner.net]
    if name == "fqf":
        library_nets.append(algorithm.policy.fraction_model)
        bare_nets.append(learner.proposal)
    for library_net, bare_net in zip(library_nets, bare_nets, strict=True):
        copy_parameters(library_net, bare_net)
    copy_parameters(algorithm.policy.model, learner.target)
    rows = np.concatenate([np.arange(24), np.arange(2 * STREAM_LENGTH - 8, 2 * STREAM_LENGTH)])
    return algorithm, rate.library_buffer(data, case.prioritized), learner, rows


def copy_parameters(source: torch.nn.Module, target: torch.nn.Module) -> None:
    pairs = list(zip(source.parameters(), target.parameters(), strict=True))
    for src, dst in pairs:
        assert src.shape == dst.shape, f"{src.shape} != {dst.shape}"
    with torch.no_grad():
        for src, dst in pairs:
            dst.copy_(src)


def library_update(algorithm: OffPolicyAlgorithm, buffer: ReplayBuffer, rows: np.ndarray):
    """The library's update on ``rows``: preprocess, gradient step; returns the stats."""
    with policy_within_training_step(algorithm.policy):
        batch = algorithm._preprocess_batch(buffer[rows], buffer, rows)
        stats = algorithm._update_with_batch(batch)
        algorithm._postprocess_batch(batch, buffer, rows)
    return stats


@pytest.mark.parametrize("name", ["c51", "qrdqn", "iqn", "bdqn", "bdqn_256"])
def test_bare_loss_equals_the_library_loss(name: str) -> None:
    algorithm, buffer, learner, rows = build(name)
    torch.manual_seed(1)
    stats = library_update(algorithm, buffer, rows)
    torch.manual_seed(1)
    loss = learner.loss(torch.as_tensor(rows)).item()
    assert loss == pytest.approx(stats.loss, rel=1e-5)


def test_bare_fqf_losses_equal_the_library_losses() -> None:
    algorithm, buffer, learner, rows = build("fqf")
    stats = library_update(algorithm, buffer, rows)
    fraction_entropy_loss, quantile_loss = learner.fqf_losses(torch.as_tensor(rows))
    assert quantile_loss.item() == pytest.approx(stats.quantile_loss, rel=1e-5)
    expected = stats.fraction_loss - bare.FQF_ENT_COEF * stats.entropy_loss
    assert fraction_entropy_loss.item() == pytest.approx(expected, rel=1e-5)


def test_bare_rainbow_matches_noise_weights_and_priorities() -> None:
    """Same noise draws, the same importance weights from unequal priorities, the same loss, and
    the same new priorities written back."""
    algorithm, buffer, learner, rows = build("rainbow")
    errors = np.linspace(0.1, 3.0, len(rows))
    buffer.update_weight(rows, errors)
    learner.set_priorities(torch.as_tensor(rows), torch.as_tensor(errors, dtype=torch.float32))
    torch.manual_seed(1)
    stats = library_update(algorithm, buffer, rows)
    torch.manual_seed(1)
    loss = learner.loss(torch.as_tensor(rows)).item()
    assert loss == pytest.approx(stats.loss, rel=1e-5)
    learner.set_priorities(torch.as_tensor(rows), learner.last_cross_entropy.detach())
    library_weights = buffer.get_weight(rows)
    bare_weights = (learner.priorities[rows] / learner.min_priority).pow(-bare.PRIO_BETA)
    np.testing.assert_allclose(bare_weights.numpy(), library_weights, rtol=1e-4)


def test_nstep_targets_stop_at_episode_and_stream_ends() -> None:
    data = bare.synthetic_transitions(2, 4, obs_dim=1, act_shape=(), num_values=2)
    data.rew[:] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]
    data.terminated[:] = [False, True, False, False, False, False, False, False]
    data.truncated[:] = [False, False, False, False, False, True, False, False]
    reward_sum, discount, boot_row = bare.nstep_targets(data, gamma=0.5, n_step=3)
    np.testing.assert_allclose(reward_sum, [2.0, 2.0, 8.0, 8.0, 32.0, 32.0, 128.0, 128.0])
    np.testing.assert_allclose(discount, [0.0, 0.0, 0.25, 0.5, 0.25, 0.5, 0.25, 0.5])
    np.testing.assert_array_equal(boot_row, [1, 1, 3, 3, 5, 5, 7, 7])


@pytest.mark.parametrize("name", list(rate.CASES))
def test_update_rates_are_reported(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    rate.main(["--algorithms", name, "--rounds", "1", "--min-time", "0.01"])
    line = capsys.readouterr().out.strip()
    assert f'"bench": "{name}_update"' in line
    assert '"ratio": ' in line
