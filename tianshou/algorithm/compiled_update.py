"""The opt-in compiled update: ``torch.compile`` on the tensor work of an algorithm's update.

An algorithm that supports it (SAC, TD3, DQN, PPO) writes the differentiable part of each gradient
step -- the networks' forward passes and the loss -- as a function of tensors only, and runs it
through an :class:`UpdateCompiler` once :meth:`~tianshou.algorithm.Algorithm.compile_update`
switched it on. ``torch.compile`` turns such a function into one graph; its backward pass is
compiled along with it (AOTAutograd). What stays eager is what must see every step exactly as
the eager path does: the NaN/inf guard before each optimizer step, the optimizer step itself
(already one fused kernel with :class:`~tianshou.algorithm.optim.AdamOptimizerFactory`),
gradient clipping, the Polyak or periodic target updates and the entropy coefficient's step.
Random draws (SAC's reparameterisation noise, TD3's target smoothing) are made eagerly and
passed in, so the compiled update consumes the global random stream as the eager one does.

A compiled graph is specialised to the shapes, dtypes and devices of its inputs. Each new
combination (e.g. the smaller last minibatch of an epoch) is compiled once, up to ``max_shapes``
per function; beyond that the function runs eagerly for the new shapes, and a log line says
so. Every compilation is logged at INFO level with the seconds it took, which are summed in
:attr:`UpdateCompiler.compile_seconds`.

On one CPU thread, compiling pays for PPO's minibatch updates (1.2-1.3 times as fast) but not
for SAC, TD3 and DQN, whose updates are dominated by matrix products that compiled code calls
just as eager code does; on a GPU it pays for all four, most with CUDA graphs (see
``docs/compile.md`` for the measured figures, ``benchmark/update_rate_compiled.py`` for the
benchmark). The switch is off by default.
"""

import logging
import time
from collections.abc import Callable, Hashable
from typing import Any, Literal, TypeVar

import numpy as np
import torch
from torch import nn
from torch.utils._pytree import tree_map

log = logging.getLogger(__name__)

T = TypeVar("T")

CompileMode = Literal["default", "max-autotune"]
"""How hard inductor optimises: ``"default"``, or ``"max-autotune"`` (benchmarks kernel
choices while compiling; much longer compile times)."""

_TORCH_MODES: dict[tuple[str, bool], str] = {
    ("default", False): "default",
    ("default", True): "reduce-overhead",
    ("max-autotune", False): "max-autotune-no-cudagraphs",
    ("max-autotune", True): "max-autotune",
}


class UpdateCompiler:
    """Runs the tensor functions of an algorithm's update through ``torch.compile``.

    Created by :meth:`~tianshou.algorithm.Algorithm.compile_update`; the algorithm calls it as
    ``compiler(part, fn, *args)`` in place of ``fn(*args)``.

    :param owner: the algorithm's name, for log lines and errors.
    :param parameters: the algorithm's parameters, whose devices ``cuda_graphs`` checks.
    :param mode: inductor's optimisation level (see :data:`CompileMode`).
    :param cuda_graphs: also capture the compiled graphs as CUDA graphs, which removes the
        per-kernel launch cost on a GPU; needs every parameter on a CUDA device.
    :param backend: the ``torch.compile`` backend; ``"inductor"`` generates code, others (e.g.
        ``"aot_eager"``, which only traces) are for debugging and take neither ``mode`` nor
        ``cuda_graphs``.
    :param max_shapes: input signatures (shapes, dtypes, devices) compiled per function; later
        new signatures run eagerly.
    :raises ValueError: for an unknown mode, ``cuda_graphs`` without CUDA parameters, options a
        non-inductor backend does not take, or ``max_shapes < 1``.
    """

    def __init__(
        self,
        owner: str,
        parameters: list[nn.Parameter],
        *,
        mode: CompileMode = "default",
        cuda_graphs: bool = False,
        backend: str = "inductor",
        max_shapes: int = 4,
    ) -> None:
        if mode not in ("default", "max-autotune"):
            raise ValueError(f"mode must be 'default' or 'max-autotune', got {mode!r}")
        if max_shapes < 1:
            raise ValueError(f"max_shapes must be a positive int, got {max_shapes}")
        if backend != "inductor" and (mode != "default" or cuda_graphs):
            raise ValueError(
                f"mode and cuda_graphs are options of the 'inductor' backend, not of {backend!r}"
            )
        if cuda_graphs:
            devices = sorted({p.device.type for p in parameters} - {"cuda"})
            if devices or not parameters:
                raise ValueError(
                    f"cuda_graphs=True needs {owner}'s parameters on a CUDA device, but some are "
                    f"on {devices or 'no device (no parameters)'}; move the algorithm with "
                    ".to('cuda') first, or compile without CUDA graphs"
                )
        reference = parameters[0] if parameters else torch.empty(0)
        self.device = reference.device
        """The device of the algorithm's (first) parameter, where the step inputs are put."""
        self.dtype = reference.dtype
        """The dtype of that parameter, that of the networks' outputs and of the noise drawn."""
        self.owner = owner
        self.mode = mode
        self.cuda_graphs = cuda_graphs
        self.backend = backend
        self.max_shapes = max_shapes
        self.compile_seconds = 0.0
        """Seconds spent in the first call of each compiled signature (compiling, plus one run)."""
        self._compiled: dict[str, Callable[..., Any]] = {}
        self._signatures: dict[str, set[Hashable]] = {}
        self._eager_parts: set[str] = set()

    @property
    def num_compiled(self) -> int:
        """How many (function, input signature) graphs have been compiled so far."""
        return sum(len(signatures) for signatures in self._signatures.values())

    def standard_normal(self, *shape: int) -> torch.Tensor:
        """A standard-normal draw of ``shape`` with the parameters' dtype and device: what
        ``torch.randn_like`` of a network output draws, from the same global random stream."""
        return torch.randn(shape, dtype=self.dtype, device=self.device)

    def __call__(self, part: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)``, run by the graph compiled for ``part`` and the signature of ``args``.

        :param part: the name of the update step ``fn`` computes (e.g. ``"critics"``); one
            compiled function is kept per name, so ``fn`` must be the same code on every call.
        :param fn: a function of tensors (and constants) returning tensors.
        :param args: its arguments; tensors, None, and numbers that stay fixed across calls
            (a new value of a Python number recompiles).
        """
        signature = _signature(args)
        seen = self._signatures.setdefault(part, set())
        if signature not in seen:
            if len(seen) >= self.max_shapes:
                if part not in self._eager_parts:
                    self._eager_parts.add(part)
                    log.warning(
                        "%s: %s already has %d compiled input signatures; new ones (now %s) "
                        "run eagerly (raise max_shapes in compile_update to compile them)",
                        self.owner,
                        part,
                        self.max_shapes,
                        signature,
                    )
                return fn(*args)
            start = time.perf_counter()
            result = self._run(part, fn, args)
            elapsed = time.perf_counter() - start
            seen.add(signature)
            self.compile_seconds += elapsed
            log.info(
                "%s: compiled the %s step for inputs %s in %.2f s",
                self.owner,
                part,
                signature,
                elapsed,
            )
            return result
        return self._run(part, fn, args)

    def _run(self, part: str, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        compiled = self._compiled.get(part)
        if compiled is None:
            compiled = self._compiled[part] = torch.compile(
                fn,
                dynamic=False,
                backend=self.backend,
                mode=_TORCH_MODES[(self.mode, self.cuda_graphs)]
                if self.backend == "inductor"
                else None,
            )
        if not self.cuda_graphs:
            return compiled(*args)
        # a CUDA graph's outputs live in memory its next replay overwrites: start a new step and
        # keep copies, so tensors an update holds on to (TD errors for priorities) stay valid
        torch.compiler.cudagraph_mark_step_begin()
        return tree_map(_clone_tensor, compiled(*args))

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and deep-copied without the compiled functions, which are recompiled."""
        state = dict(self.__dict__)
        state["_compiled"] = {}
        state["_signatures"] = {}
        state["_eager_parts"] = set()
        return state


def is_array(value: Any) -> bool:
    """Whether ``value`` (e.g. a batch's observations) is an array or tensor, which the
    compiled update steps take; others (dict observations as a Batch) are updated eagerly."""
    return isinstance(value, np.ndarray | torch.Tensor)


def _signature(args: tuple[Any, ...]) -> Hashable:
    """What a compiled graph is specialised to: each tensor's shape, dtype, device and whether
    it requires grad; other arguments by value."""
    return tuple(
        (tuple(a.shape), a.dtype, a.device.type, a.requires_grad)
        if isinstance(a, torch.Tensor)
        else a
        for a in args
    )


def _clone_tensor(value: T) -> T:
    return value.clone() if isinstance(value, torch.Tensor) else value  # type: ignore[return-value]


__all__ = ["CompileMode", "UpdateCompiler", "is_array"]
