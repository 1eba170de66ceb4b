"""The core abstractions: a ``Policy`` maps observations to actions, an ``Algorithm`` trains one.

An algorithm's update is a template: sample from the buffer, ``_preprocess_batch`` (returns,
advantages, TD targets), ``_update_with_batch`` (the gradient steps, in train mode),
``_postprocess_batch`` (e.g. new priorities), then one step of every learning-rate scheduler.
Subclasses fill in the hooks; :class:`OnPolicyAlgorithm`, :class:`OffPolicyAlgorithm` and
:class:`OfflineAlgorithm` fix how the buffer is sampled and which trainer runs them.

Every ``update`` refuses an empty buffer (``ValueError``: collect before updating), and every
optimizer step a NaN or infinite loss (``FloatingPointError``, the parameters left untouched).
"""

import logging
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import torch
from torch import nn
from torch.optim.lr_scheduler import LRScheduler

from tianshou.algorithm import _returns
from tianshou.algorithm._checkpoint_extras import (
    EXTRA_STATE_METADATA_KEY,
    ExtraState,
    extra_state,
    is_extra_state_key,
    load_extra_state,
    pop_extra_state,
    to_entries,
    to_metadata,
)
from tianshou.algorithm._lagged_mixins import (
    LaggedNetworkAlgorithmMixin,
    LaggedNetworkFullUpdateAlgorithmMixin,
    LaggedNetworkPolyakUpdateAlgorithmMixin,
)
from tianshou.algorithm._policy import (
    ACTION_BOUND_METHODS,
    ActionBoundMethod,
    Policy,
    PolicyState,
    RandomActionPolicy,
)
from tianshou.algorithm._returns import episode_mc_return_to_go
from tianshou.algorithm._training_stats import TrainingStats, TrainingStatsWrapper
from tianshou.algorithm._update_helpers import clear_grads, clip_grad_norm, finite_loss_values
from tianshou.algorithm.compiled_update import CompileMode, UpdateCompiler
from tianshou.algorithm.optim import OptimizerFactory, ParamSource, collect_parameters
from tianshou.data.batch import Batch
from tianshou.data.buffer.buffer_base import ReplayBuffer
from tianshou.data.buffer.prio import PrioritizedReplayBuffer
from tianshou.distributed.rank_group import average_gradients
from tianshou.utils.determinism import TraceLogger, torch_param_hash

if TYPE_CHECKING:
    from tianshou.data.stats import InfoStats
    from tianshou.trainer import (
        OfflineTrainer,
        OfflineTrainerParams,
        OffPolicyTrainer,
        OffPolicyTrainerParams,
        OnPolicyTrainer,
        OnPolicyTrainerParams,
        Trainer,
        TrainerParams,
    )

log = logging.getLogger(__name__)

TPolicy = TypeVar("TPolicy", bound=Policy)
TTrainerParams = TypeVar("TTrainerParams", bound="TrainerParams")

OPTIMIZERS_STATE_KEY = "_optimizers"
"""The ``Algorithm.state_dict()`` entry holding the optimizers' states."""

LR_SCHEDULER_STATE_KEY = "lr_scheduler"
"""The entry of an optimizer's state (in ``"_optimizers"``) holding its scheduler's state."""


class Algorithm(nn.Module, Generic[TPolicy, TTrainerParams], ABC):
    """How a policy learns: owns the policy, the other trained networks and their optimizers.

    Subclasses create optimizers with :meth:`_create_optimizer` (so that :meth:`state_dict`
    checkpoints them) and implement ``_update_with_batch``; see the module docstring for the
    order of the hooks.

    :param policy: the policy this algorithm trains.
    """

    _checkpointed_counters: tuple[str, ...] = ()
    """Names of integer attributes counting updates that :meth:`state_dict` saves (e.g. the count
    that decides when a target network is copied), so that a resumed run keeps their phase."""

    class Optimizer:
        """A torch optimizer bound to the parameters it trains, with optional gradient clipping.

        :param optim: the torch optimizer.
        :param module: what ``optim`` trains (a module, or a list of modules/parameters); its
            parameters are the ones whose gradient norm is clipped.
        :param max_grad_norm: clip the global gradient norm to this value before each step
            (None: no clipping).
        """

        def __init__(
            self,
            optim: torch.optim.Optimizer,
            module: ParamSource,
            max_grad_norm: float | None = None,
        ) -> None:
            if max_grad_norm is not None and max_grad_norm <= 0:
                raise ValueError(f"max_grad_norm must be positive or None, got {max_grad_norm}")
            self._optim = optim
            self._module = module
            self._max_grad_norm = max_grad_norm
            self._params = collect_parameters(module) if max_grad_norm is not None else []
            name = (
                type(module).__name__
                if isinstance(module, nn.Module)
                else "[" + ", ".join(type(m).__name__ for m in module) + "]"
            )
            self._context = f"the optimizer of {name}"
            self._lr_scheduler: LRScheduler | None = None  # set by Algorithm._create_optimizer

        @property
        def torch_optimizer(self) -> torch.optim.Optimizer:
            """The wrapped torch optimizer (e.g. to inspect its ``param_groups``)."""
            return self._optim

        def step(
            self, loss: torch.Tensor, retain_graph: bool | None = None, create_graph: bool = False
        ) -> None:
            """Zero the gradients, back-propagate ``loss``, clip, and take an optimizer step.

            :param loss: the scalar loss to minimise.
            :param retain_graph: keep the autograd graph for another backward pass.
            :param create_graph: build a graph of the gradients (higher-order derivatives).
            :raises FloatingPointError: if ``loss`` is NaN or infinite; nothing is changed then.
            """
            finite_loss_values(self._context, loss=loss)
            self._backward_and_step(loss, retain_graph, create_graph)

        def step_with_loss_values(self, loss: torch.Tensor, **parts: torch.Tensor) -> list[float]:
            """:meth:`step`, returning ``loss`` and its ``parts`` as floats for the training stats.

            One device sync reads and checks them all, so an update that reports its losses
            syncs once per gradient step; a NaN/inf error names the parts, showing where the
            loss broke.

            :param loss: the scalar loss to minimise.
            :param parts: the loss's components (scalar tensors) by name, e.g. ``vf_loss``.
            :return: ``[loss, *parts]`` as floats, in that order.
            :raises FloatingPointError: if any of them is NaN or infinite; nothing is changed then.
            """
            values = finite_loss_values(self._context, loss=loss, **parts)
            self._backward_and_step(loss, None, False)
            return values

        def _backward_and_step(
            self, loss: torch.Tensor, retain_graph: bool | None, create_graph: bool
        ) -> None:
            clear_grads(self._optim)
            loss.backward(retain_graph=retain_graph, create_graph=create_graph)
            self._clip_and_step()

        def _clip_and_step(self) -> None:
            """Average the gradients already computed over the ranks of a data-parallel run,
            clip them (with ``max_grad_norm``) and step."""
            average_gradients(self._optim)
            if self._max_grad_norm is not None:
                clip_grad_norm(self._params, self._max_grad_norm)
            self._optim.step()

        def state_dict(self) -> dict[str, Any]:
            """The torch optimizer's state and, under ``"lr_scheduler"``, the state of the
            learning-rate scheduler created with it, so that a resumed run goes on with the
            schedule where it was (a fresh scheduler would start the decay over)."""
            state = self._optim.state_dict()
            if self._lr_scheduler is not None:
                state[LR_SCHEDULER_STATE_KEY] = self._lr_scheduler.state_dict()
            return state

        def load_state_dict(self, state_dict: dict[str, Any]) -> None:
            """Restore :meth:`state_dict`; a state without a scheduler entry (from before
            schedulers were saved, or from the published library) leaves the scheduler as is."""
            state = dict(state_dict)
            scheduler_state = state.pop(LR_SCHEDULER_STATE_KEY, None)
            self._optim.load_state_dict(state)
            if self._lr_scheduler is not None and scheduler_state is not None:
                self._lr_scheduler.load_state_dict(scheduler_state)

    def __init__(self, *, policy: TPolicy) -> None:
        super().__init__()
        self.policy: TPolicy = policy
        self.lr_schedulers: list[LRScheduler] = []
        self._optimizers: list[Algorithm.Optimizer] = []
        self._mode_snapshots: dict[bool, tuple[list[nn.Module], list[bool]]] = {}
        self._update_compiler: UpdateCompiler | None = None

    def _create_optimizer(
        self,
        module: ParamSource,
        factory: OptimizerFactory,
        max_grad_norm: float | None = None,
    ) -> "Algorithm.Optimizer":
        """Create (and register for checkpointing) an optimizer of ``module``'s parameters.

        :param module: a module, or a list of modules and/or parameters to train together.
        :param factory: creates the torch optimizer and, optionally, an LR scheduler, which is
            added to :attr:`lr_schedulers`, stepped once per :meth:`update`, and checkpointed
            with the optimizer.
        :param max_grad_norm: clip the gradient norm to this value before each step.
        """
        optimizer, lr_scheduler = factory.create_instances(module)
        if lr_scheduler is not None:
            self.lr_schedulers.append(lr_scheduler)
        wrapped = Algorithm.Optimizer(optimizer, module, max_grad_norm=max_grad_norm)
        wrapped._lr_scheduler = lr_scheduler
        self._optimizers.append(wrapped)
        return wrapped

    def compile_update(
        self,
        mode: CompileMode = "default",
        *,
        cuda_graphs: bool = False,
        backend: str = "inductor",
        max_shapes: int = 4,
    ) -> UpdateCompiler:
        """From now on, run the update's forward passes, losses and backward passes compiled.

        Off by default. Supported by SAC, TD3, DQN and PPO (not by subclasses, which may
        change the losses). The compiled update computes the same losses and parameters as the
        eager one within float tolerance, consumes the random stream in the same order, and
        leaves the NaN/inf guard, the optimizer steps (with gradient clipping), the
        target-network updates and the checkpoints (``state_dict``) as they are. The first
        update of each input shape compiles (seconds to a minute; logged, and summed in the
        returned compiler's ``compile_seconds``); the networks are called with tensor
        observations and without ``info``, and updates on observations that are not arrays
        (dict observations, masks) stay eager.

        Where it pays (``benchmark/update_rate_compiled.py``, see ``docs/compile.md``): on one CPU
        thread, PPO's minibatch updates ran 1.2-1.3 times as fast compiled (64x64 and 256x256
        networks), while SAC, TD3 and DQN ran at 0.89-1.01 times the eager rate, so for them it
        does not pay on the CPU. On an H200 GPU compiling gave 1.0-1.7 times the eager rate,
        and compiling with ``cuda_graphs`` 1.3-1.9 times.

        :param mode: inductor's optimisation level, ``"default"`` or ``"max-autotune"``.
        :param cuda_graphs: also capture CUDA graphs (``torch.compile``'s ``reduce-overhead``);
            needs the algorithm's parameters on a CUDA device.
        :param backend: the ``torch.compile`` backend (``"aot_eager"`` traces without
            generating code, for debugging).
        :param max_shapes: input shapes compiled per update step; updates with further shapes
            run eagerly.
        :return: the compiler, which reports ``compile_seconds`` and ``num_compiled``.
        :raises NotImplementedError: for an algorithm without a compiled update.
        :raises ValueError: for invalid options (see :class:`UpdateCompiler`).
        """
        cls = type(self)
        # declared by each class itself: a subclass may change the update's losses
        if not vars(cls).get("_supports_compiled_update", False):
            raise NotImplementedError(
                f"{cls.__name__} has no compiled update; compile_update supports SAC, TD3, DQN "
                "and PPO"
            )
        self._update_compiler = UpdateCompiler(
            cls.__name__,
            list(self.parameters()),
            mode=mode,
            cuda_graphs=cuda_graphs,
            backend=backend,
            max_shapes=max_shapes,
        )
        return self._update_compiler

    # ------------------------------------------------------------------ checkpoints
    def state_dict(  # type: ignore[override]
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        """The module's state plus, under ``"_optimizers"``, the states of its optimizers: the
        published library's keys, so the checkpoint also loads (``strict=True``) into code
        written for it.

        What the next updates depend on beyond that, the running statistics (e.g. those of
        return scaling) and update counters (e.g. DQN's, which times the target network's
        copies), rides in the state dict's metadata (``result._metadata``, kept by
        ``torch.save``), so that a resumed run of ours continues where it was. Given a
        ``destination`` without metadata, they are added as ``"_running_stats.*"`` and
        ``"_counters.*"`` entries instead.
        """
        result = super().state_dict(
            *args, destination=destination, prefix=prefix, keep_vars=keep_vars
        )
        result[prefix + OPTIMIZERS_STATE_KEY] = [o.state_dict() for o in self._optimizers]
        extras = extra_state(self)
        if extras.running_stats or extras.counters:
            metadata = getattr(result, "_metadata", None)
            if metadata is not None and prefix[:-1] in metadata:
                metadata[prefix[:-1]][EXTRA_STATE_METADATA_KEY] = to_metadata(extras)
            else:
                result.update(to_entries(extras, prefix))
        return result

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """Restore a checkpoint made by :meth:`state_dict` of an algorithm of the same build.

        Everything is validated before anything is changed, so a checkpoint of another
        algorithm (or one saved without optimizer states) fails with a clear message and leaves
        this algorithm untouched. ``state_dict`` itself is not modified. A checkpoint without
        running statistics or counters (an older one, or the published library's) leaves them
        as they are.

        :raises RuntimeError: if ``"_optimizers"`` is missing, if the optimizers or their
            parameter groups do not match, if the running statistics or counters do not, or
            (``strict``) if the module keys differ.
        """
        metadata = getattr(state_dict, "_metadata", None)
        state: dict[str, Any] = OrderedDict(state_dict)
        if metadata is not None:  # the modules' versions, which torch's loading reads
            state._metadata = metadata  # type: ignore[attr-defined]
        optim_states = self._pop_optimizer_states(state)
        extras = self._pop_extra_states(state, metadata or {})
        self._check_module_state(state, strict)
        result = super().load_state_dict(state, strict=strict, assign=assign)
        for optimizers, states in optim_states:
            for optim, optim_state in zip(optimizers, states, strict=True):
                optim.load_state_dict(optim_state)
        for module, extra in extras:
            load_extra_state(module, extra)
        return result

    def _pop_extra_states(
        self, state: dict[str, Any], metadata: Mapping[str, Any]
    ) -> list[tuple["Algorithm", ExtraState]]:
        result = []
        for name, module in self.named_modules():
            if isinstance(module, Algorithm):
                prefix = f"{name}." if name else ""
                extras = pop_extra_state(module, state, prefix, metadata.get(name))
                result.append((module, extras))
        return result

    def _pop_optimizer_states(
        self, state: dict[str, Any]
    ) -> list[tuple[list["Algorithm.Optimizer"], list[dict[str, Any]]]]:
        result = []
        for name, module in self.named_modules():
            if not isinstance(module, Algorithm):
                continue
            key = f"{name}.{OPTIMIZERS_STATE_KEY}" if name else OPTIMIZERS_STATE_KEY
            if key not in state:
                raise RuntimeError(
                    f"the state dict has no {key!r} entry with the optimizer states; it was not "
                    f"made by {type(module).__name__}.state_dict() (a plain module state dict?)"
                )
            states = list(state.pop(key))
            _check_optimizer_states(type(module).__name__, module._optimizers, states)
            result.append((module._optimizers, states))
        return result

    def _check_module_state(self, state: dict[str, Any], strict: bool) -> None:
        own = {
            k: v
            for k, v in super().state_dict().items()
            if not k.endswith(OPTIMIZERS_STATE_KEY) and not is_extra_state_key(k)
        }
        problems = []
        if strict:
            missing = sorted(own.keys() - state.keys())
            unexpected = sorted(state.keys() - own.keys())
            if missing:
                problems.append(f"missing keys {_first(missing)}")
            if unexpected:
                problems.append(f"unexpected keys {_first(unexpected)}")
        shapes = [
            f"{k}: {tuple(state[k].shape)} instead of {tuple(v.shape)}"
            for k, v in own.items()
            if isinstance(state.get(k), torch.Tensor) and state[k].shape != v.shape
        ]
        if shapes:
            problems.append(f"shape mismatches {_first(shapes)}")
        if problems:
            raise RuntimeError(
                f"the state dict does not fit this {type(self).__name__} (a checkpoint of another "
                f"algorithm or network size?): {'; '.join(problems)}"
            )

    # ------------------------------------------------------------------ update hooks
    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        """Add what the update needs (returns, advantages, targets) to the sampled ``batch``.

        :param batch: the sampled transitions.
        :param buffer: the buffer they come from (for looking at neighbouring transitions).
        :param indices: their buffer indices.
        """
        return batch

    def _postprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> None:
        """Feed results back into the buffer after the update.

        By default, a prioritized buffer gets ``batch.weight`` (which algorithms overwrite with
        the new TD errors) as the new priorities of the sampled transitions.
        """
        if isinstance(buffer, PrioritizedReplayBuffer) and "weight" in batch.__dict__:
            buffer.update_weight(indices, batch.weight)

    def _step_lr_schedulers(self) -> None:
        for scheduler in self.lr_schedulers:
            scheduler.step()

    def _set_training_mode(self, mode: bool) -> None:
        """``self.train(mode)``, skipped if no sub-module changed its mode since the last switch.

        ``train`` walks the whole module tree through ``nn.Module.__setattr__`` (about 0.1 ms
        for SAC's networks, twice per update), while in steady training the modes never change;
        comparing against a snapshot of the modes the last switch left is ~50 times cheaper.
        """
        snapshot = self._mode_snapshots.get(mode)
        if snapshot is not None and [m.training for m in snapshot[0]] == snapshot[1]:
            return
        self.train(mode)
        modules = list(self.modules())
        self._mode_snapshots[mode] = (modules, [m.training for m in modules])

    def _update(
        self,
        buffer: ReplayBuffer | None,
        sample_size: int | None,
        update_with_batch: Callable[..., TrainingStats],
        **kwargs: Any,
    ) -> TrainingStats:
        if not self.policy.is_within_training_step:
            raise RuntimeError(
                f"{type(self).__name__}.update was called outside a training step; wrap it in "
                "`with policy_within_training_step(algorithm.policy):` (the trainers do this)"
            )
        if buffer is None:
            return TrainingStats()
        if len(buffer) == 0:
            raise ValueError(
                f"{type(self).__name__}.update got an empty buffer: collect before updating "
                "(e.g. collector.collect(n_step=...) with a collector writing to this buffer)"
            )
        start = time.perf_counter()
        batch, indices = buffer.sample(sample_size)
        batch = self._preprocess_batch(batch, buffer, indices)
        was_training = self.training
        self._set_training_mode(True)
        try:
            stats = update_with_batch(batch, **kwargs)
        finally:
            self._set_training_mode(was_training)
        self._postprocess_batch(batch, buffer, indices)
        self._step_lr_schedulers()
        TraceLogger.log(
            log, lambda: f"update on {len(indices)} samples: parameters {torch_param_hash(self)}"
        )
        stats.train_time = time.perf_counter() - start
        return stats

    # ------------------------------------------------------------------ training
    @abstractmethod
    def create_trainer(self, params: TTrainerParams) -> "Trainer":
        """Create the trainer that runs this algorithm with ``params``."""

    def run_training(self, params: TTrainerParams) -> "InfoStats":
        """Train with ``params`` (``create_trainer(params).run()``) and return the run's stats."""
        return self.create_trainer(params).run()

    # ------------------------------------------------------------------ returns
    @staticmethod
    def value_mask(buffer: ReplayBuffer, indices: np.ndarray) -> np.ndarray:
        """Whether the next state of each transition has a value (it is not terminal).

        Truncated transitions and those of still-running episodes keep their next state's value,
        so they are bootstrapped (partial-episode bootstrapping).
        """
        return _returns.value_mask(buffer, indices)

    @staticmethod
    def compute_episodic_return(
        batch: Batch,
        buffer: ReplayBuffer,
        indices: np.ndarray,
        v_s_: np.ndarray | torch.Tensor | None = None,
        v_s: np.ndarray | torch.Tensor | None = None,
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Returns and GAE advantages of a rollout (Monte-Carlo returns without ``v_s_``).

        The batch must hold whole stretches of episodes in chronological order, as
        ``buffer.sample(0)`` gives. The recursion stops at each terminated or truncated step and
        at the newest step of every still-running episode; ``v_s_`` is zeroed only where the
        episode terminated, so the other two cases bootstrap from the next state's value.

        :param batch: the transitions (``rew``, ``terminated``, ``truncated``).
        :param buffer: the buffer they come from.
        :param indices: their buffer indices.
        :param v_s_: value of each next observation; None for Monte-Carlo returns.
        :param v_s: value of each observation; by default ``v_s_`` shifted by one step.
        :param gamma: discount factor.
        :param gae_lambda: GAE's lambda; must be 1 without ``v_s_``.
        :return: ``(returns, advantages)``, float arrays of shape ``(len(batch),)``.
        """
        return _returns.episodic_return(batch, buffer, indices, v_s_, v_s, gamma, gae_lambda)

    @staticmethod
    def compute_nstep_return(
        batch: Batch,
        buffer: ReplayBuffer,
        indices: np.ndarray,
        target_q_fn: Callable[[ReplayBuffer, np.ndarray], torch.Tensor],
        gamma: float = 0.99,
        n_step: int = 1,
    ) -> Batch:
        """Set ``batch.returns`` to the n-step TD targets of the sampled transitions.

        From each index, up to ``n_step`` rewards of the same episode are summed; the sum
        stops at the first terminated, truncated or still-running step. The target then adds
        ``gamma ** k * Q(s_{t+k})`` for the ``k`` rewards summed, unless that last step
        terminated the episode.

        :param batch: the sampled transitions; gets ``returns`` (a tensor of shape
            ``(B, -1)`` with the dtype and device of the target values) and, if it has one, a
            ``weight`` tensor.
        :param buffer: the buffer they come from.
        :param indices: their buffer indices.
        :param target_q_fn: ``(buffer, indices) -> Q`` of the next observations at ``indices``,
            called under ``torch.no_grad()``.
        :param gamma: discount factor.
        :param n_step: number of rewards summed before bootstrapping.
        """
        return _returns.nstep_return(batch, buffer, indices, target_q_fn, gamma, n_step)


def step_jointly(optimizers: Sequence[Algorithm.Optimizer], loss: torch.Tensor) -> None:
    """Step ``optimizers`` from one backward pass of ``loss``, the sum of their own losses.

    For optimizers of disjoint parameters (twin critics), each parameter's gradient of the sum
    is its gradient of its own optimizer's loss, so this is one step of each on its own loss,
    with one backward pass instead of one per optimizer. Each clips with its ``max_grad_norm``.
    The caller checks first that the losses are finite and that no parameter is
    shared: a shared one would get the gradient of every loss.
    """
    for optimizer in optimizers:
        clear_grads(optimizer.torch_optimizer)
    loss.backward()
    for optimizer in optimizers:
        optimizer._clip_and_step()


def _first(items: list[str], count: int = 5) -> str:
    return str(items[:count]) + (f" and {len(items) - count} more" if len(items) > count else "")


def _check_optimizer_states(
    owner: str, optimizers: list["Algorithm.Optimizer"], states: list[dict[str, Any]]
) -> None:
    if len(states) != len(optimizers):
        raise RuntimeError(
            f"the state dict holds {len(states)} optimizer states but {owner} has "
            f"{len(optimizers)} optimizers (a checkpoint of another algorithm?)"
        )
    for position, (optim, state) in enumerate(zip(optimizers, states, strict=True)):
        groups = optim.torch_optimizer.param_groups
        saved = state.get("param_groups", [])
        if [len(g["params"]) for g in groups] != [len(g["params"]) for g in saved]:
            raise RuntimeError(
                f"optimizer #{position} of {owner} trains parameter groups of sizes "
                f"{[len(g['params']) for g in groups]}, the state dict has "
                f"{[len(g['params']) for g in saved]} (a checkpoint of another algorithm?)"
            )


class OnPolicyAlgorithm(Algorithm[TPolicy, "OnPolicyTrainerParams"], Generic[TPolicy], ABC):
    """An algorithm that learns from the data its current policy just collected.

    Each update uses the whole buffer in chronological order (the trainer clears it afterwards).
    """

    def create_trainer(self, params: "OnPolicyTrainerParams") -> "OnPolicyTrainer":
        from tianshou.trainer import OnPolicyTrainer

        return OnPolicyTrainer(self, params)

    @abstractmethod
    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> TrainingStats:
        """Learn from the whole rollout ``batch``.

        :param batch: the preprocessed rollout.
        :param batch_size: mini-batch size (None or 0: the whole rollout at once).
        :param repeat: passes over the rollout.
        """

    def update(self, buffer: ReplayBuffer, batch_size: int | None, repeat: int) -> TrainingStats:
        """One update on everything in ``buffer``, in mini-batches of ``batch_size``, ``repeat``
        times over. Must run inside ``policy_within_training_step``."""
        return self._update(
            buffer, 0, self._update_with_batch, batch_size=batch_size, repeat=repeat
        )


class OffPolicyAlgorithm(Algorithm[TPolicy, "OffPolicyTrainerParams"], Generic[TPolicy], ABC):
    """An algorithm that learns from transitions sampled from a replay buffer."""

    def create_trainer(self, params: "OffPolicyTrainerParams") -> "OffPolicyTrainer":
        from tianshou.trainer import OffPolicyTrainer

        return OffPolicyTrainer(self, params)

    @abstractmethod
    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        """One gradient update on the sampled, preprocessed ``batch``."""

    def update(self, buffer: ReplayBuffer, sample_size: int | None) -> TrainingStats:
        """One update on ``sample_size`` transitions drawn from ``buffer`` (0: all of them,
        None: as many random draws as stored). Must run inside ``policy_within_training_step``."""
        return self._update(buffer, sample_size, self._update_with_batch)


class OfflineAlgorithm(Algorithm[TPolicy, "OfflineTrainerParams"], Generic[TPolicy], ABC):
    """An algorithm that learns from a fixed data set, without collecting data itself."""

    def create_trainer(self, params: "OfflineTrainerParams") -> "OfflineTrainer":
        from tianshou.trainer import OfflineTrainer

        return OfflineTrainer(self, params)

    def process_buffer(self, buffer: ReplayBuffer) -> ReplayBuffer:
        """Prepare the data set once before training (e.g. add returns); identity by default."""
        return buffer

    @abstractmethod
    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        """One gradient update on the sampled, preprocessed ``batch``."""

    def update(self, buffer: ReplayBuffer, sample_size: int | None) -> TrainingStats:
        """One update on ``sample_size`` transitions drawn from ``buffer``. Must run inside
        ``policy_within_training_step``."""
        return self._update(buffer, sample_size, self._update_with_batch)


class OnPolicyWrapperAlgorithm(OnPolicyAlgorithm[TPolicy], Generic[TPolicy], ABC):
    """An on-policy algorithm that wraps another one and adds to its update (e.g. an intrinsic
    curiosity module). Pre- and post-processing are the wrapped algorithm's; the update runs the
    wrapped update, then :meth:`_wrapper_update_with_batch`.

    :param wrapped_algorithm: the algorithm whose policy is trained.
    """

    def __init__(self, wrapped_algorithm: OnPolicyAlgorithm[TPolicy]) -> None:
        super().__init__(policy=wrapped_algorithm.policy)
        self.wrapped_algorithm = wrapped_algorithm

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        return self.wrapped_algorithm._preprocess_batch(batch, buffer, indices)

    def _postprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> None:
        self.wrapped_algorithm._postprocess_batch(batch, buffer, indices)

    def _step_lr_schedulers(self) -> None:
        super()._step_lr_schedulers()
        self.wrapped_algorithm._step_lr_schedulers()

    def _update_with_batch(
        self, batch: Batch, batch_size: int | None, repeat: int
    ) -> TrainingStats:
        original_stats = self.wrapped_algorithm._update_with_batch(batch, batch_size, repeat)
        return self._wrapper_update_with_batch(batch, batch_size, repeat, original_stats)

    @abstractmethod
    def _wrapper_update_with_batch(
        self,
        batch: Batch,
        batch_size: int | None,
        repeat: int,
        original_stats: TrainingStats,
    ) -> TrainingStats:
        """The wrapper's own learning after the wrapped update (which gave ``original_stats``)."""


class OffPolicyWrapperAlgorithm(OffPolicyAlgorithm[TPolicy], Generic[TPolicy], ABC):
    """An off-policy algorithm that wraps another one and adds to its update; see
    :class:`OnPolicyWrapperAlgorithm`.

    :param wrapped_algorithm: the algorithm whose policy is trained.
    """

    def __init__(self, wrapped_algorithm: OffPolicyAlgorithm[TPolicy]) -> None:
        super().__init__(policy=wrapped_algorithm.policy)
        self.wrapped_algorithm = wrapped_algorithm

    def _preprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> Batch:
        return self.wrapped_algorithm._preprocess_batch(batch, buffer, indices)

    def _postprocess_batch(self, batch: Batch, buffer: ReplayBuffer, indices: np.ndarray) -> None:
        self.wrapped_algorithm._postprocess_batch(batch, buffer, indices)

    def _step_lr_schedulers(self) -> None:
        super()._step_lr_schedulers()
        self.wrapped_algorithm._step_lr_schedulers()

    def _update_with_batch(self, batch: Batch) -> TrainingStats:
        original_stats = self.wrapped_algorithm._update_with_batch(batch)
        return self._wrapper_update_with_batch(batch, original_stats)

    @abstractmethod
    def _wrapper_update_with_batch(
        self, batch: Batch, original_stats: TrainingStats
    ) -> TrainingStats:
        """The wrapper's own learning after the wrapped update (which gave ``original_stats``)."""


__all__ = [
    "ACTION_BOUND_METHODS",
    "ActionBoundMethod",
    "Algorithm",
    "LaggedNetworkAlgorithmMixin",
    "LaggedNetworkFullUpdateAlgorithmMixin",
    "LaggedNetworkPolyakUpdateAlgorithmMixin",
    "OffPolicyAlgorithm",
    "OffPolicyWrapperAlgorithm",
    "OfflineAlgorithm",
    "OnPolicyAlgorithm",
    "OnPolicyWrapperAlgorithm",
    "Policy",
    "PolicyState",
    "RandomActionPolicy",
    "TPolicy",
    "TTrainerParams",
    "TrainingStats",
    "TrainingStatsWrapper",
    "episode_mc_return_to_go",
]
