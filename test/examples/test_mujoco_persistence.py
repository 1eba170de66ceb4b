"""Checkpoints of the MuJoCo scripts (``tianshou.scripts.persistence``): an off-policy run's
checkpoint keeps its replay buffer, its stored transitions only and without pickles, so a resumed
run goes on with the same transitions and collects no second random warm-up."""

import os
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest
import torch

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.data import Batch, Collector, InfoStats, VectorReplayBuffer
from tianshou.data.buffer._state import stored_rows as stored_rows_of_state
from tianshou.data.buffer.buffer_base import BufferFileError
from tianshou.scripts import persistence

from examples.mujoco.mujoco_sac import main as sac_main

TASK = "Hopper-v5"
EPOCH_STEPS = 16
WARMUP = 48
SAC = ["--task", TASK, "--hidden-sizes", "8", "--num-train-envs", "1", "--num-test-envs", "1"]
SAC += ["--backend", "dummy", "--no-progress", "--batch-size", "8", "--update-per-step", "1"]
SAC += ["--epoch-num-steps", str(EPOCH_STEPS), "--start-timesteps", str(WARMUP)]
SAC += ["--buffer-size", "100000", "--save-checkpoints"]


@pytest.fixture(autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


def transitions(n: int, step: int, rng: np.random.Generator) -> Batch:
    """``n`` random transitions of step ``step`` of episodes of 5 steps, infos included."""
    return Batch(
        obs=rng.normal(size=(n, 3)).astype(np.float32),
        act=rng.normal(size=(n, 2)),
        rew=rng.normal(size=n),
        terminated=np.full(n, step % 5 == 4),
        truncated=np.zeros(n, dtype=bool),
        obs_next=rng.normal(size=(n, 3)).astype(np.float32),
        info=Batch(x_position=rng.normal(size=n)),
    )


def filled(buffer_size: int, added: list[int]) -> VectorReplayBuffer:
    """A vector buffer of ``len(added)`` sub-buffers, sub-buffer ``b`` given ``added[b]``
    transitions."""
    buffer = VectorReplayBuffer(buffer_size, len(added))
    rng = np.random.default_rng(0)
    for step in range(max(added)):
        ids = [b for b, count in enumerate(added) if step < count]
        buffer.add(transitions(len(ids), step, rng), buffer_ids=ids)
    return buffer


def stored_rows(buffer: VectorReplayBuffer) -> np.ndarray:
    """Rows of ``buffer`` holding transitions, in storage order (the rows its files keep)."""
    return stored_rows_of_state(buffer.__getstate__())


def assert_same_buffer(actual: VectorReplayBuffer, expected: VectorReplayBuffer) -> None:
    """Same stored transitions in the same rows, same counters."""
    assert len(actual) == len(expected)
    np.testing.assert_array_equal(actual._istate, expected._istate)
    np.testing.assert_array_equal(actual._ep_ret, expected._ep_ret)
    rows = stored_rows(expected)
    if len(rows):
        for key in ("obs", "act", "rew", "terminated", "truncated", "done", "obs_next"):
            np.testing.assert_array_equal(actual._meta[key][rows], expected._meta[key][rows])
        np.testing.assert_array_equal(actual.info.x_position[rows], expected.info.x_position[rows])
    stored = expected.sample_indices(0)
    np.testing.assert_array_equal(actual.sample_indices(0), stored)
    if len(stored):
        np.testing.assert_array_equal(actual[stored].obs, expected[stored].obs)


# ---------------------------------------------------------------------------- buffer files
@pytest.mark.parametrize(
    "added",
    [[7], [13, 4], [0, 3], [0]],
    ids=["one-env", "two-envs-one-wrapped", "an-empty-sub-buffer", "nothing-stored"],
)
def test_replay_buffer_round_trips_compactly_without_pickle(
    added: list[int], tmp_path: Path
) -> None:
    size = 10 * len(added)  # sub-buffers of 10 slots: 13 transitions wrap around
    buffer = filled(size, added)
    path = str(tmp_path / persistence.BUFFER_FILE)
    persistence.save_replay_buffer(buffer, path)
    assert os.listdir(tmp_path) == [persistence.BUFFER_FILE]  # no temporary file left
    with h5py.File(path, "r") as f:  # only the stored rows are written
        assert "obs" not in f["_meta"] if not len(buffer) else len(f["_meta/obs"]) == len(buffer)

    restored = persistence.load_replay_buffer(path, size, len(added))  # no pickle allowed
    assert_same_buffer(restored, buffer)
    if len(buffer):  # sampling draws the same rows, adding continues at the same slots
        np.testing.assert_array_equal(restored.sample_indices(8), buffer.sample_indices(8))
        ids = list(range(len(added)))
        more = transitions(len(ids), 4, np.random.default_rng(1))  # ends the episodes
        for actual, expected in zip(
            restored.add(more, buffer_ids=ids), buffer.add(more, buffer_ids=ids), strict=True
        ):
            np.testing.assert_array_equal(actual, expected)  # rows, episode returns and lengths
        assert_same_buffer(restored, buffer)


def test_a_checkpoint_of_a_campaign_sized_buffer_is_small(tmp_path: Path) -> None:
    buffer = filled(1_000_000, [1_000])
    path = tmp_path / persistence.BUFFER_FILE
    persistence.save_replay_buffer(buffer, str(path))
    assert path.stat().st_size < 1_000_000  # 1,000 rows, not a million


def test_a_corrupt_buffer_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / persistence.BUFFER_FILE
    persistence.save_replay_buffer(filled(100, [40]), str(path))
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(BufferFileError, match=str(path)):
        persistence.load_replay_buffer(str(path), 100, 1)
    path.write_bytes(b"not an HDF5 file")
    with pytest.raises(BufferFileError, match=str(path)):
        persistence.load_replay_buffer(str(path), 100, 1)


@pytest.mark.parametrize(
    ("size", "envs"), [(100, 2), (20, 1)], ids=["other-env-count", "other-size"]
)
def test_a_buffer_file_of_another_buffer_shape_is_refused(
    size: int, envs: int, tmp_path: Path
) -> None:
    path = str(tmp_path / persistence.BUFFER_FILE)
    persistence.save_replay_buffer(filled(100, [40]), path)
    with pytest.raises(ValueError, match="resume with the buffer size"):
        persistence.load_replay_buffer(path, size, envs)


# ---------------------------------------------------------------------------- resuming SAC
class Snapshot:
    """A copy of a buffer's counters and stored transitions, in storage order."""

    def __init__(self, buffer: VectorReplayBuffer) -> None:
        self.istate = buffer._istate.copy()
        self.stored = buffer._meta[stored_rows(buffer)]

    def __len__(self) -> int:
        return len(self.stored)


class Recorder:
    """Records, per ``main`` call, the env steps the training collector collected at random
    and the training buffer as the trainer gets it and leaves it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.random_steps: list[int] = []
        self.at_start: list[Snapshot] = []
        self.at_end: list[Snapshot] = []
        collect, run_training = Collector.collect, Algorithm.run_training

        def recording_collect(collector: Collector, *args: Any, **kwargs: Any) -> Any:
            stats = collect(collector, *args, **kwargs)
            if kwargs.get("random"):
                self.random_steps[-1] += stats.n_collected_steps
            return stats

        def recording_run_training(algorithm: Algorithm, params: Any) -> InfoStats:
            buffer = params.training_collector.buffer
            self.at_start.append(Snapshot(buffer))
            result = run_training(algorithm, params)
            self.at_end.append(Snapshot(buffer))
            return result

        monkeypatch.setattr(Collector, "collect", recording_collect)
        monkeypatch.setattr(Algorithm, "run_training", recording_run_training)

    def main(self, argv: list[str]) -> InfoStats:
        self.random_steps.append(0)
        result = sac_main(argv)
        assert isinstance(result, InfoStats)
        return result


def assert_same_snapshot(actual: Snapshot, expected: Snapshot) -> None:
    np.testing.assert_array_equal(actual.istate, expected.istate)
    for key in ("obs", "act", "rew", "done", "obs_next"):
        np.testing.assert_array_equal(actual.stored[key], expected.stored[key])


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_resumed_sac_continues_with_the_saved_buffer_and_no_second_warm_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorder = Recorder(monkeypatch)
    args = [*SAC, "--logdir", str(tmp_path)]
    recorder.main([*args, "--epoch", "1"])
    checkpoint = tmp_path / TASK / "sac" / "0" / persistence.CHECKPOINT_DIR
    assert sorted(os.listdir(checkpoint)) == [persistence.BUFFER_FILE, persistence.POLICY_FILE]
    assert recorder.random_steps == [WARMUP]
    saved = recorder.at_end[0]
    assert len(saved) == WARMUP + EPOCH_STEPS

    resume = ["--resume-path", str(checkpoint / persistence.POLICY_FILE), "--resume-from-log"]
    recorder.main([*args, "--epoch", "2", *resume])
    assert "no random warm-up" in capsys.readouterr().out
    assert recorder.random_steps[1] == 0
    assert_same_snapshot(recorder.at_start[1], saved)  # the saved rows, in their rows
    assert len(recorder.at_end[1]) == WARMUP + 2 * EPOCH_STEPS  # one more epoch of steps

    # a checkpoint without a buffer (an older one) still resumes, with the warm-up again
    (checkpoint / persistence.BUFFER_FILE).unlink()
    recorder.main([*args, "--epoch", "3", *resume])
    assert "collecting the 48 random warm-up steps again" in capsys.readouterr().out
    assert recorder.random_steps[2] == WARMUP
    assert len(recorder.at_end[2]) == WARMUP + EPOCH_STEPS

    # a damaged buffer file is an error naming it, before any training
    recorder.main([*args, "--epoch", "4", *resume])  # writes a buffer beside the policy again
    buffer_file = checkpoint / persistence.BUFFER_FILE
    buffer_file.write_bytes(buffer_file.read_bytes()[:1000])
    trainings = len(recorder.at_start)
    with pytest.raises(BufferFileError, match=str(buffer_file)):
        recorder.main([*args, "--epoch", "5", *resume])
    assert len(recorder.at_start) == trainings
