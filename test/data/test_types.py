"""Tests of tianshou.data.types: the published aliases and Protocols, checked against Batch."""

import inspect
import typing

import numpy as np
import torch

from tianshou.data import Batch
from tianshou.data.collector import (
    CollectActionBatchProtocol,
    CollectStepBatchProtocol,
    EpisodeBatchProtocol,
)
from tianshou.data.types import (
    BatchProtocol,
    ImitationBatchProtocol,
    ModelOutputBatchProtocol,
    RolloutBatchProtocol,
    TNestedDictValue,
    TObs,
)


def test_observation_aliases_cover_arrays_tensors_and_batches() -> None:
    members = typing.get_args(TObs)
    assert {np.ndarray, torch.Tensor, BatchProtocol} <= set(members)
    assert np.ndarray in typing.get_args(TNestedDictValue)


def test_collector_protocols_declare_the_collected_keys() -> None:
    assert {"act", "act_normalized", "policy_entry", "dist", "hidden_state"} <= set(
        typing.get_type_hints(CollectActionBatchProtocol)
    )
    assert RolloutBatchProtocol in CollectStepBatchProtocol.__mro__
    assert {"policy", "done", "obs_next"} <= set(typing.get_type_hints(CollectStepBatchProtocol))
    assert RolloutBatchProtocol in EpisodeBatchProtocol.__mro__
    assert ModelOutputBatchProtocol in ImitationBatchProtocol.__mro__
    assert isinstance(Batch(obs=np.zeros(2)), BatchProtocol)


def test_protocol_to_dict_takes_recurse_by_position_or_keyword() -> None:
    parameter = inspect.signature(BatchProtocol.to_dict).parameters["recurse"]
    assert parameter.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert parameter.default is True
    nested = Batch(sub=Batch(x=np.zeros(1)))
    assert isinstance(nested.to_dict(False)["sub"], Batch)
    assert isinstance(nested.to_dict(recurse=True)["sub"], dict)
