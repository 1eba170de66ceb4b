"""What a training script says when it ends: a short summary for a person, and a result file
for a program.

Every example script ends a training run with :func:`report_training`, so that all of them
report the same figures in the same words: the task, the algorithm, the env steps, the wall
time, the best and final test returns, and where the log, the policy, the video (if any) and the
result file went. The result file (:data:`RESULT_FILE`, JSON, next to the log) holds these
figures and the run's full configuration, so that a table or a plot can be made from many runs
without parsing logs.

>>> summary = RunSummary(
...     task="CartPole-v1", algorithm="dqn", env_steps=1000, update_steps=100, wall_time_s=2.5,
...     best_test_return=200.0, final_test_return=195.5, log_dir="log/CartPole-v1/dqn/0",
...     policy_path=None, video_path=None, result_path="log/CartPole-v1/dqn/0/result.json",
...     config={"seed": 0},
... )
>>> print(summary.format().splitlines()[1])
  task               CartPole-v1
"""

import enum
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from tianshou.data import Collector, CollectStats, InfoStats

RESULT_FILE = "result.json"
"""The file name of the result file, in the run's log directory."""

ReturnReduction = Callable[[np.ndarray], np.ndarray]
"""Maps the returns of multi-agent episodes (one column per agent) to one return per episode."""


@dataclass(frozen=True, kw_only=True)
class RunSummary:
    """The figures and paths of one finished training run."""

    task: str
    """The task (env id, data set or game) trained on."""
    algorithm: str
    """The algorithm's name, as in the log path (e.g. ``sac``, ``dqn_icm``)."""
    env_steps: int
    """Env steps collected for training (0 for offline training)."""
    update_steps: int
    """The trainer's update steps (one per collect-and-update cycle, or per offline batch)."""
    wall_time_s: float
    """Seconds from the trainer's start to its end (training and tests)."""
    best_test_return: float
    """The mean test return of the best test step."""
    final_test_return: float
    """The mean return of the trained policy on new test episodes after training."""
    log_dir: str
    """Where the run's log (and result file) went."""
    policy_path: str | None
    """The saved policy (for ``--resume-path`` and ``--watch``); None if none was saved."""
    video_path: str | None
    """A recorded episode of the policy, if one was recorded."""
    result_path: str
    """The result file (JSON) holding this summary and ``config``."""
    config: dict[str, Any]
    """The run's full configuration (the script's options)."""

    def format(self) -> str:
        """The summary as a few aligned lines for the terminal."""
        rows = [
            ("task", self.task),
            ("algorithm", self.algorithm),
            ("env steps", f"{self.env_steps:,}"),
            ("wall time", f"{self.wall_time_s:.1f} s"),
            ("best test return", f"{self.best_test_return:.2f}"),
            ("final test return", f"{self.final_test_return:.2f}"),
            ("log directory", self.log_dir),
            ("policy", self.policy_path or "(none saved)"),
            ("video", self.video_path or "(none recorded)"),
            ("result file", self.result_path),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(["Run summary", *(f"  {name:<{width}}  {value}" for name, value in rows)])

    def to_json(self) -> str:
        """The summary as JSON; configuration values JSON cannot hold are written as text."""
        return json.dumps(asdict(self), indent=2, default=_json_value)


def _json_value(value: Any) -> Any:
    """A JSON-writable stand-in for a configuration value: an enum's name, a sequence as a list,
    anything else as its text."""
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    return str(value)


def final_test_return(
    collector: Collector[CollectStats],
    num_episodes: int,
    reduce_returns: ReturnReduction | None = None,
) -> float:
    """The mean return of ``num_episodes`` new test episodes of ``collector``'s policy.

    :param collector: a test collector (its envs are reset first).
    :param num_episodes: the episodes to run (at least 1).
    :param reduce_returns: for multi-agent episodes, maps their returns (one column per agent)
        to one return per episode, as the trainer's ``multi_agent_return_reduction`` does.
    """
    if num_episodes < 1:
        raise ValueError(f"final_test_return needs at least 1 episode, got {num_episodes}")
    stats = collector.collect(n_episode=num_episodes, reset_before_collect=True)
    returns = np.asarray(stats.returns)
    if reduce_returns is not None:
        returns = reduce_returns(returns)
    return float(np.mean(returns))


def report_training(
    *,
    task: str,
    algorithm: str,
    info: InfoStats,
    final_test_return: float,
    log_dir: str,
    config: Mapping[str, Any],
    policy_path: str | None,
    video_path: str | None = None,
) -> RunSummary:
    """Write the result file of a finished training run into ``log_dir`` and print its summary.

    :param task: the task trained on.
    :param algorithm: the algorithm's name.
    :param info: what the trainer returned (env steps, wall time, best test return).
    :param final_test_return: the trained policy's mean return on new test episodes (see
        :func:`final_test_return`).
    :param log_dir: the run's log directory; created if missing.
    :param config: the run's configuration, e.g. ``vars(args)``.
    :param policy_path: where the script saves its policy; reported as None if no file is there.
    :param video_path: a recorded episode of the policy, if any.
    """
    os.makedirs(log_dir, exist_ok=True)
    summary = RunSummary(
        task=task,
        algorithm=algorithm,
        env_steps=info.train_step,
        update_steps=info.update_step,
        wall_time_s=info.timing.total_time,
        best_test_return=float(info.best_reward),
        final_test_return=final_test_return,
        log_dir=log_dir,
        policy_path=policy_path if policy_path and os.path.exists(policy_path) else None,
        video_path=video_path,
        result_path=os.path.join(log_dir, RESULT_FILE),
        config=dict(config),
    )
    with open(summary.result_path, "w") as file:
        file.write(summary.to_json() + "\n")
    print(summary.format(), flush=True)
    return summary
