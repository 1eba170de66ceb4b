"""Speed of data collection: ``Collector`` against bare loops over the same gymnasium envs.

Every figure is one JSON line of environment steps per second. For each task (CartPole-v1 and
Hopper-v5) it measures, in the same run:

* the limits: a bare loop stepping one env directly, a bare loop stepping 8 envs one after
  another, a bare loop over ``gymnasium.vector.SyncVectorEnv`` (8 envs), and the bare 8-env
  loop calling a small MLP on the stacked observations;
* ``Collector.collect(random=True)`` and ``collect()`` with the same MLP wrapped in a Policy,
  over ``DummyVectorEnv`` (1 and 8 envs), ``SubprocVectorEnv`` and ``ShmemVectorEnv`` (8 envs)
  and EnvPool (8 envs, when installed).

Then one ``"collect_target"`` line per judged ratio (collector / limit, measured in the same
run). Each figure is the best of 12 windows of 0.25 s, the cases taking turns (see
:func:`measure`); ``torch`` uses one thread. Seeds are fixed (envs ``SEED + i``).

Run: ``python -m benchmark.collect`` (about 2 minutes). ``--quick`` makes a short smoke run;
``--tasks`` and ``--cases`` (glob patterns, e.g. ``--cases 'bare_loop_1' '*dummy_1'``) restrict
what is measured. Hopper needs ``mujoco``; the collectors write into a
``VectorReplayBuffer(100_000, env_num)``.
"""

import argparse
import fnmatch
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from benchmark.common import emit
from tianshou.algorithm.algorithm_base import Policy
from tianshou.data import Batch, VectorReplayBuffer
from tianshou.data.collector import Collector
from tianshou.env.venvs import DummyVectorEnv, ShmemVectorEnv, SubprocVectorEnv

ENV_NUM = 8
HIDDEN = 64
SEED = 0

TARGETS = [
    # (task, collector case, limit case, minimum ratio)
    ("Hopper-v5", "collector_random_dummy_1", "bare_loop_1", 0.85),
    ("CartPole-v1", "collector_random_dummy_8", "bare_sync_vector_env_8", 0.60),
    ("Hopper-v5", "collector_mlp_dummy_8", "bare_loop_mlp_8", 0.80),
]


class MLPPolicy(Policy):
    """A small MLP acting greedily: argmax of logits (discrete) or tanh outputs (continuous)."""

    def __init__(self, net: nn.Module, action_space: gym.Space) -> None:
        continuous = isinstance(action_space, gym.spaces.Box)
        super().__init__(action_space=action_space, action_scaling=continuous)
        self.net = net
        self.continuous = continuous

    def forward(self, batch: Batch, state: Any = None, **kwargs: Any) -> Batch:
        out = self.net(torch.as_tensor(batch.obs, dtype=torch.float32))
        return Batch(act=out if self.continuous else out.argmax(dim=-1))


def make_net(env: gym.Env) -> nn.Module:
    torch.manual_seed(SEED)
    obs_dim = int(np.prod(env.observation_space.shape or (1,)))
    space = env.action_space
    continuous = isinstance(space, gym.spaces.Box)
    if isinstance(space, gym.spaces.Box):
        act_dim = int(np.prod(space.shape))
    else:
        assert isinstance(space, gym.spaces.Discrete)
        act_dim = int(space.n)
    layers: list[nn.Module] = [nn.Linear(obs_dim, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, HIDDEN)]
    layers += [nn.ReLU(), nn.Linear(HIDDEN, act_dim)]
    if continuous:
        layers.append(nn.Tanh())
    return nn.Sequential(*layers).eval()


def net_actions(net: nn.Module, obs: np.ndarray, continuous: bool) -> np.ndarray:
    with torch.no_grad():
        out = net(torch.as_tensor(obs, dtype=torch.float32))
    return out.numpy() if continuous else out.argmax(dim=-1).numpy()


# ------------------------------------------------------------------------------ bare limits
def bare_loop(task: str, env_num: int, net: nn.Module | None) -> Callable[[int], int]:
    """Step ``env_num`` envs one after another; actions sampled, or from ``net`` on the stack."""
    envs = [gym.make(task) for _ in range(env_num)]
    obs = [env.reset(seed=SEED + i)[0] for i, env in enumerate(envs)]
    for i, env in enumerate(envs):
        env.action_space.seed(SEED + i)
    continuous = isinstance(envs[0].action_space, gym.spaces.Box)

    def run(n_steps: int) -> int:
        for _ in range(max(1, n_steps // env_num)):
            acts = (
                net_actions(net, np.stack(obs), continuous)
                if net is not None
                else [env.action_space.sample() for env in envs]
            )
            for i, env in enumerate(envs):
                o, _, terminated, truncated, _ = env.step(acts[i])
                obs[i] = env.reset()[0] if terminated or truncated else o
        return max(1, n_steps // env_num) * env_num

    return run


def bare_sync_vector_env(task: str, env_num: int) -> Callable[[int], int]:
    venv = gym.vector.SyncVectorEnv([lambda: gym.make(task) for _ in range(env_num)])
    venv.reset(seed=SEED)
    venv.action_space.seed(SEED)

    def run(n_steps: int) -> int:
        for _ in range(max(1, n_steps // env_num)):
            venv.step(venv.action_space.sample())
        return max(1, n_steps // env_num) * env_num

    return run


# ------------------------------------------------------------------------------ collectors
def make_venv(kind: str, task: str, env_num: int) -> Any:
    if kind == "envpool":
        import envpool

        return envpool.make(task, env_type="gymnasium", num_envs=env_num, seed=SEED)
    cls = {"dummy": DummyVectorEnv, "subproc": SubprocVectorEnv, "shmem": ShmemVectorEnv}[kind]
    venv = cls([lambda: gym.make(task) for _ in range(env_num)])
    venv.seed(SEED)
    return venv


def collector_case(
    task: str, kind: str, env_num: int, policy: Policy, random: bool
) -> tuple[Callable[[int], int], Callable[[], None]]:
    venv = make_venv(kind, task, env_num)
    buffer = VectorReplayBuffer(100_000, env_num)
    collector: Collector = Collector(policy, venv, buffer)
    collector.reset()
    collector.collect(n_step=env_num * 50, random=random)  # warm-up: storage, numba kernels

    def run(n_steps: int) -> int:
        n_steps = max(env_num, n_steps - n_steps % env_num)
        return collector.collect(n_step=n_steps, random=random).n_collected_steps

    return run, venv.close


def steps_per_second(run: Callable[[int], int], seconds: float) -> float:
    """Steps/s of ``run`` over about ``seconds`` (calls of ~1000 steps)."""
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        steps += run(1000)
    return steps / (time.perf_counter() - start)


def measure(cases: dict[str, Callable[[int], int]], window: float, rounds: int) -> dict:
    """Best steps/s of each case over ``rounds`` short windows, the cases taking turns.

    Short alternating windows with best-of make the figures robust to other processes: a
    burst of foreign load spoils a few windows of every case rather than one case's whole run.
    """
    best = dict.fromkeys(cases, 0.0)
    for _ in range(rounds):
        for name, run in cases.items():
            best[name] = max(best[name], steps_per_second(run, window))
    return best


def case_factories(
    task: str, with_envpool: bool
) -> dict[str, Callable[[], tuple[Callable[[int], int], Callable[[], None]]]]:
    """Every case of ``task`` by name, built on demand: ``() -> (run, close)``."""
    probe = gym.make(task)
    net = make_net(probe)
    policy = MLPPolicy(net, probe.action_space)

    def no_close() -> None:
        return None

    factories: dict[str, Callable[[], tuple[Callable[[int], int], Callable[[], None]]]] = {
        "bare_loop_1": lambda: (bare_loop(task, 1, None), no_close),
        "bare_loop_8": lambda: (bare_loop(task, ENV_NUM, None), no_close),
        "bare_sync_vector_env_8": lambda: (bare_sync_vector_env(task, ENV_NUM), no_close),
        "bare_loop_mlp_8": lambda: (bare_loop(task, ENV_NUM, net), no_close),
    }
    kinds = [("dummy", 1), ("dummy", ENV_NUM), ("subproc", ENV_NUM), ("shmem", ENV_NUM)]
    if with_envpool:
        kinds.append(("envpool", ENV_NUM))
    for kind, env_num in kinds:
        for mode in ("random", "mlp"):
            factories[f"collector_{mode}_{kind}_{env_num}"] = partial(
                collector_case, task, kind, env_num, policy, mode == "random"
            )
    return factories


def bench_task(
    task: str, window: float, rounds: int, with_envpool: bool, patterns: list[str]
) -> dict[str, float]:
    factories = case_factories(task, with_envpool)
    names = [n for n in factories if any(fnmatch.fnmatch(n, p) for p in patterns)]
    cases: dict[str, Callable[[int], int]] = {}
    closers = []
    try:
        for name in names:
            cases[name], close = factories[name]()
            closers.append(close)
        results = measure(cases, window, rounds)
    finally:
        for close in closers:
            close()
    for name, value in results.items():
        emit({"bench": "collect", "task": task, "case": name, "env_steps_per_s": value})
    return results


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short smoke run")
    parser.add_argument("--tasks", nargs="+", default=["CartPole-v1", "Hopper-v5"])
    parser.add_argument(
        "--cases", nargs="+", default=["*"], help="glob patterns of case names to run"
    )
    args = parser.parse_args(argv)
    window, rounds = (0.1, 2) if args.quick else (0.25, 12)
    warnings.filterwarnings("ignore", category=UserWarning)
    try:
        import envpool  # noqa: F401

        with_envpool = True
    except ImportError:
        with_envpool = False
    torch.set_num_threads(1)
    results = {
        task: bench_task(task, window, rounds, with_envpool, args.cases) for task in args.tasks
    }
    emit_targets(results)


def emit_targets(results: dict[str, dict[str, float]]) -> None:
    """One line per judged ratio whose two cases were measured."""
    comparisons = [(task, case, limit, minimum) for task, case, limit, minimum in TARGETS]
    for task in results:
        for mode in ("random", "mlp"):
            envpool, subproc = f"collector_{mode}_envpool_8", f"collector_{mode}_subproc_8"
            comparisons.append((task, envpool, subproc, 1.0))
    for task, case, limit, minimum in comparisons:
        measured = results.get(task, {})
        if case in measured and limit in measured:
            ratio = measured[case] / measured[limit]
            emit(
                {
                    "bench": "collect_target",
                    "task": task,
                    "case": case,
                    "limit": limit,
                    "ratio": ratio,
                    "target_ratio": minimum,
                    "ok": ratio >= minimum if minimum < 1.0 else ratio > minimum,
                }
            )


if __name__ == "__main__":
    main()
