"""The form in which recurrent policies store their hidden states in the replay buffer.

The recurrent policies (:mod:`~tianshou.algorithm.modelfree.recurrent_dqn`,
:mod:`~tianshou.algorithm.modelfree.recurrent_ppo`,
:mod:`~tianshou.algorithm.modelfree.recurrent_sac`) store the state every acting step started
from under ``policy.state_in``, as a Batch of numpy arrays, so that an update can replay a
sequence from where the collector was.
"""

from collections.abc import Mapping
from typing import Any

import torch

from tianshou.data.batch import Batch, batch_of_parsed_values
from tianshou.data.utils.converter import to_numpy


def numpy_state(state: Mapping[str, Any] | Batch) -> Batch:
    """A (nested) recurrent state as a Batch of numpy arrays: tensors are converted (sharing
    memory when they are on the CPU), arrays pass through.

    Built directly rather than through ``Batch(...)``/``to_numpy``, whose generic parsing costs
    more than the rest of an acting step of a small recurrent policy.
    """
    converted: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, torch.Tensor):
            converted[key] = value.numpy(force=True)
        elif isinstance(value, Mapping | Batch):
            converted[key] = numpy_state(value)
        else:
            converted[key] = to_numpy(value)
    return batch_of_parsed_values(converted)
