from benchmark.peers.compare_sb3_recurrent import ours


def test_our_side_trains_and_splits_its_time() -> None:
    record = ours(steps=2048, seed=0, chunk_len=8)
    assert record["env_steps"] >= 2048
    assert 0 < record["collect_s"] + record["update_s"] <= record["wall_s"]
    assert record["test_return"] > 0
