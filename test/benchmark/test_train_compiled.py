"""``benchmark/train_compiled.py``: each loop step is one env step and one gradient step of the
MuJoCo script's SAC, and the JSON record carries the limits beside the loop's rate."""

import torch

from benchmark.train_compiled import LoopSide, measure


def test_a_loop_step_collects_one_env_step_and_updates_once() -> None:
    side = LoopSide("eager", "cpu", warmup=300)
    assert len(side.buffer) == 300
    before = [p.detach().clone() for p in side.algorithm.critic.parameters()]
    side.seconds(side.collect_and_update, 5)
    assert len(side.buffer) == 305
    after = list(side.algorithm.critic.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))


def test_the_record_reports_the_loop_next_to_its_limits() -> None:
    record = measure("cpu", ["eager"], steps=5, compile_steps=2, warmup=300)
    assert record["limit_env_steps_per_s"] > record["eager_env_steps_per_s"] > 0
    assert record["eager_updates_per_s"] > 0
    assert "compiled_speedup" not in record
