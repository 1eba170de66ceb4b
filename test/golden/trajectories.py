"""Golden trajectories: what each algorithm learns in a tiny fixed-seed run, kept in
``test/golden/<name>.json`` so that a change to what an algorithm learns shows up in review.

A run (:func:`record`) collects 40 env steps on two seeded envs and updates once (an on-policy
update makes :data:`ON_POLICY_REPEATS` passes over the batch), three times over, on one torch
thread: the feed-forward algorithms on the dict-observation tasks of
``test/algorithm/test_spaces.py`` (every algorithm with its own networks there), the recurrent
ones on the velocity-hidden POMDP tasks. It keeps every update's losses, every collection's
finished-episode returns, and a checksum of the final state (networks, optimizers, statistics).

``test_golden.py`` recomputes every run and compares it with its file: exactly (the state's
SHA-256 too) on the platform the file was made on, else within :data:`RTOL`, as float results
may differ between CPUs and builds. When a change is meant to alter what an algorithm learns,
regenerate its file and say why in CHANGELOG.md::

    python -m test.golden.regenerate PPO SAC     # prints what changed, rewrites the files
    python -m test.golden.regenerate --all
"""

import hashlib
import json
import platform
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from test.algorithm.modelfree.test_recurrent_dqn import recurrent_policy as recurrent_q_policy
from test.algorithm.modelfree.test_recurrent_ppo import recurrent_policy as recurrent_ac_policy
from test.algorithm.modelfree.test_recurrent_sac import recurrent_policy as recurrent_sac_policy
from test.algorithm.test_spaces import (
    DICT_OBS_ALGORITHMS,
    dict_obs_algorithm,
    dict_obs_env,
    seed_everything,
    vector_env,
)
from tianshou.algorithm.algorithm_base import Algorithm, OfflineAlgorithm, OnPolicyAlgorithm
from tianshou.algorithm.modelfree.recurrent_dqn import RecurrentDQN
from tianshou.algorithm.modelfree.recurrent_ppo import RecurrentA2C, RecurrentPPO
from tianshou.algorithm.modelfree.recurrent_sac import RecurrentSAC
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.data.stats import SequenceSummaryStats
from tianshou.env import pomdp
from tianshou.utils.torch_utils import policy_within_training_step, torch_threads

GOLDEN_DIR = Path(__file__).resolve().parent
RTOL = 1e-4
"""Relative tolerance of a comparison on another platform than the file's."""
ATOL = 1e-6
COLLECTIONS = 3
STEPS_PER_COLLECTION = 40
BATCH_SIZE = 16
ON_POLICY_REPEATS = 10
"""Passes over each on-policy batch: enough for PPO's ratios to leave the clip range, so that
a changed clip range changes the trajectory."""

Build = Callable[[], tuple[Algorithm, Callable[[], gym.Env]]]


def _feed_forward(name: str) -> Build:
    def build() -> tuple[Algorithm, Callable[[], gym.Env]]:
        algorithm = dict_obs_algorithm(name)
        return algorithm, dict_obs_env(algorithm)

    return build


def _recurrent_ppo(algorithm_type: type[RecurrentA2C]) -> Build:
    def build() -> tuple[Algorithm, Callable[[], gym.Env]]:
        algorithm = algorithm_type(
            policy=recurrent_ac_policy(), optim=AdamOptimizerFactory(lr=1e-3), chunk_len=8
        )
        return algorithm, pomdp.cartpole_without_velocities

    return build


def _recurrent_dqn() -> tuple[Algorithm, Callable[[], gym.Env]]:
    algorithm = RecurrentDQN(policy=recurrent_q_policy(), optim=AdamOptimizerFactory(lr=1e-3))
    return algorithm, pomdp.cartpole_without_velocities


def _recurrent_sac() -> tuple[Algorithm, Callable[[], gym.Env]]:
    adam = AdamOptimizerFactory(lr=1e-3)
    algorithm = RecurrentSAC(policy=recurrent_sac_policy(), policy_optim=adam, critic_optim=adam)
    return algorithm, pomdp.pendulum_without_velocity


RUNS: dict[str, Build] = {
    **{name: _feed_forward(name) for name in DICT_OBS_ALGORITHMS},
    "RecurrentA2C": _recurrent_ppo(RecurrentA2C),
    "RecurrentPPO": _recurrent_ppo(RecurrentPPO),
    "RecurrentDQN": _recurrent_dqn,
    "RecurrentSAC": _recurrent_sac,
}
"""Every golden run by name (the names of ``test_spaces``' dict-observation algorithms, and the
recurrent ones)."""


def named_losses(stats: Any, prefix: str = "") -> dict[str, float]:
    """Every loss an update reports (a summary's mean), by its dotted field name."""
    losses = {}
    for field in fields(stats):
        value = getattr(stats, field.name)
        if isinstance(value, SequenceSummaryStats):
            value = value.mean
        if "loss" in field.name and isinstance(value, float):
            losses[prefix + field.name] = value
        elif is_dataclass(value):
            losses |= named_losses(value, f"{prefix}{field.name}.")
    return losses


def state_checksum(algorithm: Algorithm) -> dict[str, Any]:
    """The SHA-256 of every tensor of the algorithm's state (in key order), and the float sums
    that a tolerance can compare across platforms."""
    digest = hashlib.sha256()
    total, total_abs, count = 0.0, 0.0, 0
    for key, value in algorithm.state_dict().items():
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            continue
        array = value.detach().cpu().numpy()
        digest.update(key.encode())
        digest.update(np.ascontiguousarray(array).tobytes())
        total += float(array.astype(np.float64).sum())
        total_abs += float(np.abs(array.astype(np.float64)).sum())
        count += array.size
    return {"sha256": digest.hexdigest(), "sum": total, "sum_abs": total_abs, "count": count}


def platform_id() -> dict[str, str]:
    """What a bitwise-equal result needs: the CPU architecture and the torch and numpy builds."""
    return {"machine": platform.machine(), "torch": torch.__version__, "numpy": np.__version__}


def _update(algorithm: Algorithm, buffer: VectorReplayBuffer) -> Any:
    with policy_within_training_step(algorithm.policy):
        if isinstance(algorithm, OnPolicyAlgorithm):
            return algorithm.update(buffer=buffer, batch_size=BATCH_SIZE, repeat=ON_POLICY_REPEATS)
        return algorithm.update(sample_size=BATCH_SIZE, buffer=buffer)


def record(name: str) -> dict[str, Any]:
    """Run golden run ``name`` and return its trajectory (see the module docstring)."""
    with torch_threads(1):
        seed_everything(0)
        algorithm, make_env = RUNS[name]()
        buffer = VectorReplayBuffer(COLLECTIONS * STEPS_PER_COLLECTION + 2, 2)
        collector = Collector(algorithm, vector_env(make_env, 2, 0), buffer)
        collector.reset()
        returns, losses = [], []
        for _ in range(COLLECTIONS):
            with policy_within_training_step(algorithm.policy):
                stats = collector.collect(n_step=STEPS_PER_COLLECTION)
            returns.append([float(r) for r in np.asarray(stats.returns).reshape(-1)])
            if isinstance(algorithm, OfflineAlgorithm):
                algorithm.process_buffer(buffer)
            losses.append(named_losses(_update(algorithm, buffer)))
            if isinstance(algorithm, OnPolicyAlgorithm):  # as the on-policy trainer does
                collector.reset_buffer(keep_statistics=True)
        return {
            "algorithm": name,
            "platform": platform_id(),
            "collected_returns": returns,
            "losses": losses,
            "state": state_checksum(algorithm),
        }


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.json"


def load(name: str) -> dict[str, Any] | None:
    path = golden_path(name)
    return json.loads(path.read_text()) if path.is_file() else None


def save(trajectory: dict[str, Any]) -> None:
    golden_path(trajectory["algorithm"]).write_text(json.dumps(trajectory, indent=1) + "\n")


def differences(golden: dict[str, Any], fresh: dict[str, Any]) -> list[str]:
    """What differs between a golden trajectory and a fresh one, a line each; empty if they
    agree (exactly on the golden file's platform, else within the tolerance)."""
    exact = golden["platform"] == fresh["platform"]
    found = []

    def compare(where: str, old: Any, new: Any) -> None:
        if isinstance(old, dict) and isinstance(new, dict):
            for key in sorted(old.keys() | new.keys()):
                if key not in old or key not in new:
                    found.append(f"{where}.{key}: {'added' if key in new else 'gone'}")
                else:
                    compare(f"{where}.{key}", old[key], new[key])
        elif isinstance(old, list) and isinstance(new, list):
            if len(old) != len(new):
                found.append(f"{where}: {len(old)} entries, now {len(new)}")
            for i, (o, n) in enumerate(zip(old, new, strict=False)):
                compare(f"{where}[{i}]", o, n)
        elif isinstance(old, float) or isinstance(new, float):
            close = old == new if exact else np.isclose(new, old, rtol=RTOL, atol=ATOL)
            if not close:
                found.append(f"{where}: {old!r} -> {new!r}")
        elif old != new and not (where.endswith(".sha256") and not exact):
            found.append(f"{where}: {old!r} -> {new!r}")

    compare(golden["algorithm"], {k: v for k, v in golden.items() if k != "platform"},
            {k: v for k, v in fresh.items() if k != "platform"})  # fmt: skip
    return found
