"""The campaign runner end to end, on tiny real campaigns: the local launcher (a failing run is
reported without losing the others), Ctrl-C and resuming from a checkpoint, skipping finished
runs, a 2-node local Ray cluster writing the same files as the local launcher, and the command
line's checks of its input."""

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmark.campaign.execute import RESULT_KEYS, RunOutcome
from benchmark.campaign.plan import RunSpec
from benchmark.run_benchmark import main, progress_line
from test.local_ray import two_node_ray_cluster

REPO = Path(__file__).resolve().parents[2]
TINY = ["--tasks", "Hopper-v5", "--seeds", "0", "--config", "hidden_sizes=16"]
TINY += ["--config", "num_test_envs=1", "--config", "sac:start_timesteps=100"]
TINY += ["--config", "sac:batch_size=32"]
TINY_STEPS = 300
RUNNER_TIMEOUT_S = 240


def run_runner(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmark.run_benchmark", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUNNER_TIMEOUT_S,
    )


def run_files(run_dir: Path) -> set[str]:
    """The files of a run directory, event files by their common prefix (their names hold the
    host, process and time)."""
    return {
        re.sub(r"events\.out\.tfevents\..*", "events.out.tfevents.*", str(p.relative_to(run_dir)))
        for p in run_dir.rglob("*")
        if p.is_file()
    }


def processes_mentioning(text: str) -> list[int]:
    """Processes whose command line contains ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmdline:
            found.append(int(entry.name))
    return found


def check_local_campaign(out: Path, output: str, code: int) -> None:
    """The local campaign of sac, ppo and a failing reinforce: two results, one failure."""
    assert code == 1, output
    assert "3 runs: 0 finished, 3 to run" in output
    for algorithm in ("sac", "ppo"):
        assert re.search(rf"Hopper-v5 {algorithm} seed0: final return -?\d", output), output
        run_dir = out / "runs" / "Hopper-v5" / algorithm / "seed0"
        result = json.loads((run_dir / "result.json").read_text())
        assert set(RESULT_KEYS) <= result.keys()
        assert (result["task"], result["algorithm"], result["seed"]) == ("Hopper-v5", algorithm, 0)
        assert result["env_steps"] >= TINY_STEPS
        assert result["test_env_steps"] == sorted(result["test_env_steps"])
        assert len(result["test_returns"]) == len(result["test_env_steps"]) >= 2
        assert result["final_return"] == result["test_returns"][-1]
        assert result["best_return"] == max(result["test_returns"])
        assert result["config"]["hidden_sizes"] == [16]
        assert json.loads((run_dir / "config.json").read_text()) == result["config"]
        assert list(run_dir.glob("log/Hopper-v5/*/0/events.out.tfevents.*"))
    assert "Hopper-v5 reinforce seed0: FAILED: exit code 1: ValueError" in output
    summary = json.loads((out / "summary.json").read_text())
    assert [cell["algorithm"] for cell in summary["cells"]] == ["ppo", "sac"]
    [failure] = summary["failures"]
    assert (failure["algorithm"], failure["seed"]) == ("reinforce", 0)
    assert "VectorReplayBuffer of size 0" in failure["error"]
    assert "reinforce seed0: exit code 1" in (out / "table.md").read_text()
    for family in ("off-policy", "on-policy"):  # SAC and PPO: one figure per budget family
        assert (out / f"Hopper-v5-{family}.png").stat().st_size > 0
    assert (out / "aggregate.png").stat().st_size > 0


def test_ctrl_c_stops_every_run_and_a_rerun_resumes_then_skips(tmp_path: Path) -> None:
    warmup, epochs, epoch_steps = 100, 6, 200
    command = [sys.executable, "-m", "benchmark.run_benchmark", *TINY, "--algorithms", "sac"]
    command += ["--env-steps", str(warmup + epochs * epoch_steps), "--out", str(tmp_path)]
    command += ["--config", f"epoch_num_steps={epoch_steps}"]
    run_dir = tmp_path / "runs" / "Hopper-v5" / "sac" / "seed0"
    checkpoint = run_dir / "log" / "Hopper-v5" / "sac" / "0" / "checkpoint" / "policy.pth"
    runner = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + RUNNER_TIMEOUT_S
    while not checkpoint.exists() and runner.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_mentioning(str(tmp_path)), "the run should be running"
    runner.send_signal(signal.SIGINT)
    output, _ = runner.communicate(timeout=60)
    assert runner.returncode == 130, output
    assert "stopped: every run was ended" in output
    assert processes_mentioning(str(tmp_path)) == []
    assert not (run_dir / "result.json").exists()

    resumed = run_runner(*command[3:])
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "1 runs: 0 finished, 1 to run (1 from a checkpoint)" in resumed.stdout
    result = json.loads((run_dir / "result.json").read_text())
    assert result["resumed_from_env_step"] >= warmup + epoch_steps
    assert result["env_steps"] == warmup + epochs * epoch_steps
    every_epoch = [warmup + i * epoch_steps for i in range(epochs + 1)]
    # a run stopped between its checkpoint and that epoch's test does not log that test again
    # after resuming (the logger counts it as logged)
    missing = set(every_epoch) - set(result["test_env_steps"])
    assert missing <= {result["resumed_from_env_step"]}
    assert result["test_env_steps"] == [step for step in every_epoch if step not in missing]

    finished = (run_dir / "result.json").stat().st_mtime_ns
    skipped = run_runner(*command[3:])
    assert skipped.returncode == 0
    assert "1 runs: 1 finished, 0 to run" in skipped.stdout
    assert (run_dir / "result.json").stat().st_mtime_ns == finished


@pytest.fixture
def ray_cluster() -> Iterator[tuple[str, dict[str, str]]]:
    with two_node_ray_cluster() as cluster:
        yield cluster


def test_local_and_two_node_ray_launchers_run_a_campaign_to_the_same_files(
    ray_cluster: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    """A local campaign in which one run fails (REINFORCE with an empty replay buffer) is
    reported without losing the others; the Ray campaign of the others writes the same files."""
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    tiny = [*TINY, "--env-steps", str(TINY_STEPS)]
    local = run_runner(
        *tiny,
        "--algorithms",
        "sac,ppo,reinforce",
        "--config",
        "reinforce:buffer_size=0",
        "--out",
        str(local_out),
        "--max-concurrent",
        "2",
    )
    check_local_campaign(local_out, local.stdout + local.stderr, local.returncode)

    address, env = ray_cluster
    ray = run_runner(
        *tiny,
        "--algorithms",
        "sac,ppo",
        "--out",
        str(ray_out),
        "--launcher",
        "ray",
        "--ray-address",
        address,
        env=env,
    )
    assert ray.returncode == 0, ray.stdout + ray.stderr
    for algorithm in ("sac", "ppo"):
        ray_run = ray_out / "runs" / "Hopper-v5" / algorithm / "seed0"
        local_run = local_out / "runs" / "Hopper-v5" / algorithm / "seed0"
        assert run_files(ray_run) == run_files(local_run)
        ray_result = json.loads((ray_run / "result.json").read_text())
        local_result = json.loads((local_run / "result.json").read_text())
        assert ray_result.keys() == local_result.keys()
        assert ray_result["config"] == local_result["config"]  # paths relative to the run
        assert ray_result["env_steps"] == local_result["env_steps"]
    for name in ("summary.json", "table.md", "Hopper-v5-on-policy.png", "aggregate.png"):
        assert (ray_out / name).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--algorithms", "sac,nope"], "unknown algorithms"),
        (["--algorithms", "sac", "--tasks", "Hopper-v99"], "not a gymnasium task"),
        (["--algorithms", "sac", "--seeds", "0,x"], "comma-separated integers"),
        (["--algorithms", "sac", "--seeds", "1,1"], "repeats"),
        (["--algorithms", "sac", "--env-steps", "0"], "must be positive"),
        (["--algorithms", "sac", "--env-steps", "5000"], "random warm-up"),
        (["--algorithms", "sac", "--config", "ppo:lr=1"], "not in the campaign"),
        (["--algorithms", "sac", "--config", "seed=1"], "the runner sets"),
        (["--algorithms", "ppo", "--config", "gamma=high"], "mujoco_ppo.py rejects"),
        (["--algorithms", "sac", "--ray-address", "h:1"], "needs --launcher ray"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(
    args: list[str],
    message: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    defaults = {"--tasks": "Hopper-v5", "--env-steps": "20000", "--out": str(tmp_path)}
    for option, value in defaults.items():
        if option not in args:
            args = [*args, option, value]
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_progress_line_says_score_time_and_speed_or_the_error() -> None:
    spec = RunSpec("Hopper-v5", "sac", 2, 1000)
    result = {"final_return": 1234.56, "best_return": 2000.0, "wall_s": 61.2, "env_steps_per_s": 80}
    assert progress_line(RunOutcome(spec, result)) == (
        "Hopper-v5 sac seed2: final return 1234.6 (best 2000.0), 61 s, 80 env steps/s"
    )
    assert progress_line(RunOutcome(spec, None, "boom")) == "Hopper-v5 sac seed2: FAILED: boom"
