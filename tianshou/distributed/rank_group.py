"""The ranks of a training run, as the trainers and the optimizers see them.

A run is either one process (:data:`SINGLE_PROCESS`, the default: everything is local and every
method is the identity) or one rank of a data-parallel job (:class:`DataParallel`): N processes,
each with its own envs, collector, buffer and replica of the algorithm, whose replicas stay
equal because

* the whole algorithm state (weights, optimizer states, running statistics, counters) and the
  observation statistics start as rank 0's (:meth:`DataParallel.attach`), also when resuming
  from a checkpoint only rank 0 loaded,
* every optimizer step first averages the gradients over the ranks (:func:`average_gradients`,
  called by ``Algorithm.Optimizer`` before gradient clipping, so the norm clipped is the mean
  gradient's), and learning-rate schedulers step once per update on every rank,
* running statistics that shape learning (observation normalisation, return scaling) are merged
  at the end of every training step (:meth:`RankGroup.merge_running_stats`), so every update
  starts from, and every checkpoint holds, the same statistics on every rank,
* the trainers agree on every decision a rank could take alone: env steps and episodes are
  summed over the ranks (so epochs end together), a stop is decided once for all.

Only rank 0 reports (:attr:`RankGroup.is_reporting`): it logs, tests and saves checkpoints.
"""

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import torch
import torch.distributed as dist
from torch import nn

from tianshou.distributed.failure_record import recorded_failure
from tianshou.distributed.running_stats import Moments, fold_contributions
from tianshou.distributed.shared_memory_exchange import SharedMemoryExchange
from tianshou.env.venv_wrappers import VectorEnvNormObs, VectorEnvWrapper
from tianshou.env.venvs import BaseVectorEnv
from tianshou.utils.statistics import RunningMeanStd

if TYPE_CHECKING:
    from tianshou.algorithm.algorithm_base import Algorithm

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
"""How long a rank waits for the others before failing (torch's default is 30 minutes, far
too long to notice a rank that hangs)."""


@dataclass(frozen=True, slots=True)
class CollectionTotals:
    """What the ranks collected in one training step, together."""

    env_steps: int
    episodes: int
    any_wants_test: bool
    """Whether some rank's training episodes satisfied ``stop_fn`` (so a test step is due)."""


class RankGroup(Protocol):
    """What a trainer needs to know about the ranks of its run."""

    @property
    def rank(self) -> int: ...

    @property
    def world_size(self) -> int: ...

    @property
    def is_reporting(self) -> bool:
        """Whether this rank logs, tests and saves (rank 0)."""
        ...

    def sum_collection(self, env_steps: int, episodes: int, wants_test: bool) -> CollectionTotals:
        """The training step's collection summed over the ranks.

        :raises RuntimeError: if the ranks collected different numbers of env steps (their
            updates would take different numbers of gradient steps and wait for each other
            forever).
        """
        ...

    def decision_of_reporter(self, value: T) -> T:
        """Rank 0's ``value`` on every rank (a stop decision, resumed counters)."""
        ...

    def merge_running_stats(self) -> None:
        """Merge the running statistics the ranks added since the last merge."""
        ...

    def check_same_config(self, config: Mapping[str, Any]) -> None:
        """Refuse to start unless every rank has the same ``config``."""
        ...

    def attach(self, algorithm: "Algorithm", training_envs: BaseVectorEnv | None = None) -> None:
        """Start this rank's ``algorithm`` (and training envs' statistics) as rank 0's and keep
        them equal from now on."""
        ...


class _SingleProcess:
    """A run of one process: sums are the local values, decisions local."""

    rank = 0
    world_size = 1
    is_reporting = True

    def sum_collection(self, env_steps: int, episodes: int, wants_test: bool) -> CollectionTotals:
        return CollectionTotals(env_steps, episodes, wants_test)

    def decision_of_reporter(self, value: T) -> T:
        return value

    def merge_running_stats(self) -> None:
        pass

    def check_same_config(self, config: Mapping[str, Any]) -> None:
        pass

    def attach(self, algorithm: "Algorithm", training_envs: BaseVectorEnv | None = None) -> None:
        pass


SINGLE_PROCESS: RankGroup = _SingleProcess()
"""The rank group of an ordinary, single-process run."""


class DataParallel:
    """This process's rank in a data-parallel job over an initialised ``torch.distributed``
    process group; see the module docstring for what it keeps equal and how.

    Create it with :func:`~tianshou.distributed.data_parallel` (which also initialises and
    finally destroys the process group) and :meth:`attach` the algorithm before training.

    Gradients are averaged through shared memory when every rank runs on this machine and the
    replicas are on the CPU (see :mod:`~tianshou.distributed.shared_memory_exchange`: gloo's
    all-reduce latency would otherwise cost as much as the gradient steps of small networks),
    else by the process group's all-reduce.

    :param device: where gradients are reduced (the replicas' device; CUDA for NCCL).
    :param timeout_s: how long a rank waits for the others' gradients before failing (the
        process group's own collectives have the timeout they were created with).
    """

    def __init__(self, device: torch.device, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        if not dist.is_initialized():
            raise RuntimeError(
                "DataParallel needs an initialised torch.distributed process group; start the "
                "run with torchrun (or torch.multiprocessing) and tianshou.distributed."
                "data_parallel()"
            )
        self.device = device
        self.timeout_s = timeout_s
        self._rank = dist.get_rank()
        self._world_size = dist.get_world_size()
        self._training_envs: BaseVectorEnv | None = None
        self._agreed: dict[int, Moments] = {}
        self._local_exchange: SharedMemoryExchange | None = None
        self._stats_locations: list[tuple[object, str]] = []

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def is_reporting(self) -> bool:
        return self._rank == 0

    @property
    def gradient_averaging(self) -> str:
        """How this rank averages gradients: ``"shared_memory"`` (every rank on this machine,
        CPU replicas, set up by :meth:`attach`) or ``"all_reduce"`` (the process group's)."""
        return "all_reduce" if self._local_exchange is None else "shared_memory"

    # ------------------------------------------------------------------ start
    def check_same_config(self, config: Mapping[str, Any]) -> None:
        """Refuse to start unless every rank has the same ``config`` (e.g. the script's options
        without those that differ per rank by design).

        :raises ValueError: on every rank, naming the keys that differ and their values.
        """
        shown = {key: repr(value) for key, value in config.items()}
        gathered: list[dict[str, str]] = [{} for _ in range(self._world_size)]
        dist.all_gather_object(gathered, shown)
        problems = differing_config_keys(gathered)
        if problems:
            raise ValueError(
                "the ranks were started with different configurations: " + "; ".join(problems)
            )

    def attach(self, algorithm: "Algorithm", training_envs: BaseVectorEnv | None = None) -> None:
        """Make this rank's ``algorithm`` (and the observation statistics of ``training_envs``,
        if they normalise observations) rank 0's, and keep them equal from now on.

        All of the algorithm's state is rank 0's afterwards: weights, target networks,
        optimizer and learning-rate scheduler states, running statistics and update counters,
        so a run resumes from a checkpoint that only rank 0 loaded.

        :raises NotImplementedError: for NPG and TRPO, whose natural-gradient step (conjugate
            gradients on a Fisher-vector product, a line search) is not a gradient that
            averaging would keep exact.
        """
        from tianshou.algorithm.modelfree.npg import NPG

        if isinstance(algorithm, NPG):
            raise NotImplementedError(
                f"{type(algorithm).__name__} cannot be trained data-parallel: its "
                "natural-gradient step is not an optimizer step on an averaged gradient; use "
                "PPO, A2C or REINFORCE, or train it in one process"
            )
        self._stats_locations = _running_stats_locations(algorithm)
        self._training_envs = training_envs
        self._load_reporters_state(algorithm)
        self._open_local_exchange(algorithm)
        for stats in self._running_stats():
            self.decision_of_reporter(Moments.of(stats)).write_to(stats)
            self._agreed[id(stats)] = Moments.of(stats)

    # ------------------------------------------------------------------ during training
    def sum_collection(self, env_steps: int, episodes: int, wants_test: bool) -> CollectionTotals:
        local = torch.tensor([env_steps, episodes, int(wants_test)], dtype=torch.int64)
        gathered = self._all_gather(local)
        steps = gathered[:, 0].tolist()
        if len(set(steps)) > 1:
            raise RuntimeError(
                f"the ranks collected different numbers of env steps ({steps}, by rank); a "
                "data-parallel run needs equal collections: collect by env steps "
                "(collection_step_num_env_steps, not episodes) with the same number of envs "
                "on every rank"
            )
        return CollectionTotals(
            env_steps=int(gathered[:, 0].sum()),
            episodes=int(gathered[:, 1].sum()),
            any_wants_test=bool(gathered[:, 2].any()),
        )

    def decision_of_reporter(self, value: T) -> T:
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def merge_running_stats(self) -> None:
        stats_list = self._running_stats()
        if not stats_list:
            return
        added = [
            Moments.of(stats).since(self._agreed.get(id(stats), _EMPTY)) for stats in stats_list
        ]
        gathered: list[list[Moments]] = [[] for _ in range(self._world_size)]
        dist.all_gather_object(gathered, added)
        for i, stats in enumerate(stats_list):
            agreed = fold_contributions(
                self._agreed.get(id(stats), _EMPTY), [per_rank[i] for per_rank in gathered]
            )
            agreed.write_to(stats)
            # the next contributions are counted from the statistics as kept (in their float
            # type), which a checkpoint restores exactly: a resumed run merges as the original
            self._agreed[id(stats)] = Moments.of(stats)

    def average_gradients(self, optimizer: torch.optim.Optimizer) -> None:
        """Replace the gradients of ``optimizer``'s parameters by their mean over the ranks, in
        one all-reduce of their concatenation."""
        grads = [
            p.grad
            for group in optimizer.param_groups
            for p in group["params"]
            if p.grad is not None
        ]
        if not grads:
            return
        flat = torch.cat([g.reshape(-1) for g in grads])
        if self._local_exchange is None or not self._local_exchange.mean_(flat):
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
            flat /= self._world_size
        offset = 0
        for g in grads:
            g.copy_(flat[offset : offset + g.numel()].view_as(g))
            offset += g.numel()

    def close(self) -> None:
        """Release what the rank holds beyond the process group (the shared-memory exchange);
        :func:`~tianshou.distributed.data_parallel` calls it on leaving."""
        if self._local_exchange is not None:
            self._local_exchange.close()
            self._local_exchange = None

    # ------------------------------------------------------------------ helpers
    def _open_local_exchange(self, algorithm: "Algorithm") -> None:
        """Set up the shared-memory exchange (gradients, the per-step agreement), sized for all
        of ``algorithm``'s parameters, if every rank can take part (a collective; see
        :class:`SharedMemoryExchange`)."""
        self.close()
        if self.device.type != "cpu":
            return
        parameters = list(algorithm.parameters())
        widest = max((p.element_size() for p in parameters), default=4)
        capacity = sum(p.numel() for p in parameters) * widest
        self._local_exchange = SharedMemoryExchange.open(capacity, self.timeout_s, recorded_failure)

    def _load_reporters_state(self, algorithm: "Algorithm") -> None:
        """Load rank 0's ``algorithm.state_dict()`` on the other ranks (sent serialised, and
        loaded onto this rank's device)."""
        payload = None
        if self.is_reporting:
            serialised = io.BytesIO()
            torch.save(algorithm.state_dict(), serialised)
            payload = serialised.getvalue()
        payload = self.decision_of_reporter(payload)
        if not self.is_reporting:
            assert payload is not None
            state = torch.load(io.BytesIO(payload), map_location=self.device, weights_only=False)
            algorithm.load_state_dict(state)

    def _all_gather(self, local: torch.Tensor) -> torch.Tensor:
        """``local`` (a CPU tensor) of every rank, stacked by rank (on the CPU)."""
        if self._local_exchange is not None:
            stacked = self._local_exchange.all_gather(local)
            if stacked is not None:
                return stacked
        on_device = local.to(self.device)
        gathered = [torch.empty_like(on_device) for _ in range(self._world_size)]
        dist.all_gather(gathered, on_device)
        return torch.stack(gathered).cpu()

    def _running_stats(self) -> list[RunningMeanStd]:
        """The statistics kept equal, in the same order on every rank: the algorithm's
        (return scaling), then the training envs' observation statistics (per key, sorted, for
        dict observations)."""
        found = [getattr(owner, name) for owner, name in self._stats_locations]
        norm_env = _obs_norm_wrapper(self._training_envs)
        if norm_env is not None:
            obs_rms = norm_env.get_obs_rms()
            if isinstance(obs_rms, dict):
                found.extend(obs_rms[key] for key in sorted(obs_rms))
            else:
                found.append(obs_rms)
        return found


_EMPTY = Moments(0, np.zeros(()), np.zeros(()), np.dtype(np.float64))

_current: RankGroup = SINGLE_PROCESS


def current_rank_group() -> RankGroup:
    """This process's rank group: the active :class:`DataParallel`, else :data:`SINGLE_PROCESS`."""
    return _current


def set_current_rank_group(group: RankGroup) -> None:
    """Make ``group`` the rank group that trainers and optimizers created from now on use."""
    global _current
    _current = group


def average_gradients(optimizer: torch.optim.Optimizer) -> None:
    """Average ``optimizer``'s gradients over the ranks of a data-parallel run (a no-op in a
    single process); called right before every optimizer step."""
    group = _current
    if isinstance(group, DataParallel):
        group.average_gradients(optimizer)


def differing_config_keys(configs: Sequence[Mapping[str, str]]) -> list[str]:
    """``"'key': rank 0 has X, rank 1 has Y"`` for each key whose value is not the same on
    every rank (or that only some ranks have), in key order."""
    keys = sorted(set().union(*configs))
    problems = []
    for key in keys:
        values = [config.get(key, "<missing>") for config in configs]
        if len(set(values)) > 1:
            by_rank = ", ".join(f"rank {r} has {value}" for r, value in enumerate(values))
            problems.append(f"{key!r}: {by_rank}")
    return problems


def _running_stats_locations(algorithm: nn.Module) -> list[tuple[object, str]]:
    """Where the algorithm's ``RunningMeanStd`` are: (owner, attribute name) of every such
    attribute of its modules and of their plain helper objects (e.g. REINFORCE's return
    computation), in module order.

    Found once per :meth:`DataParallel.attach` (walking every module takes longer than an
    off-policy gradient step's exchange) and read at every merge, so statistics an owner
    replaces (say, by loading a state) are still the ones merged.
    """
    found: list[tuple[object, str]] = []
    for module in algorithm.modules():
        for name, value in vars(module).items():
            if isinstance(value, RunningMeanStd):
                found.append((module, name))
            elif _is_plain_helper(value):
                found.extend(
                    (value, inner)
                    for inner, stats in vars(value).items()
                    if isinstance(stats, RunningMeanStd)
                )
    return found


def _is_plain_helper(value: object) -> bool:
    return (
        hasattr(value, "__dict__")
        and not isinstance(value, nn.Module | torch.Tensor | type)
        and type(value).__module__.startswith("tianshou.algorithm")
    )


def _obs_norm_wrapper(envs: BaseVectorEnv | None) -> VectorEnvNormObs | None:
    """The observation-normalising wrapper in ``envs``' wrapper chain, if there is one."""
    while isinstance(envs, VectorEnvWrapper):
        if isinstance(envs, VectorEnvNormObs):
            return envs
        envs = envs.venv
    return None
