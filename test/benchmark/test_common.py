"""The shared helpers of ``benchmark/common.py``: GAE against a naive reference, the MLP's
layout, the weight copy's checks, the timing and the comparison record."""

import json
from collections.abc import Callable

import numpy as np
import pytest
import torch
from torch import nn

from benchmark import common
from benchmark.common import (
    Case,
    Replay,
    copy_into,
    emit,
    gae,
    measure,
    mlp,
    random_transitions,
    seconds_per_call,
)
from tianshou.utils.torch_utils import torch_threads


def naive_gae(
    v_s: np.ndarray, v_next: np.ndarray, rew: np.ndarray, end: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """Each advantage as the explicit discounted sum of TD errors up to the episode's end."""
    deltas = rew + gamma * v_next - v_s
    out = np.zeros(len(rew))
    for i in range(len(rew)):
        weight = 1.0
        for j in range(i, len(rew)):
            out[i] += weight * deltas[j]
            if end[j]:
                break
            weight *= gamma * lam
    return out


def test_gae_matches_the_sum_of_discounted_td_errors() -> None:
    rng = np.random.default_rng(3)
    size = 12
    v_s, v_next, rew = rng.standard_normal((3, size))
    end = np.zeros(size, dtype=bool)
    end[[0, 4, 11]] = True  # an episode of one step, one of four, one of seven
    expected = naive_gae(v_s, v_next, rew, end, gamma=0.9, lam=0.8)
    np.testing.assert_allclose(gae(v_s, v_next, rew, end, 0.9, 0.8), expected, rtol=1e-12)
    # by hand: the one-step episode's advantage is its TD error alone
    assert gae(v_s, v_next, rew, end, 0.9, 0.8)[0] == pytest.approx(
        rew[0] + 0.9 * v_next[0] - v_s[0]
    )


def test_mlp_layout() -> None:
    net = mlp(11, 32, 16, 3, activation=nn.Tanh)
    assert [type(m) for m in net] == [nn.Linear, nn.Tanh, nn.Linear, nn.Tanh, nn.Linear]
    assert net(torch.zeros(5, 11)).shape == (5, 3)
    body = mlp(4, 8, last_activation=True)
    assert [type(m) for m in body] == [nn.Linear, nn.ReLU]


def test_copy_into_copies_reshaped_and_rejects_mismatched_networks() -> None:
    target, source = torch.zeros(2, 3), torch.arange(6.0)
    copy_into([target], [source])
    assert torch.equal(target, source.reshape(2, 3))
    with pytest.raises(ValueError, match="1 bare tensors for 2 library tensors"):
        copy_into([target], [source, source])


def test_replay_samples_rows_of_the_transitions() -> None:
    data = random_transitions(50, obs_dim=3, act_dim=2, discrete=False, seed=1)
    assert not (data["terminated"] & data["truncated"]).any()
    torch.manual_seed(0)
    obs, act, rew, terminated, obs_next = Replay(data).sample(7)
    assert obs.shape == obs_next.shape == (7, 3) and act.shape == (7, 2)
    rows = [int(np.flatnonzero((data["obs"] == o.numpy()).all(1))[0]) for o in obs]
    np.testing.assert_array_equal(rew.numpy(), data["rew"][rows])
    np.testing.assert_array_equal(terminated.numpy(), data["terminated"][rows])


def test_seconds_per_call_takes_the_best_window() -> None:
    calls: list[None] = []
    # clock readings: windows of one call each lasting 3, 1 and 2 seconds
    readings = iter([0.0, 3.0, 3.0, 4.0, 4.0, 6.0])
    seconds = seconds_per_call(
        lambda: calls.append(None), min_time=0.5, repeat=3, clock=lambda: next(readings)
    )
    assert seconds == 1.0
    assert len(calls) == 1 + 3  # the untimed warm-up call and one call per window


def test_seconds_per_call_grows_the_calls_per_window_to_min_time() -> None:
    # one call takes 0.1 s, too short a window: then 3 calls, in 0.6 and 0.3 s
    readings = iter([0.0, 0.1, 1.0, 1.6, 2.0, 2.3])
    calls: list[None] = []
    seconds = seconds_per_call(
        lambda: calls.append(None), min_time=0.3, repeat=2, clock=lambda: next(readings)
    )
    assert seconds == pytest.approx(0.1)
    assert len(calls) == 1 + 1 + 3 + 3


def test_measure_reports_rates_ratio_and_target(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]  # a fake clock that only the updates advance: 2 s per library update, 1 s bare
    monkeypatch.setitem(common.CLOCKS, "fake", lambda: now[0])

    def advance(seconds: float) -> Callable[[], None]:
        return lambda: now.__setitem__(0, now[0] + seconds)

    record = measure(Case("demo", "none", advance(2.0), advance(1.0), 0.9), 2, 0.5, "fake")
    assert record["bench"] == "demo_update" and record["clock"] == "fake"
    assert (record["updates_per_s"], record["bare_updates_per_s"]) == (0.5, 1.0)
    assert record["ratio"] == 0.5 and record["ok"] is False
    fair = measure(Case("demo", "none", advance(1.0), advance(1.0), 0.9), 1, 0.5, "fake")
    assert fair["ratio"] == 1.0 and fair["ok"] is True
    untargeted = measure(Case("demo", "none", advance(2.0), advance(1.0), None), 1, 0.5, "fake")
    assert untargeted["target_ratio"] is None and untargeted["ok"] is None


def test_emit_prints_one_rounded_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    with torch_threads(1):
        emit({"bench": "x", "ratio": 0.123456, "ok": True})
    assert json.loads(capsys.readouterr().out) == {
        "bench": "x",
        "ratio": 0.1235,
        "ok": True,
        "torch_threads": 1,  # every record says the thread count it ran with
    }
    emit({"bench": "y", "torch_threads": 4})  # unless it states its own
    assert json.loads(capsys.readouterr().out)["torch_threads"] == 4
