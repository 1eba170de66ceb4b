"""The process-wide random generators a training run draws from, captured and restored as one
value, so that several runs can take turns in one process and each draws exactly the numbers it
would draw alone (the seeds of a search trained in lockstep, see
:mod:`tianshou.highlevel.hpo.seed_runs`).

A run seeds Python's ``random``, numpy's global generator and torch's generators when it starts
(:meth:`~tianshou.highlevel.experiment.Experiment.create_experiment_world`) and draws from them
throughout: minibatch shuffling (numpy), action sampling and network initialisation (torch on the
CPU, or on the device the networks live on), exploration noise (numpy). Generators a run owns,
such as a replay buffer's or an environment's, need no saving: they belong to that run's objects
and no other run draws from them.
"""

import random
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import torch


@dataclass(frozen=True)
class GlobalRandomStates:
    """The states of Python's ``random``, numpy's global generator, torch's CPU generator and,
    when CUDA is available, the generator of every CUDA device.

    >>> states = GlobalRandomStates.capture()
    >>> first = np.random.random(), random.random(), torch.rand(1).item()
    >>> states.restore()
    >>> first == (np.random.random(), random.random(), torch.rand(1).item())
    True

    :param python: the state of Python's ``random`` module.
    :param numpy: the state of numpy's global generator (``np.random``).
    :param torch_cpu: the state of torch's CPU generator.
    :param torch_cuda: the states of the CUDA devices' generators, by device index (empty when
        CUDA is not available).
    """

    python: tuple[Any, ...]
    numpy: tuple[Any, ...] | dict[str, Any]
    torch_cpu: torch.Tensor
    torch_cuda: tuple[torch.Tensor, ...] = ()

    @classmethod
    def capture(cls) -> Self:
        """The generators' current states. With CUDA available this initialises CUDA (as
        ``torch.random.fork_rng`` does): a device's generator seeded but not yet initialised has
        no state to read, and the seed a run set would otherwise be lost to the next run's."""
        cuda = tuple(torch.cuda.get_rng_state_all()) if torch.cuda.is_available() else ()
        return cls(
            python=random.getstate(),
            numpy=np.random.get_state(),
            torch_cpu=torch.get_rng_state(),
            torch_cuda=cuda,
        )

    def restore(self) -> None:
        """Set every generator to its captured state (the CUDA ones only if captured)."""
        random.setstate(self.python)
        np.random.set_state(self.numpy)
        torch.set_rng_state(self.torch_cpu)
        if self.torch_cuda:
            torch.cuda.set_rng_state_all(self.torch_cuda)
