"""What the benchmark scripts share: timing, JSON-line output, the library-against-bare
comparison, and the bare PyTorch building blocks of the ``bare_*`` speed limits.

* Timing: :func:`seconds_per_call` (best of several windows) on one of :data:`CLOCKS`, and
  :func:`emit`, which prints one result as a JSON line.
* Comparison: a :class:`Case` pairs a library update with the bare update of the same work;
  :func:`measure` times both alternately and reports their rates and ratio.
  :func:`in_training_step` wraps a library update as the trainer runs it, :func:`copy_into`
  gives a bare learner the library's initial weights.
* Bare building blocks (nothing tianshou): :func:`mlp`, :func:`adam` (torch's fused Adam),
  :func:`random_transitions`, :class:`Replay` (preallocated tensors with a uniform minibatch
  gather) and :func:`gae` (a numba loop).

See ``benchmark/README.md`` for the conventions these implement.
"""

import itertools
import json
import math
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numba
import numpy as np
import torch
from torch import nn

from tianshou.algorithm.algorithm_base import Algorithm
from tianshou.utils.torch_utils import policy_within_training_step

HOPPER_OBS, HOPPER_ACT = 11, 3
"""Hopper-v5's observation and action widths, the shapes of most continuous-control cases."""

CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
"""``"cpu"``: this process's CPU time, which stays meaningful when other processes crowd the
cores; ``"wall"``: wall-clock seconds."""


# ------------------------------------------------------------------------------- busy core
@contextmanager
def one_core_busy() -> Iterator[None]:
    """Another process spinning on one core (a pure-Python loop) for the duration of the
    block: the load of a laptop that is doing something else."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True:\n    pass\n"])
    try:
        time.sleep(0.5)  # let it take its core
        yield
    finally:
        spinner.kill()
        spinner.wait()


# ----------------------------------------------------------------------------------- timing
def seconds_per_call(
    fn: Callable[[], Any],
    min_time: float = 0.2,
    repeat: int = 5,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Best-of-``repeat`` mean seconds per call of ``fn``, timed by ``clock`` (wall clock by
    default; ``time.process_time`` counts only this process's CPU time, which stays meaningful
    when other processes crowd the cores).

    The call count per repeat is grown until one repeat lasts at least ``min_time`` seconds, so
    fast operations are not dominated by the clock's resolution. Taking the best repeat filters
    out interference from other processes on a shared machine. One untimed warm-up call comes
    first, so one-off costs (lazy allocation, loading cached numba kernels) do not pin the call
    count at one.
    """
    fn()
    number = 1
    while True:
        start = clock()
        for _ in range(number):
            fn()
        elapsed = clock() - start
        if elapsed >= min_time:
            break
        number *= 2 if elapsed <= 0 else max(2, int(min_time / elapsed) + 1)
    best = elapsed / number
    for _ in range(repeat - 1):
        start = clock()
        for _ in range(number):
            fn()
        best = min(best, (clock() - start) / number)
    return best


def emit(record: dict[str, Any]) -> None:
    """Print one benchmark result as a JSON line (floats rounded for readability), with the
    torch intra-op thread count it ran with (``torch_threads``) unless the record states one."""
    record = record | {"torch_threads": record.get("torch_threads", torch.get_num_threads())}
    rounded = {k: round(v, 4) if isinstance(v, float) else v for k, v in record.items()}
    print(json.dumps(rounded), flush=True)


# ------------------------------------------------------------------------------- comparison
@dataclass
class Case:
    """A library update and the bare update of the same work, ready to be timed.

    :param name: the case's name; the JSON line's ``bench`` is ``<name>_update``.
    :param shapes: the shapes and sizes, in words, for the JSON line.
    :param target_ratio: the least bare/library time ratio the library should reach; ``None``
        reports the ratio without a target.
    """

    name: str
    shapes: str
    library_update: Callable[[], object]
    bare_update: Callable[[], object]
    target_ratio: float | None = 0.9


def in_training_step(algorithm: Algorithm, update: Callable[[], object]) -> Callable[[], object]:
    """``update`` run inside the policy's training step, as the trainers run updates."""

    def run() -> object:
        with policy_within_training_step(algorithm.policy):
            return update()

    return run


def measure(
    case: Case, rounds: int, min_time: float, clock: str = "cpu", repeat: int = 2
) -> dict[str, float | str | None]:
    """Best seconds per update of both sides over ``rounds`` alternating measurements.

    :param min_time: seconds (of ``clock``) per timed window.
    :param clock: a key of :data:`CLOCKS`.
    :param repeat: timed windows per side and round.
    :return: the JSON record: ``updates_per_s`` (library), ``bare_updates_per_s``, ``ratio``
        (library rate / bare rate), ``target_ratio`` and ``ok`` (the ratio reaches the target;
        ``None`` without a target).
    """
    timer = CLOCKS[clock]
    library = bare = float("inf")
    for _ in range(rounds):  # alternate, so drifting machine load hits both alike
        library = min(
            library, seconds_per_call(case.library_update, min_time, repeat=repeat, clock=timer)
        )
        bare = min(bare, seconds_per_call(case.bare_update, min_time, repeat=repeat, clock=timer))
    ratio = bare / library
    return {
        "bench": f"{case.name}_update",
        "shapes": case.shapes,
        "updates_per_s": 1 / library,
        "bare_updates_per_s": 1 / bare,
        "ratio": ratio,
        "target_ratio": case.target_ratio,
        "ok": None if case.target_ratio is None else ratio >= case.target_ratio,
        "clock": clock,
    }


def copy_into(targets: Sequence[torch.Tensor], sources: Sequence[torch.Tensor]) -> None:
    """Copy the library's ``sources`` into the bare learner's ``targets``, in order (each
    source reshaped to its target's shape).

    :raises ValueError: if the two lists differ in length (the networks do not correspond).
    """
    if len(targets) != len(sources):
        raise ValueError(f"{len(targets)} bare tensors for {len(sources)} library tensors")
    with torch.no_grad():
        for target, source in zip(targets, sources, strict=True):
            target.copy_(source.reshape(target.shape))


def box(act_dim: int) -> gym.spaces.Box:
    """The action space ``[-1, 1] ** act_dim``."""
    return gym.spaces.Box(-1.0, 1.0, shape=(act_dim,))


# ------------------------------------------------------------------------ bare building blocks
def mlp(
    *sizes: int, activation: type[nn.Module] = nn.ReLU, last_activation: bool = False
) -> nn.Sequential:
    """Linear layers from each width of ``sizes`` to the next, with ``activation`` between them
    (and after the last one if ``last_activation``, for a body that a head follows).

    ``mlp(11, 256, 256, 3)`` is two hidden layers of 256 units and a linear output of 3.
    """
    layers: list[nn.Module] = []
    for i, (n_in, n_out) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(n_in, n_out))
        if last_activation or i < len(sizes) - 2:
            layers.append(activation())
    return nn.Sequential(*layers)


def squashed_gaussian_sample(actor_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """SAC's tanh-squashed Gaussian action in ``[-1, 1]`` and its log-probability (with the tanh
    correction), from an actor output whose last dimension holds the mean and the log-std."""
    mu, log_std = actor_out.chunk(2, dim=-1)
    std = log_std.clamp(-20, 2).exp()
    pre_tanh = mu + std * torch.randn_like(mu)
    log_prob = (-0.5 * ((pre_tanh - mu) / std) ** 2 - std.log() - 0.5 * math.log(2 * math.pi)).sum(
        -1
    )
    act = torch.tanh(pre_tanh)
    return act, log_prob - torch.log(1 - act.pow(2) + 1e-6).sum(-1)


def adam(params: Iterable[torch.Tensor], lr: float) -> torch.optim.Adam:
    """Torch's fused Adam, the fastest there is on the CPU (what ``AdamOptimizerFactory``
    builds where it can)."""
    return torch.optim.Adam(params, lr=lr, fused=True)


def random_transitions(
    size: int, obs_dim: int, act_dim: int, discrete: bool, seed: int = 0
) -> dict[str, np.ndarray]:
    """``size`` random transitions laid out as one env's rollout, as numpy columns.

    Episodes end about every 100 steps. As in a collected rollout, each next observation is
    the following row's observation, except where an episode ends (the next row starts a new
    episode) and at the last row (the episode goes on): there it is an observation of its own.

    :param act_dim: the action width, or the number of actions if ``discrete``.
    """
    rng = np.random.default_rng(seed)
    if discrete:
        act = rng.integers(0, act_dim, size)
    else:
        act = rng.uniform(-1, 1, (size, act_dim)).astype(np.float32)
    terminated = rng.random(size) < 0.01
    truncated = ~terminated & (rng.random(size) < 0.002)
    done = terminated | truncated
    states = rng.standard_normal((size + 1, obs_dim)).astype(np.float32)
    obs_next = states[1:].copy()
    obs_next[done] = rng.standard_normal((int(done.sum()), obs_dim)).astype(np.float32)
    return {
        "obs": states[:-1],
        "act": act,
        "rew": rng.standard_normal(size).astype(np.float32),
        "terminated": terminated,
        "truncated": truncated,
        "done": done,
        "obs_next": obs_next,
    }


class Replay:
    """Preallocated transition tensors (from :func:`random_transitions`' columns) and a
    uniform minibatch gather."""

    def __init__(self, data: dict[str, np.ndarray]) -> None:
        self.obs = torch.as_tensor(data["obs"])
        self.act = torch.as_tensor(data["act"])
        self.rew = torch.as_tensor(data["rew"])
        self.terminated = torch.as_tensor(data["terminated"])
        self.truncated = torch.as_tensor(data["truncated"])
        self.obs_next = torch.as_tensor(data["obs_next"])

    def sample(self, batch_size: int) -> tuple[torch.Tensor, ...]:
        """``(obs, act, rew, terminated, obs_next)`` of ``batch_size`` uniformly drawn rows."""
        idx = torch.randint(0, len(self.obs), (batch_size,))
        return self.obs[idx], self.act[idx], self.rew[idx], self.terminated[idx], self.obs_next[idx]


@numba.njit(cache=True, nogil=True)
def gae(
    v_s: np.ndarray, v_next: np.ndarray, rew: np.ndarray, end: np.ndarray, gamma: float, lam: float
) -> np.ndarray:
    """GAE(``lam``) advantages of a rollout in chronological order.

    :param v_s: the values of the observations.
    :param v_next: the values of the next observations, already zero where the episode
        terminated (a truncated episode still bootstraps).
    :param end: True where the episode ends (terminated or truncated) or the rollout stops:
        the advantage does not run on across such rows.
    """
    out = np.empty(rew.shape[0])
    advantage = 0.0
    for i in range(rew.shape[0] - 1, -1, -1):
        delta = rew[i] + gamma * v_next[i] - v_s[i]
        advantage = delta if end[i] else delta + gamma * lam * advantage
        out[i] = advantage
    return out
