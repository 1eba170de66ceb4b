"""What a training script says when it ends: a short summary for a person, and a result file
for a program.

Every example script ends a training run with :func:`report_training`, so that all of them
report the same figures in the same words: the task, the algorithm, the env steps, the wall
time, the best and final test returns, and where the log, the policy, the video (if any) and the
result file went. The result file (:data:`RESULT_FILE`, JSON, next to the log) holds these
figures and the run's full configuration, so that a table or a plot can be made from many runs
without parsing logs. The high-level scripts report what
:meth:`~tianshou.highlevel.experiment.ExperimentBuilder.build_and_run` returned with
:func:`report_seed_results`: one run as above, several seeds as one table (:class:`SeedsSummary`)
with one result file for all of them.

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
import logging
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from tianshou.data import BaseCollector, CollectStats, InfoStats
from tianshou.highlevel.experiment_result import RunRecord, SeedResults
from tianshou.utils.logger import DataScope
from tianshou.utils.logger.reading import read_logged_data

log = logging.getLogger(__name__)

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
    log_dir: str | None
    """Where the run's log (and result file) went; None if it wrote no files."""
    policy_path: str | None
    """The saved policy (for ``--resume-path`` and ``--watch``); None if none was saved."""
    video_path: str | None
    """A recorded episode of the policy, if one was recorded."""
    result_path: str | None
    """The result file (JSON) holding this summary and ``config``; None if none was written."""
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
            ("log directory", self.log_dir or "(none: persistence off)"),
            ("policy", self.policy_path or "(none saved)"),
            ("video", self.video_path or "(none recorded)"),
            ("result file", self.result_path or "(none written)"),
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
    collector: BaseCollector[CollectStats],
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
    log_dir: str | None,
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
    :param log_dir: the run's log directory, created if missing; None writes no result file
        (a run that persisted nothing).
    :param config: the run's configuration, e.g. ``vars(args)``.
    :param policy_path: where the script saves its policy; reported as None if no file is there.
    :param video_path: a recorded episode of the policy, if any.
    """
    result_path = None
    if log_dir is not None:
        os.makedirs(log_dir, exist_ok=True)
        result_path = os.path.join(log_dir, RESULT_FILE)
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
        result_path=result_path,
        config=dict(config),
    )
    if result_path is not None:
        with open(result_path, "w") as file:
            file.write(summary.to_json() + "\n")
    print(summary.format(), flush=True)
    return summary


POLICY_FILE = "policy_state_dict.pt"
"""The high-level runs' saved policy parameters (what ``--resume-path`` loads)."""


@dataclass(frozen=True, kw_only=True)
class SeedRun:
    """The figures of one seed's run in a :class:`SeedsSummary`."""

    seed: int
    env_steps: int
    update_steps: int
    wall_time_s: float
    best_test_return: float
    """The mean test return of the run's best test step."""
    last_test_return: float
    """The mean return of the run's last test step, read from its log (NaN if none logged)."""
    log_dir: str
    policy_path: str | None


@dataclass(frozen=True, kw_only=True)
class SeedsSummary:
    """The figures of the runs of one configuration with several seeds."""

    task: str
    algorithm: str
    runs: list[SeedRun]
    result_path: str
    """The result file (JSON) holding this summary and ``config``."""
    config: dict[str, Any]

    def format(self) -> str:
        """The summary as a table of the seeds and their mean, for the terminal."""
        header = ("seed", "env steps", "wall time", "best test return", "last test return")
        rows = [
            (
                str(run.seed),
                f"{run.env_steps:,}",
                f"{run.wall_time_s:.1f} s",
                f"{run.best_test_return:.2f}",
                f"{run.last_test_return:.2f}",
            )
            for run in self.runs
        ]
        best = np.array([run.best_test_return for run in self.runs])
        last = np.array([run.last_test_return for run in self.runs])
        rows.append(("mean", "", "", _mean_and_std(best), _mean_and_std(last)))
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        lines = [
            f"Run summary: {self.algorithm} on {self.task}, {len(self.runs)} seeds",
            *(
                "  " + "  ".join(f"{c:>{w}}" for c, w in zip(row, widths, strict=True))
                for row in [header, *rows]
            ),
            f"  run directories  {os.path.dirname(self.runs[0].log_dir)}/seed=<seed>",
            f"  result file      {self.result_path}",
        ]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The summary as JSON; configuration values JSON cannot hold are written as text."""
        return json.dumps(asdict(self), indent=2, default=_json_value)


def _mean_and_std(values: np.ndarray) -> str:
    return f"{np.mean(values):.2f} ± {np.std(values):.2f}"


def last_logged_test_return(log_dir: str) -> float:
    """The mean return of the last test step logged in ``log_dir``; NaN if none was logged.

    :param log_dir: a run's log directory (TensorBoard or CSV).
    """
    test = read_logged_data(log_dir).get(DataScope.TEST.value)
    returns = test.get("returns_stat") if isinstance(test, dict) else None
    means = returns.get("mean") if isinstance(returns, dict) else None
    if not isinstance(means, np.ndarray):
        return math.nan
    logged = means[~np.isnan(means)]
    return float(logged[-1]) if logged.size else math.nan


def report_seed_results(
    results: SeedResults, *, task: str, config: Mapping[str, Any]
) -> RunSummary | SeedsSummary | None:
    """Write the result file of the runs that ``build_and_run`` returned and print their
    summary; nothing when a run did not train (e.g. it only watched a restored policy) or when
    the runs are not known.

    A single run in this process is summarised as by :func:`report_training` (with no result
    file when persistence was off), its final test return measured on new episodes of its test
    collector; several seeds (persistence on, as their logs are read) as a
    :class:`SeedsSummary`, whose result file goes into the experiment directory above the
    seeds' run directories.

    :param results: what ``build_and_run`` returned.
    :param task: the task trained on.
    :param config: the configuration to store, e.g. the script's options.
    """
    infos = [info for info in results if info is not None]
    if not results.runs or len(infos) != len(results):
        log.info("no run summary: a run did not train")
        return None
    if len(results) == 1:
        return _report_single_run(results, results.runs[0], task, config)
    directories = [run.directory for run in results.runs if run.directory is not None]
    if len(directories) != len(results):
        log.info("no run summary: the seeds' runs wrote no logs to read (persistence off)")
        return None
    runs = [
        SeedRun(
            seed=run.seed,
            env_steps=info.train_step,
            update_steps=info.update_step,
            wall_time_s=info.timing.total_time,
            best_test_return=float(info.best_reward),
            last_test_return=last_logged_test_return(directory),
            log_dir=directory,
            policy_path=_existing(os.path.join(directory, POLICY_FILE)),
        )
        for run, info, directory in zip(results.runs, infos, directories, strict=True)
    ]
    summary = SeedsSummary(
        task=task,
        algorithm=results.runs[0].algorithm,
        runs=runs,
        result_path=os.path.join(os.path.dirname(directories[0]), RESULT_FILE),
        config=dict(config),
    )
    with open(summary.result_path, "w") as file:
        file.write(summary.to_json() + "\n")
    print(summary.format(), flush=True)
    return summary


def _report_single_run(
    results: SeedResults, run: RunRecord, task: str, config: Mapping[str, Any]
) -> RunSummary:
    world = results.world
    info = results[0]
    assert info is not None  # checked by the caller
    collector = world.test_collector
    final = final_test_return(collector, collector.env_num) if collector is not None else math.nan
    return report_training(
        task=task,
        algorithm=run.algorithm,
        info=info,
        final_test_return=final,
        log_dir=run.directory,
        config=config,
        policy_path=None if run.directory is None else os.path.join(run.directory, POLICY_FILE),
    )


def _existing(path: str) -> str | None:
    return path if os.path.exists(path) else None
